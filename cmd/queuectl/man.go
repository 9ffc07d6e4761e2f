//go:build man

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// buildCmds are the commands only some builds have: with -tags man, the
// man page writer. It stays out of the released binary because its
// Markdown renderer compiles dozens of regular expressions when the
// process starts, on every queuectl call.
func (a *app) buildCmds() []*cobra.Command { return []*cobra.Command{a.manCmd()} }

// manCmd writes a man page per command (make man runs it).
func (a *app) manCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write man pages for every command into DIR",
		Hidden: true,
		Args:   exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("create %s: %w", args[0], err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // pages stay the same from build to build
			header := &doc.GenManHeader{Title: "QUEUECTL", Section: "1", Source: "queuectl " + readVersion().Version}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			_, err := fmt.Fprintf(a.stdout, "man pages written to %s\n", args[0])
			return err
		},
	}
}
