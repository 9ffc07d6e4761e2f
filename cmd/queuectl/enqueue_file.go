package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

// enqueueFile enqueues the jobs of a JSON Lines file, or of one JSON array
// (the output of list --json), all or nothing, in bounded memory:
//
//  1. A first pass reads, parses and resolves every job and stores nothing:
//     any bad line fails the command (exit 2) before the database is
//     touched. Standard input and other unseekable files are copied to a
//     temporary file meanwhile, for the second pass.
//  2. A second pass stages the jobs in chunks of queue.ImportChunk, one
//     transaction each (queue.Import): workers keep the database between
//     chunks. The new ids go to a temporary file.
//  3. Commit makes them all pending at once; then the ids are printed.
//
// A store whose import is one transaction (queue.OneTransactionImports:
// PostgreSQL) skips the first pass over a regular file: a bad line met
// while staging rolls the transaction back, which leaves the database as
// it was, and the file is read once, its parsing overlapping the server's
// work on earlier chunks. Standard input and pipes still get both passes
// (see openJobFile).
//
// An id taken by a stored job or earlier in the file aborts the import, as
// does an after naming a job neither stored nor anywhere in the file, or
// jobs of the file that run after each other (checked at the commit). A
// job whose unique key a job holds (stored, or earlier in the file) is not
// added: that job's id is printed in its place, with a note, and a job of
// the file after it runs after that job.
func (a *app) enqueueFile(cmd *cobra.Command, path string, now time.Time, ignored map[string]bool) error {
	err := a.enqueueFileIn(cmd, path, now, ignored)
	switch {
	case errors.Is(err, queue.ErrPublishing): // stored: importing it again would add its jobs twice
		return fmt.Errorf("%w (do not run the import again: its jobs appear once a worker runs or a command opens the database)", err)
	case errors.Is(err, queue.ErrUnavailable): // busy, a full disk, a deadlock: the import took nothing
		return fmt.Errorf("%w (nothing was stored: run the import again)", err)
	}
	return err
}

func (a *app) enqueueFileIn(cmd *cobra.Command, path string, now time.Time, ignored map[string]bool) error {
	return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
		o, ok := st.(queue.OneTransactionImports)
		src, again, cleanup, err := a.openJobFile(path, ok && o.ImportIsOneTransaction())
		if err != nil {
			return err
		}
		defer cleanup()
		queues, err := queue.QueueOverrides(ctx, st)
		if err != nil {
			return err
		}
		r, err := queue.NewResolver(ctx, st, queues, now)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		prog := a.progress()
		wd := workDir(os.Getwd)
		resolve := func(ignored map[string]bool) func([]byte) (*queue.Job, error) {
			return func(b []byte) (*queue.Job, error) { return resolveJob(r, b, now, wd, ignored) }
		}
		if again == nil { // read once: a regular file, read again only to name a line
			rewind := func() (io.Reader, error) {
				seeker, ok := src.(io.ReadSeeker)
				if !ok {
					return nil, errors.New("not seekable")
				}
				_, err := seeker.Seek(0, io.SeekStart)
				return seeker, err
			}
			resolve := resolve(ignored)
			return a.importAgainOnConflict(st, src, rewind, path, prog, func(src io.Reader, begin beginImport) error {
				return a.importJobs(ctx, begin, src, rewind, path, resolve, 0, prog)
			})
		}
		check, total := resolve(ignored), 0
		err = eachJob(src, path, func(where string, b []byte) error {
			if _, err := check(b); err != nil {
				return usageError{fmt.Errorf("enqueue: %s %s: %w", path, where, err)}
			}
			total++
			prog("checked", total, 0)
			return nil
		})
		if err != nil {
			return err
		}
		if total == 0 {
			return usagef("enqueue: %s holds no jobs", path)
		}
		second, err := again()
		if err != nil {
			return fmt.Errorf("enqueue: read %s again: %w", path, err)
		}
		resolveAgain := resolve(map[string]bool{})
		return a.importAgainOnConflict(st, second, again, path, prog, func(src io.Reader, begin beginImport) error {
			return a.importJobs(ctx, begin, src, again, path, resolveAgain, total, prog)
		})
	})
}

