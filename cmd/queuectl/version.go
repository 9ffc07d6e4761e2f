package main

import (
	"fmt"
	"net/url"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what the Go toolchain recorded about this binary: the
// module version (set by `go install module@version`, "(devel)" for a build
// from a clone) and, when built from a git checkout with VCS stamping, the
// commit and its time.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

func readVersion() buildVersion {
	v := buildVersion{Version: "unknown", Commit: "unknown", BuildDate: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.BuildDate = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionLine is the one line --version and version print.
func versionLine(v buildVersion) string {
	commit := v.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if v.Modified {
		commit += "+dirty"
	}
	return fmt.Sprintf("queuectl %s (commit %s, built %s)", v.Version, commit, v.BuildDate)
}

func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := readVersion()
			if asJSON {
				return a.printJSON(v)
			}
			_, err := fmt.Fprintln(a.stdout, versionLine(v))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (with the Go version)")
	return cmd
}

// redactDSN removes a password from a postgres:// URL, for logs.
func redactDSN(dsn string) string {
	if !isPostgresURL(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
