package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/spf13/cobra"
)

type enqueueOptions struct {
	file       string
	command    string
	id         string
	queue      string
	priority   int
	maxRetries int
	timeout    string
	runAt      string
	wait       bool // wait for the job and exit with its exit code
	follow     bool // with wait: stream its output live
	dir        string
	env        []string
	envFile    string
	labels     []string
	after      []string
	uniqueKey  string
	uniqueFor  string
}

func (a *app) enqueueCmd() *cobra.Command {
	var o enqueueOptions
	cmd := &cobra.Command{
		Use:   "enqueue [JSON]",
		Short: "Add jobs to the queue",
		Long: `Add a job, given as JSON or with flags, or many jobs from a JSON Lines file.

JSON fields: command (required), id, queue, priority, max_retries,
timeout (seconds or a duration such as "90s"), run_at (RFC 3339 time, or a
delay such as "+30s", "+5m", "+2h", "+1d"), env (object), dir, labels
(object), after (array of job ids), unique_key, unique_for (as timeout).
A job runs in the directory enqueue was called from unless dir (--dir)
names another; relative paths are taken from the current directory.
Prints each new job id on its own line.`,
		Example: `  queuectl enqueue '{"id":"job1","command":"sleep 2"}'
  queuectl enqueue --command 'echo hello' --queue reports --run-at +5m
  queuectl enqueue --command 'make test' --dir ~/src/app --env CI=1 --label team=web
  queuectl enqueue --file jobs.jsonl`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runEnqueue(cmd, args, &o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "read JSON Lines (or a JSON array) from a file (- for stdin): all jobs or none, streamed in chunks")
	f.StringVar(&o.command, "command", "", "shell command to run")
	f.StringVar(&o.id, "id", "", "job id (default: generated)")
	f.StringVar(&o.queue, "queue", "", "queue name (default \"default\")")
	f.IntVar(&o.priority, "priority", 0, "priority; higher runs first")
	f.IntVar(&o.maxRetries, "max-retries", 0, "retries after the first attempt (default: the queue's or config max-retries)")
	f.StringVar(&o.timeout, "timeout", "", "timeout, seconds or a duration such as 90s, or none (default: config timeout)")
	f.StringVar(&o.runAt, "run-at", "", "when to run: RFC 3339 time or a delay such as +30s")
	f.BoolVar(&o.wait, "wait", false, "wait for the job, print its output and exit with its exit code (the id goes to stderr)")
	f.BoolVar(&o.follow, "follow", false, "with --wait: print the output live, attempt by attempt")
	f.StringVar(&o.dir, "dir", "", "working directory (default: the current directory)")
	f.StringArrayVar(&o.env, "env", nil, "set a variable, KEY=VALUE (repeatable; wins over --env-file)")
	f.StringVar(&o.envFile, "env-file", "", "read variables from a file of KEY=VALUE lines (# comments)")
	f.StringArrayVar(&o.labels, "label", nil, "attach a label, key=value (repeatable)")
	f.StringArrayVar(&o.after, "after", nil, "run once the job with this id completed (repeatable)")
	f.StringVar(&o.uniqueKey, "unique-key", "", "add no job while one with this key is not finished: print its id")
	f.StringVar(&o.uniqueFor, "unique-for", "", "with --unique-key: also while one finished within this duration")
	return cmd
}

// flagFormOnly are the enqueue flags that describe the job of --command.
var flagFormOnly = []string{"id", "queue", "priority", "max-retries", "timeout", "run-at", "dir", "env", "env-file", "label",
	"after", "unique-key", "unique-for"}

// emptyRefused are the flags of --command whose empty value is refused.
var emptyRefused = []string{"id", "queue", "timeout", "run-at", "dir", "env-file", "unique-key", "unique-for"}

func (a *app) runEnqueue(cmd *cobra.Command, args []string, o *enqueueOptions) error {
	now := a.now()
	flagForm := cmd.Flags().Changed("command")
	sources := 0
	for _, used := range []bool{len(args) == 1, o.file != "", flagForm} {
		if used {
			sources++
		}
	}
	if sources != 1 {
		return usagef("enqueue: give exactly one of a JSON argument, --file or --command")
	}
	if !flagForm {
		for _, name := range flagFormOnly {
			if cmd.Flags().Changed(name) {
				return usagef("enqueue: --%s goes with --command", name)
			}
		}
	}
	if o.follow && !o.wait {
		return usagef("enqueue: --follow goes with --wait")
	}
	if o.wait && o.file != "" {
		return usagef("enqueue: --wait takes one job, not --file")
	}
	var jobs []queue.NewJob
	ignored := map[string]bool{}
	defer a.noteIgnored(ignored)
	switch {
	case len(args) == 1:
		n, err := parseJobJSON([]byte(args[0]), now, ignored)
		if err != nil {
			return usageError{fmt.Errorf("enqueue: %w", err)}
		}
		jobs = append(jobs, n)
	case o.file != "":
		return a.enqueueFile(cmd, o.file, now, ignored)
	default:
		n, err := o.newJob(cmd, now)
		if err != nil {
			return usageError{fmt.Errorf("enqueue: %w", err)}
		}
		jobs = append(jobs, n)
	}
	if err := inCurrentDir(jobs, workDir(os.Getwd)); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	// Without --wait the command reads the queues' settings, writes the
	// job and exits: one SQLite connection serves it (enqueue --file
	// keeps the readers' pool).
	return a.withStoreOpts(cmd, sqlite.Options{OneConnection: !o.wait}, func(ctx context.Context, st queue.Store) error {
		queues, err := queue.QueueOverrides(ctx, st)
		if err != nil {
			return err
		}
		added, err := queue.Enqueue(ctx, st, queues, jobs, now)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		if o.wait {
			id := added[0].ID
			if added[0].ExistingID != "" { // its unique key is held: wait for that job
				id = added[0].ExistingID
			}
			fmt.Fprintln(a.stderr, id)
			return a.awaitEnqueued(ctx, st, id, o.follow)
		}
		w := bufio.NewWriter(a.stdout)
		for _, j := range added {
			if j.ExistingID != "" {
				fmt.Fprintf(a.stderr, "note: job %s holds unique key %q: no job added\n", j.ExistingID, j.UniqueKey)
				w.WriteString(j.ExistingID)
			} else {
				w.WriteString(j.ID)
			}
			w.WriteByte('\n')
		}
		return w.Flush()
	})
}

func (o *enqueueOptions) newJob(cmd *cobra.Command, now time.Time) (queue.NewJob, error) {
	n := queue.NewJob{ID: o.id, Queue: o.queue, Command: o.command, Priority: o.priority}
	// A flag given an empty value is a mistake, most often a variable that
	// is not set ("--unique-key $KEY"). Taken as unset it would silently
	// drop the deduplication, pick the default queue or a generated id.
	for _, name := range emptyRefused {
		if f := cmd.Flags().Lookup(name); f.Changed && f.Value.String() == "" {
			return n, fmt.Errorf("--%s is empty: give a value or leave the flag out", name)
		}
	}
	if cmd.Flags().Changed("max-retries") {
		if o.maxRetries < 0 {
			return n, fmt.Errorf("--max-retries %d: must be 0 or more", o.maxRetries)
		}
		n.MaxRetries = &o.maxRetries
	}
	if o.timeout != "" {
		d, err := view.ParseTimeout(o.timeout)
		if err != nil {
			return n, fmt.Errorf("--timeout: %w", err)
		}
		n.Timeout = &d
	}
	if o.runAt != "" {
		t, err := view.ParseRunAt(o.runAt, now)
		if err != nil {
			return n, fmt.Errorf("--run-at: %w", err)
		}
		n.RunAt = t
	}
	if o.dir != "" {
		abs, err := filepath.Abs(o.dir)
		if err != nil {
			return n, fmt.Errorf("--dir: %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return n, fmt.Errorf("--dir %s: not a directory", o.dir)
		}
		n.Dir = abs
	}
	var err error
	if n.Env, err = o.environment(); err != nil {
		return n, err
	}
	if n.Labels, err = queue.ParseLabels(o.labels); err != nil {
		return n, fmt.Errorf("--label: %w", err)
	}
	n.After, n.UniqueKey = o.after, o.uniqueKey
	if o.uniqueFor != "" {
		if n.UniqueFor, err = view.ParseTimeout(o.uniqueFor); err != nil {
			return n, fmt.Errorf("--unique-for: %w", err)
		}
	}
	return n, nil
}

// environment reads --env-file, then --env on top.
func (o *enqueueOptions) environment() (map[string]string, error) {
	env := map[string]string{}
	if o.envFile != "" {
		b, err := os.ReadFile(o.envFile)
		if err != nil {
			return nil, fmt.Errorf("--env-file: %w", err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--env-file %s line %d: use KEY=VALUE", o.envFile, i+1)
			}
			env[k] = v
		}
	}
	for _, kv := range o.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		env[k] = v
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, nil
}

// workDir returns the directory enqueue was called from (getwd is
// os.Getwd but in tests), asked when a job first needs it and then kept: a
// file of many jobs would otherwise look the directory up (a stat of "."
// and of $PWD) once per job, a third of the CPU time of enqueue --file.
func workDir(getwd func() (string, error)) func() (string, error) {
	return sync.OnceValues(getwd)
}

// inCurrentDir makes jobs that name no directory run in the one enqueue
// was called from, and resolves a relative dir against it, as a
// configuration file's dir is against the file's directory.
func inCurrentDir(jobs []queue.NewJob, wd func() (string, error)) error {
	for i := range jobs {
		dir := jobs[i].Dir
		if filepath.IsAbs(dir) || strings.ContainsRune(dir, 0) {
			continue
		}
		cwd, err := wd()
		if err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
		jobs[i].Dir = filepath.Join(cwd, dir)
	}
	return nil
}

// parseJobJSON decodes one job as the CLI takes it. Read-only fields of
// list and show --json (state, attempts, times, ...) are left out and added
// to ignored, so that their output can be enqueued again.
func parseJobJSON(b []byte, now time.Time, ignored map[string]bool) (queue.NewJob, error) {
	n, err := view.ParseJobJSON(b, now)
	var spec *view.SpecError
	if errors.As(err, &spec) && readOnlyFields[spec.Field] {
		// As strict as ParseJobJSON, the read-only names included (the
		// map would keep the last of two), and about what follows.
		var m map[string]json.RawMessage
		if e := view.DecodeObject(b, &m, listedFields); e != nil {
			return n, &view.SpecError{Field: e.Field, Msg: "invalid job JSON: " + e.Msg}
		}
		for k := range m {
			if readOnlyFields[k] {
				delete(m, k)
				ignored[k] = true
			}
		}
		stripped, _ := json.Marshal(m)
		n, err = view.ParseJobJSON(stripped, now)
	}
	return n, err
}

// readOnlyFields are the output-only fields of a job's JSON.
var readOnlyFields = map[string]bool{"state": true, "attempts": true, "created_at": true, "updated_at": true,
	"started_at": true, "finished_at": true, "exit_code": true, "error": true, "worker": true, "template": true,
	"scheduled_at": true, "history": true}

// listedFields are the fields of a job as list and show --json print it:
// those a job is enqueued with, and the read-only ones.
var listedFields = func() map[string]bool {
	m := maps.Clone(view.JobFields)
	maps.Copy(m, readOnlyFields)
	return m
}()

// noteIgnored tells which read-only fields were left out.
func (a *app) noteIgnored(ignored map[string]bool) {
	if len(ignored) > 0 {
		fmt.Fprintf(a.stderr, "note: ignored read-only fields: %s\n", strings.Join(slices.Sorted(maps.Keys(ignored)), ", "))
	}
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		if !unicode.IsSpace(rune(b[0])) {
			return b[0], nil
		}
		br.ReadByte()
	}
}