// importAttempts is how many times an import the database rolled back for
// a conflict with another transaction is made before the command fails.
const importAttempts = 3

// beginImport begins an import (a store's BeginImport).
type beginImport func(context.Context) (queue.Import, error)

// importAgainOnConflict runs an import, and runs it again from the start
// of the file when the database rolled it back for a conflict with another
// transaction (queue.ErrRolledBack: two PostgreSQL imports that took the
// same unique keys in opposite orders deadlocked). Made again, it runs
// alone (queue.ImportsAlone): once the imports in progress have ended, and
// with none beside it, so it cannot meet one again; made again at once, it
// met the same import, still in progress, at the same keys. Nothing of a
// rolled-back import was kept and nothing of it was printed, so the ids
// the command prints are those of the import that committed.
func (a *app) importAgainOnConflict(st queue.Store, src io.Reader, rewind func() (io.Reader, error), path string,
	prog func(string, int, int), run func(io.Reader, beginImport) error) error {
	begin := st.BeginImport
	for attempt := 1; ; attempt++ {
		err := run(src, begin)
		if !errors.Is(err, queue.ErrRolledBack) || attempt == importAttempts {
			return err
		}
		if alone, ok := st.(queue.ImportsAlone); ok {
			begin = alone.BeginImportAlone
		}
		name := path
		if name == "-" {
			name = "standard input"
		}
		prog("", 0, 0) // the note goes on a line of its own
		fmt.Fprintf(a.stderr, "%v; nothing was stored, importing %s again once other imports end (attempt %d of %d)\n",
			err, name, attempt+1, importAttempts)
		if src, err = rewind(); err != nil {
			return fmt.Errorf("enqueue: read %s again: %w", path, err)
		}
	}
}

// importJobs is the second pass (or the only one): stage, commit, print
// the ids. rewind reads the jobs again from the start (the file, or the
// copy of standard input or a pipe), to name the line of a job the commit
// refuses. total is the number of jobs, 0 when not counted yet.
func (a *app) importJobs(ctx context.Context, begin beginImport, src io.Reader, rewind func() (io.Reader, error), path string,
	resolve func([]byte) (*queue.Job, error), total int, prog func(string, int, int)) (err error) {
	ids, err := os.CreateTemp("", "queuectl-ids-*")
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	defer os.Remove(ids.Name())
	defer ids.Close()
	idw := bufio.NewWriter(ids)

	imp, err := begin(ctx)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	defer func() {
		if err != nil {
			imp.Abort(context.WithoutCancel(ctx))
		}
	}()
	// The chunk being read and the one staged before it: a store that
	// copies a chunk while the next is read reports a taken id in it at
	// the next Stage or the Commit (queue.ErrEarlierChunk).
	cur, prev := newChunk(), newChunk()
	stored := 0
	var notes uniqueNotes
	flush := func() error {
		chunk, wheres := cur.jobs, cur.wheres
		if err := imp.Stage(ctx, chunk); err != nil {
			if errors.Is(err, queue.ErrEarlierChunk) {
				return chunkError(path, err, prev)
			}
			return chunkError(path, err, cur)
		}
		for i, j := range chunk {
			id := j.ID
			if j.ExistingID != "" {
				id = j.ExistingID
				notes.add(fmt.Sprintf("note: %s %s: job %s holds unique key %q: no job added", path, wheres[i], j.ExistingID, j.UniqueKey))
			}
			idw.WriteString(id)
			idw.WriteByte('\n')
		}
		stored += len(chunk)
		prog("stored", stored, total)
		cur, prev = prev.reset(), cur
		return nil
	}
	err = eachJob(src, path, func(where string, b []byte) error {
		j, err := resolve(b)
		if err != nil { // no first pass, or the file changed since
			return usageError{fmt.Errorf("enqueue: %s %s: %w", path, where, err)}
		}
		cur.jobs, cur.wheres = append(cur.jobs, j), append(cur.wheres, where)
		if len(cur.jobs) == queue.ImportChunk {
			return flush()
		}
		return nil
	})
	if err == nil && len(cur.jobs) > 0 {
		err = flush()
	}
	if err == nil && stored == 0 {
		err = usagef("enqueue: %s holds no jobs", path)
	}
	if err != nil {
		return err
	}
	if err := imp.Commit(ctx); err != nil {
		// The commit checks the jobs named in after that came later in
		// the file (storekit.CheckLater): its error names a job of any
		// chunk.
		var je *queue.JobError
		if errors.As(err, &je) && errors.Is(err, queue.ErrInvalid) {
			if where := whereOf(rewind, path, ids, idw, je.ID); where != "" {
				return usageError{fmt.Errorf("enqueue: %s %s: %w", path, where, err)}
			}
		}
		return chunkError(path, err, prev)
	}
	prog("", 0, 0)
	notes.print(a.stderr)
	if err := idw.Flush(); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	if _, err := ids.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	_, err = io.Copy(a.stdout, ids)
	return err
}

