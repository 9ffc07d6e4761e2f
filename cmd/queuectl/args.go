package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuectl/queuectl/internal/duration"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Argument checks of the commands. cobra's own count "arg(s)" and, for a
// command that takes none, call a stray argument an unknown command;
// these say what the command takes. wrapArgs puts the command's name in
// front and makes them usage errors.

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("takes no arguments, got %q", args[0])
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("takes %s, got %d", arguments(n), len(args))
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return fmt.Errorf("requires at least %s", arguments(n))
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("takes at most %s, got %d", arguments(n), len(args))
		}
		return nil
	}
}

func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// commandName is the command as typed after the program's name ("retry",
// "queue pause"), for errors: main prefixes "queuectl: " to them.
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// durationValue is a duration flag that takes what the configuration file
// and the job JSON take (internal/duration): a Go duration, one starting
// with days ("1d12h"), or a number of seconds.
type durationValue struct{ d *time.Duration }

// durationVar defines a duration flag of that syntax, with default def.
func durationVar(f *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	f.Var(durationValue{p}, name, usage)
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v durationValue) String() string {
	if v.d == nil {
		return "0"
	}
	return flagDuration(*v.d)
}

func (v durationValue) Type() string { return "duration" }
