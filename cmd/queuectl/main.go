// Command queuectl is a persistent job queue and cron scheduler for shell
// commands. This package holds the cobra commands and the wiring: it is the
// only package that knows every concrete part (stores, executor, config,
// scheduler). Errors become exit codes in one place, exitCode.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	_ "time/tzdata" // time zones of cron jobs work without the host's zone files

	"github.com/queuectl/queuectl/queue"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure or not found
	exitUsage   = 2 // invalid input or usage
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr, os.Getenv)
	root := app.rootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var silent silentError
	if !errors.As(err, &silent) {
		fmt.Fprintln(stderr, "queuectl: "+oneLine(err.Error()))
	}
	return exitCode(err)
}

// usageError marks invalid input or usage (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// silentError carries an exit code for a failure already reported (for
// example diagnostics printed by validate).
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCode maps an error to the process exit code: the one place that does.
func exitCode(err error) int {
	var silent silentError
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, &usage),
		errors.Is(err, queue.ErrInvalid),
		errors.Is(err, queue.ErrDuplicate):
		return exitUsage
	default:
		return exitFailure
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