// maxNotes bounds the unique-key notes an import prints one by one.
const maxNotes = 100

// uniqueNotes are the notes of jobs not added because a job held their
// unique key: the first maxNotes, and a count of the others.
type uniqueNotes struct {
	lines []string
	more  int
}

func (n *uniqueNotes) add(line string) {
	if len(n.lines) < maxNotes {
		n.lines = append(n.lines, line)
	} else {
		n.more++
	}
}

func (n *uniqueNotes) print(w io.Writer) {
	for _, l := range n.lines {
		fmt.Fprintln(w, l)
	}
	if n.more > 0 {
		fmt.Fprintf(w, "note: %d more jobs not added: their unique keys are held\n", n.more)
	}
}

// chunk is a chunk of jobs with where each came from in the file.
type chunk struct {
	jobs   []*queue.Job
	wheres []string
}

func newChunk() *chunk {
	return &chunk{make([]*queue.Job, 0, queue.ImportChunk), make([]string, 0, queue.ImportChunk)}
}

// reset empties c for the next chunk, dropping its jobs: the slice's
// array would otherwise keep them from the garbage collector until
// overwritten, a third chunk in memory.
func (c *chunk) reset() *chunk {
	clear(c.jobs)
	c.jobs, c.wheres = c.jobs[:0], c.wheres[:0]
	return c
}

// errFound ends whereOf's reading.
var errFound = errors.New("found")

// whereOf finds where ("line 12", "item 3") the file at path holds the
// job with id: its position among the ids written so far to ids (one per
// job, in file order; a job's own comes before any job printed as it),
// then that job of the file, read again through rewind (standard input
// and pipes from their copy: a pipe read again would wait for a writer
// for ever). It finds jobs the file gave no id too. "" when it cannot (a
// file changed meanwhile).
func whereOf(rewind func() (io.Reader, error), path string, ids *os.File, idw *bufio.Writer, id string) string {
	if idw.Flush() != nil {
		return ""
	}
	sc := bufio.NewScanner(io.NewSectionReader(ids, 0, math.MaxInt64)) // leaves ids' offset alone
	k := 0
	for ; sc.Scan() && sc.Text() != id; k++ {
	}
	if sc.Err() != nil || sc.Text() != id {
		return ""
	}
	f, err := rewind()
	if err != nil {
		return ""
	}
	found, n := "", 0
	eachJob(f, path, func(where string, _ []byte) error {
		if n == k {
			found = where
			return errFound
		}
		n++
		return nil
	})
	return found
}

