package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/queuectl/queuectl/queue"
	"github.com/spf13/cobra"
)

// maxJobLine bounds one line of a JSON Lines file, or one item of a JSON
// array, so that memory stays bounded whatever the file.
const maxJobLine = 16 << 20

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
// An id taken by a stored job or earlier in the file aborts the import, as
// does an after naming a job neither stored nor earlier in the file. A job
// whose unique key a job holds (stored, or earlier in the file) is not
// added: that job's id is printed in its place, with a note.
func (a *app) enqueueFile(cmd *cobra.Command, path string, now time.Time, ignored map[string]bool) error {
	src, again, cleanup, err := a.openJobFile(path)
	if err != nil {
		return err
	}
	defer cleanup()
	return a.withStore(cmd, func(ctx context.Context, st queue.Store) error {
		queues, err := queue.QueueOverrides(ctx, st)
		if err != nil {
			return err
		}
		r, err := queue.NewResolver(ctx, st, queues, now)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		prog := a.progress()
		total := 0
		wd := workDir(os.Getwd)
		err = eachJob(src, path, func(where string, b []byte) error {
			if _, err := resolveJob(r, b, now, wd, ignored); err != nil {
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
		return a.importJobs(ctx, st, r, wd, second, path, now, total, prog)
	})
}

// importJobs is the second pass: stage, commit, print the ids.
func (a *app) importJobs(ctx context.Context, st queue.Store, r *queue.Resolver, wd func() (string, error), src io.Reader, path string,
	now time.Time, total int, prog func(string, int, int)) (err error) {
	ids, err := os.CreateTemp("", "queuectl-ids-*")
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	defer os.Remove(ids.Name())
	defer ids.Close()
	idw := bufio.NewWriter(ids)

	imp, err := st.BeginImport(ctx)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	defer func() {
		if err != nil {
			imp.Abort(context.WithoutCancel(ctx))
		}
	}()
	chunk := make([]*queue.Job, 0, queue.ImportChunk)
	wheres := make([]string, 0, queue.ImportChunk)
	stored := 0
	var notes uniqueNotes
	flush := func() error {
		if err := imp.Stage(ctx, chunk); err != nil {
			return chunkError(path, chunk, wheres, err)
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
		chunk, wheres = chunk[:0], wheres[:0]
		return nil
	}
	err = eachJob(src, path, func(where string, b []byte) error {
		j, err := resolveJob(r, b, now, wd, map[string]bool{})
		if err != nil { // the file changed since the first pass
			return usageError{fmt.Errorf("enqueue: %s %s: %w", path, where, err)}
		}
		chunk, wheres = append(chunk, j), append(wheres, where)
		if len(chunk) == queue.ImportChunk {
			return flush()
		}
		return nil
	})
	if err == nil && len(chunk) > 0 {
		err = flush()
	}
	if err != nil {
		return err
	}
	if err := imp.Commit(ctx); err != nil {
		return fmt.Errorf("enqueue: %w", err)
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

// chunkError names the line of the job a failed chunk stumbled on, when
// the store's error names its id: a taken id, or an after naming no job
// stored or earlier in the file (both bad input).
func chunkError(path string, chunk []*queue.Job, wheres []string, err error) error {
	if errors.Is(err, queue.ErrDuplicate) || errors.Is(err, queue.ErrInvalid) {
		msg := err.Error()
		for i, j := range chunk {
			if !strings.Contains(msg, strconv.Quote(j.ID)) {
				continue
			}
			if errors.Is(err, queue.ErrDuplicate) {
				return fmt.Errorf("enqueue: %s %s: %w (stored already, or earlier in the file)", path, wheres[i], err)
			}
			return fmt.Errorf("enqueue: %s %s: %w (neither stored nor earlier in the file)", path, wheres[i], err)
		}
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
// read it again for the second. Standard input and other files that
// cannot be read twice (pipes, FIFOs) are copied, as the first pass reads
// them, to a temporary file only the user can read.
func (a *app) openJobFile(path string) (first io.Reader, again func() (io.Reader, error), cleanup func(), err error) {
	var f *os.File
	if path == "-" {
		f = nil
	} else if f, err = os.Open(path); err != nil {
		return nil, nil, nil, usageError{fmt.Errorf("enqueue: %w", err)}
	}
	if f != nil {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return f, func() (io.Reader, error) {
				_, err := f.Seek(0, io.SeekStart)
				return f, err
			}, func() { f.Close() }, nil
		}
	}
	var in io.Reader = a.stdin
	if f != nil {
		in = f
	}
	spool, err := os.CreateTemp("", "queuectl-jobs-*")
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, nil, fmt.Errorf("enqueue: %w", err)
	}
	cleanup = func() {
		spool.Close()
		os.Remove(spool.Name())
		if f != nil {
			f.Close()
		}
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

// eachJob calls fn with every job object of r: the lines of a JSON Lines
// file (blank lines skipped), or the items of one JSON array. where says
// which ("line 12", "item 3"). b is valid only during the call.
func eachJob(r io.Reader, path string, fn func(where string, b []byte) error) error {
	br := bufio.NewReaderSize(r, 64*1024)
	if first, err := firstByte(br); err == nil && first == '[' {
		return eachArrayItem(br, path, fn)
	}
	var scratch []byte
	for line := 1; ; line++ {
		b, err := readLine(br, &scratch)
		if errors.Is(err, errLineTooLong) {
			return usagef("enqueue: %s line %d is longer than the limit of %d MiB", path, line, maxJobLine>>20)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("enqueue: read %s: %w", path, err)
		}
		if b = bytes.TrimSpace(b); len(b) == 0 {
			continue
		}
		if err := fn("line "+strconv.Itoa(line), b); err != nil {
			return err
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line with its line end, io.EOF when there is
// none, or errLineTooLong when it holds more than maxJobLine bytes. A line
// that fits the reader's buffer is returned without a copy; a longer one
// is assembled in *scratch, which is kept for reuse (at most maxJobLine).
func readLine(br *bufio.Reader, scratch *[]byte) ([]byte, error) {
	buf := (*scratch)[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(bytes.TrimRight(frag, "\r\n")) > maxJobLine {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			buf = append(buf, frag...)
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(buf) == 0 {
			if len(frag) == 0 {
				return nil, io.EOF
			}
			return frag, nil
		}
		buf = append(buf, frag...)
		*scratch = buf
		return buf, nil
	}
}

// eachArrayItem reads one JSON array of job objects, an item at a time.
func eachArrayItem(r io.Reader, path string, fn func(where string, b []byte) error) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return usageError{fmt.Errorf("enqueue: %s: invalid JSON array: %w", path, err)}
	}
	for item := 1; dec.More(); item++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return usageError{fmt.Errorf("enqueue: %s item %d: invalid JSON: %w", path, item, err)}
		}
		if len(raw) > maxJobLine {
			return usagef("enqueue: %s item %d is longer than the limit of %d MiB", path, item, maxJobLine>>20)
		}
		if err := fn("item "+strconv.Itoa(item), raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return usageError{fmt.Errorf("enqueue: %s: invalid JSON array: %w", path, err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return usagef("enqueue: %s: trailing data after the JSON array", path)
	}
	return nil
}
