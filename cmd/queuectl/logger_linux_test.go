package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal: a terminal to log to
// and the side that reads what was written.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// readTerminal returns what was written to the terminal whose other side
// is reader, at most 4 KiB.
func readTerminal(t *testing.T, reader *os.File) string {
	t.Helper()
	reader.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := reader.Read(buf)
	if err != nil {
		t.Fatalf("read the terminal: %v", err)
	}
	return string(buf[:n])
}

// With --log-format auto, a terminal gets readable lines, but under systemd
// (JOURNAL_STREAM set) the journal gets JSON even when stderr is a terminal.
func TestLoggerAutoFormat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		journal string
		json    bool
	}{
		{"terminal", "", false},
		{"terminal under systemd", "8:12345", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term, reader := openPTY(t)
			env := map[string]string{"JOURNAL_STREAM": tc.journal}
			a := newApp(strings.NewReader(""), &bytes.Buffer{}, term, func(k string) string { return env[k] })
			a.logLevel, a.logFormat = "info", "auto"
			log, err := a.logger(term)
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("job_id", "j1").Msg("hello")
			line := strings.TrimSpace(readTerminal(t, reader))
			if got := strings.HasPrefix(line, "{") && strings.Contains(line, `"job_id":"j1"`); got != tc.json {
				t.Fatalf("JSON = %v, want %v: %q", got, tc.json, line)
			}
			// Timestamps carry milliseconds, in UTC, in either format.
			if !regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`).MatchString(line) {
				t.Fatalf("no timestamp with milliseconds: %q", line)
			}
		})
	}
}

// --log-format console colours its lines only on a terminal, and not there
// when NO_COLOR is set: a log redirected to a file holds no escape codes.
func TestConsoleLogColoursOnlyATerminal(t *testing.T) {
	const esc = "\x1b["
	line := func(t *testing.T, env map[string]string, terminal bool) string {
		t.Helper()
		a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(k string) string { return env[k] })
		a.logLevel, a.logFormat = "info", "console"
		if !terminal {
			var file bytes.Buffer
			log, err := a.logger(&file)
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("job_id", "j1").Msg("hello")
			return file.String()
		}
		term, reader := openPTY(t)
		log, err := a.logger(term)
		if err != nil {
			t.Fatal(err)
		}
		log.Info().Str("job_id", "j1").Msg("hello")
		return readTerminal(t, reader)
	}
	if got := line(t, nil, false); strings.Contains(got, esc) || !strings.Contains(got, "job_id=j1") {
		t.Errorf("console log to a file: %q", got)
	}
	if got := line(t, nil, true); !strings.Contains(got, esc) {
		t.Errorf("console log to a terminal has no colour: %q", got)
	}
	if got := line(t, map[string]string{"NO_COLOR": "1"}, true); strings.Contains(got, esc) {
		t.Errorf("NO_COLOR: %q", got)
	}
}
