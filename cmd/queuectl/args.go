package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
