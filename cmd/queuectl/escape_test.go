package main

import "testing"

func TestPrintableEscapesWhatATerminalActsOn(t *testing.T) {
	tests := []struct{ in, want string }{
		{"echo hi", "echo hi"},
		{"héllo ✓", "héllo ✓"},
		{"\x1b[2J\x1b]0;owned\x07", `\x1b[2J\x1b]0;owned\x07`},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"bad \xff utf8", `bad \xff utf8`},
	}
	for _, tc := range tests {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTerminalOutputKeepsLinesAndRawStaysRaw(t *testing.T) {
	out := []byte("line 1\n\tindented\n\x1b[31mred\x1b[0m\n")
	if got, want := string(terminalOutput(out, false)), "line 1\n\tindented\n\\x1b[31mred\\x1b[0m\n"; got != want {
		t.Errorf("on a terminal: %q, want %q", got, want)
	}
	if got := terminalOutput(out, true); string(got) != string(out) {
		t.Errorf("raw: %q, want the bytes as captured", got)
	}
}