// chunkError names the line of the job a failed chunk c stumbled on, when
// the store's error names its id: a taken id, or another job's error (both
// bad input). For a taken id it looks from the chunk's newest job (of two
// jobs with one id, the later is the one that found it taken), else from
// its oldest. An error about one job (queue.JobError) names it alone: the
// message may also name another job of the chunk that the bad one is
// after.
func chunkError(path string, err error, c *chunk) error {
	dup := errors.Is(err, queue.ErrDuplicate)
	if !dup && !errors.Is(err, queue.ErrInvalid) {
		return fmt.Errorf("enqueue: %w", err)
	}
	msg := err.Error()
	var je *queue.JobError
	named := func(id string) bool { return strings.Contains(msg, strconv.Quote(id)) }
	if errors.As(err, &je) {
		named = func(id string) bool { return id == je.ID }
	}
	for k := range c.jobs {
		i := k
		if dup {
			i = len(c.jobs) - 1 - k
		}
		if !named(c.jobs[i].ID) {
			continue
		}
		if dup {
			return fmt.Errorf("enqueue: %s %s: %w (stored already, or earlier in the file)", path, c.wheres[i], err)
		}
		return fmt.Errorf("enqueue: %s %s: %w", path, c.wheres[i], err)
	}
	return fmt.Errorf("enqueue: %w", err)
}

// resolveJob parses and validates one job.
func resolveJob(r *queue.Resolver, b []byte, now time.Time, wd func() (string, error), ignored map[string]bool) (*queue.Job, error) {
	n, err := parseJobJSON(b, now, ignored)
	if err != nil {
		return nil, err
	}
	one := []queue.NewJob{n}
	if err := inCurrentDir(one, wd); err != nil {
		return nil, err
	}
	return r.Resolve(one[0])
}

// openJobFile opens the job file for the first pass and returns how to
// read it again for the second: nil when once is allowed and the file is a
// regular one, which is then read once. Standard input and other files
// that cannot be read twice (pipes, FIFOs) are copied, as the first pass
// reads them, to a temporary file only the user can read: even an import
// that is one transaction reads them twice, so that a slow writer does not
// hold its transaction open (and the database's vacuum back).
func (a *app) openJobFile(path string, once bool) (first io.Reader, again func() (io.Reader, error), cleanup func(), err error) {
	var f *os.File
	if path == "-" {
		f = nil
	} else if f, err = os.Open(path); err != nil {
		return nil, nil, nil, usageError{fmt.Errorf("enqueue: %w", err)}
	} else if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, nil, usagef("enqueue: --file %s is a directory, not a file of jobs", path)
	}
	var in io.Reader = a.stdin
	closeIn := func() {}
	if f != nil {
		in, closeIn = f, func() { f.Close() }
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if once {
				return f, nil, closeIn, nil
			}
			return f, func() (io.Reader, error) {
				_, err := f.Seek(0, io.SeekStart)
				return f, err
			}, closeIn, nil
		}
	}
	spool, err := os.CreateTemp("", "queuectl-jobs-*")
	if err != nil {
		closeIn()
		return nil, nil, nil, fmt.Errorf("enqueue: %w", err)
	}
	cleanup = func() {
		spool.Close()
		os.Remove(spool.Name())
		closeIn()
	}
	return io.TeeReader(in, spool), func() (io.Reader, error) {
		_, err := spool.Seek(0, io.SeekStart)
		return spool, err
	}, cleanup, nil
}

// progress returns a reporter that keeps one line on standard error up to
// date, on a terminal only, at most once per chunk; a call with an empty
// verb clears the line.
func (a *app) progress() func(verb string, n, total int) {
	if !isTerminal(a.stderr) {
		return func(string, int, int) {}
	}
	return func(verb string, n, total int) {
		switch {
		case verb == "":
			fmt.Fprint(a.stderr, "\r\033[K")
		case n%queue.ImportChunk != 0 && n != total:
		case total > 0:
			fmt.Fprintf(a.stderr, "\r\033[Kenqueue: %s %d of %d jobs (%d%%)", verb, n, total, n*100/total)
		default:
			fmt.Fprintf(a.stderr, "\r\033[Kenqueue: %s %d jobs", verb, n)
		}
	}
}
