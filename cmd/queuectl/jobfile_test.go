package main

import (
	"io"
	"strings"
	"testing"
)

// eachJob names the lines of the file as an editor numbers them, blank
// lines at its start included, and takes objects printed over several
// lines, as show --json prints them.
func TestEachJobNamesLinesAndTakesShowJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"json lines", "{\"command\":\"a\"}\n\n{\"command\":\"b\"}\n", "line 1 line 3"},
		{"blank lines first", "\n\n{\"command\":\"a\"}\n{\"command\":\"b\"}\n", "line 3 line 4"},
		{"blank lines and a BOM first", "\ufeff\r\n \n{\"command\":\"a\"}\n", "line 3"},
		{"array", "\n[{\"command\":\"a\"},\n{\"command\":\"b\"}]\n", "item 1 item 2"},
		{"show --json", "{\n  \"id\": \"a\",\n  \"command\": \"x\"\n}\n", "object 1"},
		{"show --json twice", "{\n  \"id\": \"a\"\n}\n{ \r\n  \"id\": \"b\"\n}", "object 1 object 2"},
		{"a lone brace", "{", "object 1"},
	} {
		var got []string
		err := eachJob(strings.NewReader(tc.in), "f", func(where string, b []byte) error {
			got = append(got, where)
			return nil
		})
		if tc.name == "a lone brace" {
			if err == nil || !strings.Contains(err.Error(), "f object 1: invalid JSON") {
				t.Errorf("%s: %v, want an error naming object 1", tc.name, err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// endless yields head (default: a JSON array's start) then a string that
// never ends, n bytes in all, counting what was read of it.
type endless struct {
	head    string
	read, n int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, io.EOF
	}
	head := e.head
	if head == "" {
		head = `[{"command":"`
	}
	k := 0
	for ; k < len(p) && e.read < e.n; k++ {
		if e.read < int64(len(head)) {
			p[k] = head[e.read]
		} else {
			p[k] = 'a'
		}
		e.read++
	}
	return k, nil
}

// An item of a JSON array over the limit is refused once the limit is
// passed, not once the whole of it was read into memory.
func TestEachJobRefusesALongArrayItemEarly(t *testing.T) {
	e := &endless{n: 4 * maxJobLine}
	err := eachJob(e, "f", func(string, []byte) error { t.Fatal("an item was taken"); return nil })
	if err == nil || !strings.Contains(err.Error(), "f item 1 is longer than the limit of 16 MiB") {
		t.Errorf("err = %v, want item 1 too long", err)
	}
	if e.read > maxJobLine+2*itemSlack {
		t.Errorf("read %d MiB of the item before refusing it", e.read>>20)
	}
	// Items up to the limit still pass, one after another.
	item := `{"command":"` + strings.Repeat("a", maxJobLine-len(`{"command":""}`)) + `"}`
	n := 0
	err = eachJob(strings.NewReader("["+item+",\n"+item+"]"), "f", func(_ string, b []byte) error {
		if len(b) != maxJobLine {
			t.Errorf("item of %d bytes, want %d", len(b), maxJobLine)
		}
		n++
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("two items at the limit: %d taken, %v", n, err)
	}
}

// An object printed over several lines (as show --json prints one) over
// the limit is refused once the limit is passed, as an array's item is.
func TestEachJobRefusesALongObjectEarly(t *testing.T) {
	e := &endless{head: "{\n  \"command\": \"", n: 4 * maxJobLine}
	err := eachJob(e, "f", func(string, []byte) error { t.Fatal("an object was taken"); return nil })
	if err == nil || !strings.Contains(err.Error(), "f object 1 is longer than the limit of 16 MiB") {
		t.Errorf("err = %v, want object 1 too long", err)
	}
	if e.read > maxJobLine+2*itemSlack {
		t.Errorf("read %d MiB of the object before refusing it", e.read>>20)
	}
}
