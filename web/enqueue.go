package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// enqueueForm is what the enqueue page's form holds, kept to show again
// when the job is refused.
type enqueueForm struct {
	Command, Queue, ID, Priority, MaxRetries, Timeout, RunAt, Env, Dir string
	Labels, After, UniqueKey, UniqueFor                                string
	Error, Field                                                       string
	Queues                                                             []string
}

// enqueuePage shows the form to enqueue a job (admin).
func (s *Server) enqueuePage(w http.ResponseWriter, r *http.Request) error {
	return s.renderEnqueue(w, r, http.StatusOK, enqueueForm{Queue: r.URL.Query().Get("queue")})
}

func (s *Server) renderEnqueue(w http.ResponseWriter, r *http.Request, status int, f enqueueForm) error {
	st, err := s.status(r.Context())
	if err != nil {
		return err
	}
	f.Queues = st.QueueNames()
	s.render(w, r, status, "enqueue", page{Title: "Enqueue a job", Nav: "jobs", Data: f})
	return nil
}

// enqueueAction enqueues the form's job through the same parser and checks
// as POST /api/v1/jobs and `queuectl enqueue`; a refused job shows the form
// again with the error at its field, and nothing is stored.
func (s *Server) enqueueAction(w http.ResponseWriter, r *http.Request) error {
	f := enqueueForm{}
	for name, dst := range map[string]*string{"command": &f.Command, "queue": &f.Queue, "id": &f.ID, "priority": &f.Priority,
		"max_retries": &f.MaxRetries, "timeout": &f.Timeout, "run_at": &f.RunAt, "env": &f.Env, "dir": &f.Dir,
		"labels": &f.Labels, "after": &f.After, "unique_key": &f.UniqueKey, "unique_for": &f.UniqueFor} {
		*dst = strings.TrimSpace(r.PostFormValue(name))
	}
	// Kept as typed, but a browser sends a textarea's line breaks as
	// CRLF: the shell would take each \r as part of its line's last word
	// ("cd /tmp\r" fails), so they go back to the \n that was typed.
	f.Command = strings.ReplaceAll(r.PostFormValue("command"), "\r\n", "\n")
	body, err := f.json()
	if err == nil {
		var added []*queue.Job
		if added, err = s.enqueue(r, body); err == nil {
			id, code := added[0].ID, "enqueued"
			if added[0].ExistingID != "" { // its unique key is held: nothing added; show the job that holds it
				id, code = added[0].ExistingID, "unique_held"
			}
			s.audit(r, "enqueue", id, nil)
			http.Redirect(w, r, "/jobs/"+url.PathEscape(id)+"?done="+code, http.StatusSeeOther)
			return nil
		}
	}
	s.audit(r, "enqueue", f.ID, err)
	ae := toAPIError(err)
	if ae.Status >= 500 {
		return err
	}
	f.Error, f.Field = ae.Message, ae.Field
	if ae.Code == codeDuplicate { // the id typed is taken
		f.Field = "id"
	}
	return s.renderEnqueue(w, r, ae.Status, f)
}

// json is the job object `queuectl enqueue` would take: empty fields are
// left out, numbers must be numbers, env and labels are KEY=VALUE lines,
// after is job ids separated by white space.
func (f enqueueForm) json() ([]byte, error) {
	m := map[string]any{"command": f.Command}
	for k, v := range map[string]string{"queue": f.Queue, "id": f.ID, "timeout": f.Timeout, "run_at": f.RunAt, "dir": f.Dir,
		"unique_key": f.UniqueKey, "unique_for": f.UniqueFor} {
		if v != "" {
			m[k] = v
		}
	}
	for k, v := range map[string]string{"priority": f.Priority, "max_retries": f.MaxRetries} {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, &view.SpecError{Field: k, Msg: k + " " + strconv.Quote(v) + ": must be a whole number"}
		}
		m[k] = n
	}
	for _, kv := range [][2]string{{"env", f.Env}, {"labels", f.Labels}} { // in order: the first bad one is marked
		if kv[1] == "" {
			continue
		}
		pairs, err := keyValueLines(kv[0], kv[1])
		if err != nil {
			return nil, err
		}
		m[kv[0]] = pairs
	}
	// Ids hold no white space, but may hold commas.
	if after := strings.Fields(f.After); len(after) > 0 {
		m["after"] = after
	}
	return json.Marshal(m)
}

// keyValueLines reads the KEY=VALUE lines of the form's field (blank
// lines skipped); a key given twice keeps its last value for env, and is
// refused for labels with two values (as --label refuses it).
func keyValueLines(field, text string) (map[string]string, error) {
	var items []string
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, &view.SpecError{Field: field, Msg: field + ": " + strconv.Quote(line) + " is not KEY=VALUE"}
		}
		out[k] = v
		items = append(items, line)
	}
	if field == "labels" {
		if _, err := queue.ParseLabels(items); err != nil {
			return nil, &view.SpecError{Field: field, Msg: invalidBecause(field, err).Message}
		}
	}
	return out, nil
}
