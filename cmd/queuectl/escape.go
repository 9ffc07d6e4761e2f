package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
)

// printable escapes what a terminal would act on in a job field (a
// command, an error, a worker's host name): control characters, including
// the escape sequences that rewrite the screen, invalid UTF-8, and the
// marks that reorder text (bidi overrides). Text output shows fields
// through it; JSON output escapes on its own.
func printable(s string) string {
	return escapeText(s, false)
}

// escapeText does the work of printable; keepLines keeps newlines and tabs
// (for command output shown on a terminal).
func escapeText(s string, keepLines bool) string {
	if !needsEscape(s, keepLines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || (unsafeRune(r) && !(keepLines && (r == '\n' || r == '\t'))) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports a control character or a bidirectional formatting mark.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// terminalOutput is a job's captured output as `output` writes it: as
// captured when raw (piped, or --raw), else with the escape sequences that
// would rewrite the operator's terminal escaped, lines and tabs kept.
func terminalOutput(out []byte, raw bool) []byte {
	if raw {
		return out
	}
	return []byte(escapeText(string(out), true))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
