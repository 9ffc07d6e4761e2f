package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-isatty"
	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/queue"
	"github.com/queuectl/queuectl/queue/sqlite"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// app is the small factory every command gets its dependencies from.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	dbFlag    string
	file      fileOptions // -c FILE (or $QUEUECTL_CONFIG) and --var
	logLevel  string
	logFormat string
	now       func() time.Time

	loaded *config.File // the file named by -c, once loaded

	warnedReadable bool // warnReadable said it once
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, now: func() time.Time { return time.Now().UTC() }}
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "queuectl",
		Short: "A persistent job queue and cron scheduler for shell commands",
		Long: `queuectl runs shell commands in the background with retries, exponential
backoff and a dead-letter queue, on an embedded SQLite database (default) or
PostgreSQL. Data lives in $QUEUECTL_HOME (default ~/.queuectl).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.HiddenDefaultCmd = true // completion is documented in the README, not listed as a command
	root.Version = versionLine(readVersion())
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&a.dbFlag, "db", "", "database: a SQLite file path or a postgres:// URL (default $QUEUECTL_DB, else the database of -c FILE, else $QUEUECTL_HOME/queue.db)")
	a.file.flags(root.PersistentFlags(), a.getenv)
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "auto", "log format: auto (console on a terminal, else JSON), console, json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	// Every command checks the log flags, not only those that log: a typo
	// is a usage error wherever it is made.
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		_, err := a.logger(io.Discard)
		return err
	}
	root.AddCommand(
		a.enqueueCmd(),
		a.workerCmd(),
		a.statusCmd(),
		a.listCmd(),
		a.showCmd(),
		a.outputCmd(),
		a.waitCmd(),
		a.queueCmd(),
		a.dlqCmd(),
		a.retryCmd(),
		a.cancelCmd(),
		a.configCmd(),
		a.statsCmd(),
		a.cleanupCmd(),
		a.validateCmd(),
		a.runCmd(),
		a.serveCmd(),
		a.cronCmd(),
		a.migrateCmd(),
		a.backupCmd(),
		a.benchCmd(),
		a.versionCmd(),
	)
	root.AddCommand(a.buildCmds()...)
	a.completeArgs(root)
	wrapArgs(root)
	return root
}

// flagError rewords pflag's parse errors, which quote Go's strconv
// ("strconv.ParseInt: parsing \"x\": invalid syntax"), in the user's terms.
func flagError(err error) error {
	msg := err.Error()
	i := strings.Index(msg, ": strconv.")
	if i < 0 {
		return err
	}
	kind := "a valid value"
	switch {
	case strings.Contains(msg[i:], "ParseInt"), strings.Contains(msg[i:], "ParseUint"):
		kind = "a whole number"
	case strings.Contains(msg[i:], "ParseFloat"):
		kind = "a number"
	case strings.Contains(msg[i:], "ParseBool"):
		kind = "true or false"
	}
	if strings.HasSuffix(msg, "value out of range") {
		kind += " in range"
	}
	return fmt.Errorf("%s: want %s", msg[:i], kind)
}

// wrapArgs makes argument errors usage errors (exit 2), recursively. A group of
// subcommands refuses an unknown one (cobra would print the group's help
// and exit 0); the bare group prints its help.
func wrapArgs(c *cobra.Command) {
	check := c.Args
	switch {
	case check != nil:
	case c.HasSubCommands():
		check = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q", args[0])
			}
			return nil
		}
		if !c.Runnable() {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	if check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			switch {
			case err == nil:
				return nil
			case !cmd.HasParent(): // main prefixes "queuectl: " already
				return usageError{err}
			}
			return usageError{fmt.Errorf("%s: %w", commandName(cmd), err)}
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// homeDir is $QUEUECTL_HOME (default ~/.queuectl). It is not created: a
// command that only reads leaves no trace on a host where nothing has
// written yet. An existing one is tightened (tightenHome).
func (a *app) homeDir() (string, error) {
	h := a.getenv("QUEUECTL_HOME")
	if h == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find home directory (set QUEUECTL_HOME): %w", err)
		}
		h = filepath.Join(u, ".queuectl")
	}
	tightenHome(h, a.getenv("QUEUECTL_HOME") == "")
	return h, nil
}

// home is homeDir, created (0700) if it does not exist: for commands that
// write there (the database, workers' logs).
func (a *app) home() (string, error) {
	h, err := a.homeDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(h, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", h, err)
	}
	return h, nil
}

// tightenHome makes a home that queuectl created, and that earlier versions
// left readable by everyone, its owner's only: the default one, or one that
// holds queuectl's database. Best effort: the database files are created
// owner-only anyway.
func tightenHome(h string, isDefault bool) {
	fi, err := os.Stat(h)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if _, err := os.Stat(filepath.Join(h, "queue.db")); isDefault || err == nil {
		_ = os.Chmod(h, 0o700)
	}
}

// warnReadable warns, once per process, when the SQLite database at path
// (one given with --db or $QUEUECTL_DB, outside the home) can be read by
// users other than its owner: jobs carry commands and environments.
func (a *app) warnReadable(path string) {
	if a.warnedReadable || isPostgresURL(path) {
		return
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o044 == 0 {
		return
	}
	a.warnedReadable = true
	fmt.Fprintf(a.stderr, "queuectl: warning: %s is readable by other users (mode %04o); chmod 600 it and its -wal and -shm files\n",
		path, fi.Mode().Perm())
}

// dsn is the database the command uses: --db, then $QUEUECTL_DB, then the
// database of the configuration file (-c FILE or $QUEUECTL_CONFIG), then
// $QUEUECTL_HOME/queue.db. So every command of a service sees the
// database its `run -c FILE` uses. It creates nothing: a command that may
// create the database uses createDSN.
func (a *app) dsn() (string, error) {
	return a.resolveDSN(false)
}

// createDSN is dsn for a command that may create the database (one that
// writes): when it is the home's, the home is created.
func (a *app) createDSN() (string, error) {
	return a.resolveDSN(true)
}

func (a *app) resolveDSN(create bool) (string, error) {
	if a.dbFlag != "" {
		if err := checkDSN("--db", a.dbFlag); err != nil {
			return "", err
		}
		a.warnReadable(a.dbFlag)
		return a.dbFlag, nil
	}
	if d := a.getenv("QUEUECTL_DB"); d != "" {
		if err := checkDSN("QUEUECTL_DB", d); err != nil {
			return "", err
		}
		a.warnReadable(d)
		return d, nil
	}
	if a.file.path != "" {
		f, err := a.configFile()
		if err != nil {
			return "", err
		}
		if f.Database != "" {
			return f.Database, nil
		}
	}
	home := a.homeDir
	if create {
		home = a.home
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "queue.db"), nil
}

// hostName identifies this host to other workers: $QUEUECTL_HOST, else the
// host name. Set QUEUECTL_HOST where host names are not unique (containers).
// Workers on the same host detect each other's death by process id; across
// hosts only by lease expiry.
func (a *app) hostName() string {
	if h := a.getenv("QUEUECTL_HOST"); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}

func isPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// urlScheme matches the start of a URL: a scheme, then "://".
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// checkDSN refuses a database given by where (--db or QUEUECTL_DB) that is
// a URL of another kind than postgres:// or postgresql://, which would
// otherwise be taken for a SQLite file path. A path may hold ':' anywhere
// else. Only the scheme is quoted: the rest may hold a password.
func checkDSN(where, dsn string) error {
	if m := urlScheme.FindString(dsn); m != "" && !isPostgresURL(dsn) {
		return usagef("%s: unsupported database URL %q: use a SQLite file path or a postgres:// or postgresql:// URL", where, m+"…")
	}
	if isPostgresURL(dsn) {
		// A URL the driver cannot read (sslmode=bogus, a bad port) is bad
		// input, not a database that does not answer. The driver's message
		// hides the password.
		if _, err := pgconn.ParseConfig(dsn); err != nil {
			return usagef("%s: %v", where, err)
		}
	}
	return nil
}

// openStore opens the database named by dsn.
func openStore(ctx context.Context, dsn string) (queue.Store, error) {
	return openStoreWith(ctx, dsn, sqlite.Options{})
}

// openStoreWith is openStore with the options a SQLite store opens with.
func openStoreWith(ctx context.Context, dsn string, o sqlite.Options) (queue.Store, error) {
	if isPostgresURL(dsn) {
		return openPostgres(ctx, dsn)
	}
	return sqlite.OpenWith(ctx, dsn, o)
}

// store opens the command's database.
func (a *app) store(ctx context.Context) (queue.Store, error) {
	dsn, err := a.createDSN()
	if err != nil {
		return nil, err
	}
	return openStore(ctx, dsn)
}

// openStore opens the command's database with the options a SQLite store
// opens with. A SQLite database that must exist and does not is bad input
// naming the path and where it came from; the error wraps
// sqlite.ErrNoDatabase.
func (a *app) openStore(cmd *cobra.Command, o sqlite.Options) (queue.Store, error) {
	resolve := a.createDSN
	if o.MustExist {
		resolve = a.dsn // nothing is created, not even the home
	}
	dsn, err := resolve()
	if err != nil {
		return nil, err
	}
	st, err := openStoreWith(cmd.Context(), dsn, o)
	if errors.Is(err, sqlite.ErrNoDatabase) {
		abs, _ := filepath.Abs(dsn)
		hint := ""
		switch {
		case a.dbFlag != "":
			hint = "; check --db"
		case a.getenv("QUEUECTL_DB") != "":
			hint = "; check QUEUECTL_DB"
		}
		return nil, usageError{fmt.Errorf("%s: %w at %s: nothing has written to it yet (enqueue, worker start and migrate create it)%s",
			commandName(cmd), sqlite.ErrNoDatabase, abs, hint)}
	}
	return st, err
}

// withStore opens the store, runs fn, and closes the store.
func (a *app) withStore(cmd *cobra.Command, fn func(ctx context.Context, st queue.Store) error) error {
	return a.withStoreOpts(cmd, sqlite.Options{}, fn)
}

// withReadStore is withStore for a command that only reads: a SQLite
// database that does not exist is not created (a mistyped --db would
// otherwise leave an empty database behind and show it as empty), and is
// bad input naming the path.
func (a *app) withReadStore(cmd *cobra.Command, fn func(ctx context.Context, st queue.Store) error) error {
	return a.withStoreOpts(cmd, sqlite.Options{MustExist: true}, fn)
}

// withStoreOpts is withStore with the options a SQLite store opens with.
func (a *app) withStoreOpts(cmd *cobra.Command, o sqlite.Options, fn func(ctx context.Context, st queue.Store) error) error {
	ctx := cmd.Context()
	st, err := a.openStore(cmd, o)
	if err != nil {
		return err
	}
	defer st.Close()
	err = fn(ctx, st)
	if log, lerr := a.logger(a.stderr); lerr == nil {
		logWriteStats(log.Debug(), st)
	}
	return err
}

// logger builds the structured logger for long-running commands.
func (a *app) logger(w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(a.logLevel)
	if err != nil || a.logLevel == "" {
		return zerolog.Nop(), usagef("--log-level %q: use debug, info, warn or error", a.logLevel)
	}
	var out io.Writer = w
	console := zerolog.ConsoleWriter{Out: w, TimeFormat: logTimeFormat,
		// Colours are escape codes: only for a terminal, and not when
		// NO_COLOR asks for none (no-color.org).
		NoColor: !isTerminal(w) || a.getenv("NO_COLOR") != "",
		// Field values carry job commands and errors: escape what a
		// terminal would act on.
		FormatFieldValue: func(i any) string { return printable(fmt.Sprintf("%s", i)) },
		FormatMessage: func(i any) string {
			if i == nil {
				return ""
			}
			return printable(fmt.Sprintf("%s", i))
		},
	}
	switch a.logFormat {
	case "json":
	case "console":
		out = console
	case "auto", "":
		// Under systemd (JOURNAL_STREAM set) the journal gets JSON lines,
		// whatever the stream is.
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) && a.getenv("JOURNAL_STREAM") == "" {
			out = console
		}
	default:
		return zerolog.Nop(), usagef("--log-format %q: use auto, console or json", a.logFormat)
	}
	return zerolog.New(out).Level(lvl).Hook(timestampHook{a.now}), nil
}

// logTimeFormat is RFC 3339 with milliseconds, in UTC.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// timestampHook stamps each log event with milliseconds; zerolog's own
// Timestamp() would need its package-level format changed.
type timestampHook struct{ now func() time.Time }

func (h timestampHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, h.now().UTC().Format(logTimeFormat))
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table returns an aligned table writer; call Flush when done.
func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
}

// fmtTime shows a time in UTC, or "-" when zero.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// truncate shortens s to n runes for tables, escaping what a terminal
// would act on.
func truncate(s string, n int) string {
	s = printable(strings.ReplaceAll(s, "\n", " "))
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
