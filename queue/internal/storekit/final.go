package storekit

import "github.com/queuectl/queuectl/queue"

// FinalOnRow reports whether f's attempt can be kept on its job's own row
// rather than as a row of attempts: the job finishes with it, and the
// job's own number, exit code, error and worker are the attempt's, as the
// lifecycle decides them (the attempt's end is the job's finished_at in
// both stores). A cancel request changes only a runnable outcome, never a
// finished one, so the row then holds what was decided here.
func FinalOnRow(f queue.Finish) bool {
	r := f.Record
	return f.State.Finished() && r.Number == f.Attempts &&
		r.Error == f.Error && r.Worker == f.Worker && equalInt(r.ExitCode, f.ExitCode)
}

func equalInt(a, b *int) bool {
	return a == b || a != nil && b != nil && *a == *b
}
