package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
)

// The two formats of a file of jobs (enqueue --file): JSON Lines, or one
// JSON array (the output of list --json), read a job at a time.

// maxJobLine bounds one line of a JSON Lines file, or one item of a JSON
// array, so that memory stays bounded whatever the file.
const maxJobLine = 16 << 20

// eachJob calls fn with every job object of r: the lines of a JSON Lines
// file (blank lines skipped), or the items of one JSON array. where says
// which ("line 12", "item 3"). b is valid only during the call. A UTF-8
// byte order mark at the start, which some editors write, is skipped.
func eachJob(r io.Reader, path string, fn func(where string, b []byte) error) error {
	br := bufio.NewReaderSize(r, 64*1024)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	first, blank, err := skipSpace(br)
	if err == nil && first == '[' {
		return eachArrayItem(br, path, fn)
	}
	if err == nil && first == '{' && openLineIsBlank(br) {
		// No line of JSON Lines is a lone "{": an object printed over
		// several lines, as show --json prints one (or several of them).
		return eachObject(br, path, fn)
	}
	var scratch []byte
	// The blank lines skipped count, so that errors name the right line.
	for line := 1 + blank; ; line++ {
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

// skipSpace skips the white space at the start of br and returns the
// first byte after it and the number of line ends it skipped.
func skipSpace(br *bufio.Reader) (first byte, lines int, err error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, lines, err
		}
		if !unicode.IsSpace(rune(b[0])) {
			return b[0], lines, nil
		}
		if b[0] == '\n' {
			lines++
		}
		br.ReadByte()
	}
}

// openLineIsBlank says whether only white space follows the byte at the
// start of br up to the end of its line.
func openLineIsBlank(br *bufio.Reader) bool {
	for n := 2; n <= br.Size(); n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			return err == io.EOF
		}
		switch b[n-1] {
		case '\n':
			return true
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
	return false
}

// eachObject reads JSON objects printed over several lines, one after
// another (the output of show --json), an object at a time.
func eachObject(r io.Reader, path string, fn func(where string, b []byte) error) error {
	dec := newItemDecoder(r)
	for item := 1; ; item++ {
		where := "object " + strconv.Itoa(item)
		raw, err := dec.next(path, where)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(where, raw); err != nil {
			return err
		}
	}
}

// itemDecoder decodes the values of a file of jobs (an array's items, or
// objects one after another) one at a time, each at most maxJobLine bytes.
// The decoder reads a whole value before it can be measured: its reader
// stops it a little past the limit, so that a value of a gigabyte is
// refused without being held in memory.
type itemDecoder struct {
	*json.Decoder
	lr *itemLimitReader
}

func newItemDecoder(r io.Reader) itemDecoder {
	lr := &itemLimitReader{r: r}
	return itemDecoder{json.NewDecoder(lr), lr}
}

// next decodes the next value, named where in errors ("item 3"); io.EOF
// when there is none.
func (d itemDecoder) next(path, where string) (json.RawMessage, error) {
	var raw json.RawMessage
	d.lr.limit = d.InputOffset() + maxJobLine + itemSlack
	err := d.Decode(&raw)
	switch {
	case err == io.EOF:
		return nil, err
	case errors.Is(err, errLineTooLong), err == nil && len(raw) > maxJobLine:
		return nil, usagef("enqueue: %s %s is longer than the limit of %d MiB", path, where, maxJobLine>>20)
	case err != nil:
		return nil, usageError{fmt.Errorf("enqueue: %s %s: invalid JSON: %w", path, where, err)}
	}
	return raw, nil
}

// itemSlack is how far past an item's limit its reader lets the decoder
// read: what it has read ahead of the item's start is counted too.
const itemSlack = 1 << 20

// itemLimitReader fails with errLineTooLong once the bytes it has read
// reach limit, an offset in r.
type itemLimitReader struct {
	r     io.Reader
	n     int64 // bytes read so far
	limit int64
}

func (l *itemLimitReader) Read(p []byte) (int, error) {
	if l.limit > 0 && l.n >= l.limit {
		return 0, errLineTooLong
	}
	if l.limit > 0 && int64(len(p)) > l.limit-l.n {
		p = p[:l.limit-l.n]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// eachArrayItem reads one JSON array of job objects, an item at a time.
func eachArrayItem(r io.Reader, path string, fn func(where string, b []byte) error) error {
	dec := newItemDecoder(r)
	if _, err := dec.Token(); err != nil {
		return usageError{fmt.Errorf("enqueue: %s: invalid JSON array: %w", path, err)}
	}
	for item := 1; dec.More(); item++ {
		where := "item " + strconv.Itoa(item)
		raw, err := dec.next(path, where)
		if err == io.EOF { // More saw a value coming
			err = usageError{fmt.Errorf("enqueue: %s %s: invalid JSON: %w", path, where, io.ErrUnexpectedEOF)}
		}
		if err != nil {
			return err
		}
		if err := fn(where, raw); err != nil {
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
