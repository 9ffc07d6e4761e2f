package web

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// cleanOutput makes captured command output safe and readable as text:
// terminal escape sequences (colours, cursor moves, window titles) are
// removed, carriage returns become line breaks, other control characters
// are shown as their Unicode control pictures, the invisible bidirectional
// controls as ⟨U+202E⟩ (as visible shows them), and invalid UTF-8 becomes
// U+FFFD. HTML escaping is left to the templates.
func cleanOutput(b []byte) string {
	s, _ := cleanLines(b)
	return s
}

// cleanLines is cleanOutput that also says where b's last line starts: the
// index after the last line break it wrote, 0 when it wrote none.
//
// Cleaning is not quite line by line: an escape sequence can run across
// line feeds (a CSI's parameters, an OSC up to its BEL or ST) or end with
// one ("ESC \n"), a rune can be cut, and "\r\n" is one break. But it cuts b
// into pieces (an escape sequence, a break, a character) each of which
// depends only on the bytes from its start on, and a break is whole once
// the byte after it is known. So when b grows, cleaning it from such a
// break on gives exactly what cleaning all of it gives after the break;
// only a break that is b's last byte, a "\r", may still become "\r\n".
func cleanLines(b []byte) (string, int) {
	var sb strings.Builder
	sb.Grow(len(b))
	last := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b: // ESC: skip the whole sequence
			i = skipEscape(b, i)
			continue
		case c == 0x9b: // C1 CSI in 8-bit form (not valid UTF-8 on its own)
			i = skipCSI(b, i+1)
			continue
		case c == '\r' || c == '\n':
			if c == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			sb.WriteByte('\n')
			last = i + 1
		case c == '\t':
			sb.WriteByte(c)
		case c == 0x7f:
			sb.WriteRune('\u2421') // ␡
		case c < 0x20:
			sb.WriteRune(0x2400 + rune(c)) // ␀ … ␟
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
		default:
			r, size := utf8.DecodeRune(b[i:])
			switch {
			case r >= 0x80 && r < 0xa0: // C1 controls
				sb.WriteRune(utf8.RuneError)
			case hidden(r): // bidirectional controls: shown, not applied
				fmt.Fprintf(&sb, "⟨U+%04X⟩", r)
			default:
				sb.WriteRune(r)
			}
			i += size
			continue
		}
		i++
	}
	return sb.String(), last
}

// skipEscape returns the index after the escape sequence starting at b[i].
func skipEscape(b []byte, i int) int {
	i++ // ESC
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '[':
		return skipCSI(b, i+1)
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST
		for i++; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	// Two- or three-byte escapes: intermediates 0x20-0x2f, then a final byte.
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	return min(i+1, len(b))
}

// skipCSI skips parameters and intermediates up to the final byte.
func skipCSI(b []byte, i int) int {
	for ; i < len(b); i++ {
		if b[i] >= 0x40 && b[i] <= 0x7e {
			return i + 1
		}
	}
	return i
}

// visible shows a job field (command, error, environment) as text with
// nothing hidden: control characters other than line breaks and tabs become
// their Unicode control pictures (ESC shows as ␛), and the invisible
// bidirectional controls, which can make a command read differently from
// what runs, show as ⟨U+202E⟩. HTML escaping is left to the templates.
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var sb strings.Builder
	for _, r := range s {
		switch {
		case !hidden(r):
			sb.WriteRune(r)
		case r < 0x20:
			sb.WriteRune(0x2400 + r)
		case r == 0x7f:
			sb.WriteRune('\u2421')
		default:
			fmt.Fprintf(&sb, "⟨U+%04X⟩", r)
		}
	}
	return sb.String()
}

// hidden reports whether a rune would not show as itself.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f || r == 0x061c:
		return true
	}
	return false
}
