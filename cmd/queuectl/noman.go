//go:build !man

package main

import "github.com/spf13/cobra"

// buildCmds: a build without -tags man has no man command (man.go).
func (a *app) buildCmds() []*cobra.Command { return nil }
