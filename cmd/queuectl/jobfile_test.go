package main

import (
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
