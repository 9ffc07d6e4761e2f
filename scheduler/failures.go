package scheduler

import (
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/rs/zerolog"
)

// tickErrorEvery is how often a tick that keeps failing (the database
// is away) logs its error again.
const tickErrorEvery = time.Minute

// tickFailures logs a failing tick once, then once every tickErrorEvery
// while the failures last, and says when ticks work again: the scheduler
// ticks every second, and an error line a second says nothing more. The
// loop keeps one for whole ticks, and Tick one per failing template.
type tickFailures struct {
	n      int
	logged time.Time
}

// note counts err (nil: a success), logging failed with the error and
// recovered once it works again.
func (f *tickFailures) note(log zerolog.Logger, now time.Time, err error, failed, recovered string) {
	switch {
	case err != nil:
		f.n++
		if f.n == 1 || now.Sub(f.logged) >= tickErrorEvery {
			log.Error().Err(err).Int("failures", f.n).Msg(failed)
			f.logged = now
		}
	case f.n > 0:
		log.Info().Int("failures", f.n).Msg(recovered)
		f.n = 0
	}
}

// noteTemplate counts a template's failure (err nil: it worked) in
// failing, which holds the templates failing so far.
func (s *Scheduler) noteTemplate(t *queue.Template, now time.Time, err error, failed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failing[t.Name]
	if f == nil {
		if err == nil {
			return
		}
		f = &tickFailures{}
		s.failing[t.Name] = f
	}
	f.note(s.log.With().Str("template", t.Name).Logger(), now, err, failed, "template fires again")
	if f.n == 0 {
		delete(s.failing, t.Name)
	}
}

// forgetFailures drops the failure counts of templates that are gone or
// that Tick no longer handles: disabled, with no run triggered by hand
// waiting.
func (s *Scheduler) forgetFailures(ts []*queue.Template) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failing) == 0 {
		return
	}
	handled := map[string]bool{}
	for _, t := range ts {
		handled[t.Name] = t.Enabled || t.PendingKind == queue.FireManual
	}
	for name := range s.failing {
		if !handled[name] {
			delete(s.failing, name)
		}
	}
}
