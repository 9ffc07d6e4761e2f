package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // time zone checks must not depend on the host's zoneinfo

	"github.com/hashicorp/hcl/v2"

	"github.com/queuectl/queuectl/queue"
)

// fakeEnv returns a LookupEnv backed by env, so tests never read the real
// environment.
func fakeEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parseOK parses src, failing the test on any error diagnostic.
func parseOK(t *testing.T, src string, opts Options) *File {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = fakeEnv(nil)
	}
	f, diags := Parse([]byte(src), "test.hcl", opts)
	if diags.HasErrors() {
		t.Fatalf("unexpected diagnostics:\n%s", render(t, "test.hcl", src, diags))
	}
	return f
}

// parseErr parses src and returns its error diagnostics, failing the test if
// there are none.
func parseErr(t *testing.T, src string, opts Options) hcl.Diagnostics {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = fakeEnv(nil)
	}
	_, diags := Parse([]byte(src), "test.hcl", opts)
	if !diags.HasErrors() {
		t.Fatalf("no error for:\n%s", src)
	}
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return errs
}

func render(t *testing.T, filename, src string, diags hcl.Diagnostics) string {
	t.Helper()
	var b strings.Builder
	if err := WriteDiagnostics(&b, map[string][]byte{filename: []byte(src)}, diags); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func TestLoadExample(t *testing.T) {
	const path = "../examples/queue.hcl"
	f, diags := Load(path, Options{LookupEnv: fakeEnv(map[string]string{
		"TMPDIR":  "/scratch",
		"APP_ENV": "Prod",
	})})
	if diags.HasErrors() || len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", render(t, path, mustRead(t, path), diags))
	}
	exampleDir, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}

	if f.Path != path {
		t.Errorf("Path = %q, want %q", f.Path, path)
	}
	if want := filepath.Join(exampleDir, "queue.db"); f.Database != want {
		t.Errorf("Database = %q, want %q", f.Database, want)
	}
	wantDefaults := Retry{MaxRetries: ptr(3), BackoffBase: ptr(2.0), MaxBackoff: ptr(time.Hour), Timeout: ptr(10 * time.Minute)}
	if !reflect.DeepEqual(f.Defaults, wantDefaults) {
		t.Errorf("Defaults = %s, want %s", fmtRetry(f.Defaults), fmtRetry(wantDefaults))
	}

	day := 24 * time.Hour
	if want := (Retention{Completed: 7 * day, Dead: 30 * day, Cancelled: 7 * day, Output: 3 * day}); f.Retention != want {
		t.Errorf("Retention = %+v, want %+v", f.Retention, want)
	}
	wantQueues := []Queue{
		{Name: "default", Concurrency: 4},
		{Name: "reports", Concurrency: 1, MaxRunning: 2, RateCount: 30, RatePer: time.Minute, Retry: Retry{MaxRetries: ptr(5), BackoffBase: ptr(1.5), MaxBackoff: ptr(10 * time.Minute), Timeout: ptr(24 * time.Hour)}},
	}
	if !reflect.DeepEqual(f.Queues, wantQueues) {
		t.Errorf("Queues = %+v, want %+v", f.Queues, wantQueues)
	}

	wantJobs := []Job{
		{
			Name: "nightly-backup", Queue: "default", Schedule: "0 2 * * *", TimeZone: "Europe/Berlin",
			Command: `mkdir -p "backups" && queuectl -c queue.hcl backup "backups/queue-$(date +%F)-$QUEUECTL_JOB_ID.db"`,
			Dir:     exampleDir,
			Env:     map[string]string{"APP_ENV": "prod", "TMPDIR": "/scratch"},
			Overlap: "skip", CatchUp: "latest", MaxCatchUp: 100, Jitter: 30 * time.Second, Priority: 5, Enabled: true,
			Retry: Retry{Timeout: ptr(30 * time.Minute)},
		},
		{
			Name: "daily-report", Queue: "reports", Schedule: "30 6 * * MON-FRI", TimeZone: "America/New_York",
			Command: `echo "report for prod, $(date +%F)" && queuectl -c queue.hcl stats --since 24h`,
			Dir:     exampleDir,
			Overlap: "allow", CatchUp: "all", MaxCatchUp: 3, Enabled: true,
			Retry: Retry{MaxRetries: ptr(2)},
		},
		{
			Name: "weekly-cleanup", Queue: "default", Schedule: "15 0 4 * * SUN", TimeZone: "UTC",
			Command: "scripts/prune.sh \"backups\" 14\nscripts/prune.sh \"${QUEUECTL_HOME:-$HOME/.queuectl}/logs\" 30\n",
			Dir:     exampleDir,
			Overlap: "skip", CatchUp: "latest", MaxCatchUp: 100, Priority: -1, Enabled: true,
			Retry: Retry{BackoffBase: ptr(3.0), MaxBackoff: ptr(2 * time.Hour)},
		},
		{
			Name: "heartbeat", Queue: "default", Schedule: "@every 90s", TimeZone: "UTC",
			Command: "curl -fsS https://status.example.com/ping",
			Dir:     exampleDir, // the file's directory, by default
			Overlap: "allow", CatchUp: "none", MaxCatchUp: 100, Enabled: false,
			Retry: Retry{Timeout: ptr(20 * time.Second)},
		},
	}
	if len(f.Jobs) != len(wantJobs) {
		t.Fatalf("got %d jobs, want %d", len(f.Jobs), len(wantJobs))
	}
	for i, want := range wantJobs {
		got := f.Jobs[i]
		t.Run(want.Name, func(t *testing.T) {
			gotRetry, wantRetry := got.Retry, want.Retry
			got.Retry, want.Retry = Retry{}, Retry{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("job =\n%+v\nwant\n%+v", got, want)
			}
			if !reflect.DeepEqual(gotRetry, wantRetry) {
				t.Errorf("Retry = %s, want %s", fmtRetry(gotRetry), fmtRetry(wantRetry))
			}
			if _, err := f.Jobs[i].ParseSchedule(); err != nil {
				t.Errorf("ParseSchedule: %v", err)
			}
		})
	}

	// job > queue > defaults.
	report := f.Jobs[1]
	eff := f.RetryFor(report.Queue, report.Retry)
	wantEff := Retry{MaxRetries: ptr(2), BackoffBase: ptr(1.5), MaxBackoff: ptr(10 * time.Minute), Timeout: ptr(24 * time.Hour)}
	if !reflect.DeepEqual(eff, wantEff) {
		t.Errorf("RetryFor(daily-report) = %s, want %s", fmtRetry(eff), fmtRetry(wantEff))
	}
	backup := f.Jobs[0]
	eff = f.RetryFor(backup.Queue, backup.Retry)
	wantEff = Retry{MaxRetries: ptr(3), BackoffBase: ptr(2.0), MaxBackoff: ptr(time.Hour), Timeout: ptr(30 * time.Minute)}
	if !reflect.DeepEqual(eff, wantEff) {
		t.Errorf("RetryFor(nightly-backup) = %s, want %s", fmtRetry(eff), fmtRetry(wantEff))
	}
}

func TestLoadExampleWithVars(t *testing.T) {
	f, diags := Load("../examples/queue.hcl", Options{
		Vars:      map[string]string{"backup_dir": "/mnt/b", "report_hour": "7"},
		LookupEnv: fakeEnv(nil),
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got, want := f.Jobs[0].Command, `mkdir -p "/mnt/b" && queuectl -c queue.hcl backup "/mnt/b/queue-$(date +%F)-$QUEUECTL_JOB_ID.db"`; got != want {
		t.Errorf("nightly-backup command = %q, want %q", got, want)
	}
	if got, want := f.Jobs[0].Env["TMPDIR"], "/tmp"; got != want {
		t.Errorf("TMPDIR = %q, want the coalesce fallback %q", got, want)
	}
	if got, want := f.Jobs[1].Schedule, "30 7 * * MON-FRI"; got != want {
		t.Errorf("daily-report schedule = %q, want %q", got, want)
	}
	if got, want := f.Jobs[1].Command, `echo "report for dev, $(date +%F)" && queuectl -c queue.hcl stats --since 24h`; got != want {
		t.Errorf("daily-report command = %q, want %q", got, want)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fmtRetry(r Retry) string {
	var parts []string
	if r.MaxRetries != nil {
		parts = append(parts, fmt.Sprintf("max_retries=%d", *r.MaxRetries))
	}
	if r.BackoffBase != nil {
		parts = append(parts, fmt.Sprintf("backoff_base=%g", *r.BackoffBase))
	}
	if r.MaxBackoff != nil {
		parts = append(parts, fmt.Sprintf("max_backoff=%s", *r.MaxBackoff))
	}
	if r.Timeout != nil {
		parts = append(parts, fmt.Sprintf("timeout=%s", *r.Timeout))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func TestDefaults(t *testing.T) {
	f := parseOK(t, `
job "minimal" {
  schedule = "@daily"
  command  = "true"
}
`, Options{})
	if f.Database != "" {
		t.Errorf("Database = %q, want unset", f.Database)
	}
	if !reflect.DeepEqual(f.Defaults, Retry{}) {
		t.Errorf("Defaults = %s, want all unset", fmtRetry(f.Defaults))
	}
	wantQueues := []Queue{{Name: "default", Concurrency: 1, Implicit: true}}
	if !reflect.DeepEqual(f.Queues, wantQueues) {
		t.Errorf("Queues = %+v, want the implicit default queue %+v", f.Queues, wantQueues)
	}
	want := Job{
		Name: "minimal", Queue: "default", Schedule: "@daily", TimeZone: "UTC", Command: "true",
		Overlap: "skip", CatchUp: "latest", MaxCatchUp: 100, Enabled: true,
	}
	// A cron job runs in the file's directory unless dir says otherwise.
	if wd, err := os.Getwd(); err == nil {
		want.Dir = wd // the directory of "test.hcl"
	}
	if len(f.Jobs) != 1 || !reflect.DeepEqual(f.Jobs[0], want) {
		t.Errorf("Jobs = %+v, want [%+v]", f.Jobs, want)
	}
	if q, ok := f.Queue("default"); !ok || !q.Implicit || q.Concurrency != 1 {
		t.Errorf(`Queue("default") = %+v, %v`, q, ok)
	}
	if _, ok := f.Queue("other"); ok {
		t.Error(`Queue("other") found`)
	}
}

func TestQueueBlockWithoutConcurrency(t *testing.T) {
	f := parseOK(t, `
queue "bulk" {}
job "j" {
  queue    = "bulk"
  schedule = "@daily"
  command  = "true"
}
`, Options{})
	if len(f.Queues) != 2 || f.Queues[0].Concurrency != 1 || f.Queues[1].Name != "default" || !f.Queues[1].Implicit {
		t.Errorf("Queues = %+v", f.Queues)
	}
}

func TestJobMayReferToQueueDeclaredLater(t *testing.T) {
	f := parseOK(t, `
job "j" {
  queue    = "late"
  schedule = "@daily"
  command  = "true"
}
queue "late" { concurrency = 2 }
`, Options{})
	if f.Jobs[0].Queue != "late" {
		t.Errorf("Queue = %q", f.Jobs[0].Queue)
	}
}

func TestVariablePrecedence(t *testing.T) {
	const src = `
variable "dir" { default = "from-default" }
job "j" {
  schedule = "@daily"
  command  = "ls ${var.dir}"
}
`
	tests := []struct {
		name string
		env  map[string]string
		vars map[string]string
		want string
	}{
		{"default", nil, nil, "ls from-default"},
		{"environment beats default", map[string]string{"QUEUECTL_VAR_dir": "from-env"}, nil, "ls from-env"},
		{"Vars beat environment", map[string]string{"QUEUECTL_VAR_dir": "from-env"}, map[string]string{"dir": "from-vars"}, "ls from-vars"},
		{"Vars beat default", nil, map[string]string{"dir": "from-vars"}, "ls from-vars"},
		{"empty values count as set", map[string]string{"QUEUECTL_VAR_dir": ""}, nil, "ls "},
		{"variable env names are case-sensitive", map[string]string{"QUEUECTL_VAR_DIR": "wrong"}, nil, "ls from-default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseOK(t, src, Options{Vars: tc.vars, LookupEnv: fakeEnv(tc.env)})
			if got := f.Jobs[0].Command; got != tc.want {
				t.Errorf("Command = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVariableErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		opts    Options
		summary string
		detail  string
	}{
		{
			name:    "no default and not set",
			src:     `variable "x" {}`,
			summary: "Missing value for variable",
			detail:  "--var x=VALUE or the environment variable QUEUECTL_VAR_x",
		},
		{
			name:    "undeclared --var",
			src:     `variable "x" { default = 1 }`,
			opts:    Options{Vars: map[string]string{"y": "1"}},
			summary: "Value for undeclared variable",
			detail:  `variable "y"`,
		},
		{
			name:    "not a number",
			src:     `variable "n" { default = 5 }`,
			opts:    Options{Vars: map[string]string{"n": "five"}},
			summary: "Invalid value for variable",
			detail:  `"five" given by --var n is not a valid number`,
		},
		{
			name:    "not a bool from the environment",
			src:     `variable "b" { default = true }`,
			opts:    Options{LookupEnv: fakeEnv(map[string]string{"QUEUECTL_VAR_b": "maybe"})},
			summary: "Invalid value for variable",
			detail:  "environment variable QUEUECTL_VAR_b",
		},
		{
			name:    "complex default",
			src:     `variable "l" { default = ["a"] }`,
			opts:    Options{Vars: map[string]string{"l": "b"}},
			summary: "Invalid value for variable",
			detail:  "cannot be set from a string",
		},
		{
			name:    "duplicate",
			src:     "variable \"x\" { default = 1 }\nvariable \"x\" { default = 2 }",
			summary: "Duplicate variable",
			detail:  "first defined at test.hcl:1,1",
		},
		{
			name:    "default refers to a variable",
			src:     "variable \"x\" { default = 1 }\nvariable \"y\" { default = var.x }",
			summary: "Variables not allowed",
		},
		{
			name:    "undeclared reference",
			src:     "job \"j\" {\n  schedule = \"@daily\"\n  command  = \"${var.nope}\"\n}",
			summary: "Unsupported attribute",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags := parseErr(t, tc.src, tc.opts)
			d := findDiag(t, diags, tc.summary)
			if !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("detail %q does not contain %q", d.Detail, tc.detail)
			}
		})
	}
}

// With UndeclaredVarsWarn a value for a variable the file does not
// declare is a warning, and the file is used.
func TestUndeclaredVarsWarn(t *testing.T) {
	_, diags := Parse([]byte(`variable "x" { default = 1 }`), "test.hcl",
		Options{Vars: map[string]string{"gone": "1"}, LookupEnv: fakeEnv(nil), UndeclaredVarsWarn: true})
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Value for undeclared variable" ||
		!strings.Contains(diags[0].Detail, `variable "gone"`) {
		t.Fatalf("diagnostics: %v; want one warning naming the variable", diags)
	}
}

func TestTypedVariableOverride(t *testing.T) {
	f := parseOK(t, `
variable "retries" { default = 1 }
variable "on"      { default = true }
defaults { max_retries = var.retries }
job "j" {
  schedule = "@daily"
  command  = "true"
  enabled  = var.on
}
`, Options{Vars: map[string]string{"retries": "7", "on": "false"}})
	if got := *f.Defaults.MaxRetries; got != 7 {
		t.Errorf("max_retries = %d, want 7", got)
	}
	if f.Jobs[0].Enabled {
		t.Error("enabled = true, want false from --var on=false")
	}
}

func TestLocals(t *testing.T) {
	f := parseOK(t, `
locals {
  cmd = "${local.base} --flag"  # refers to a later local
}
locals {
  base  = "${var.bin} run"
  count = length(local.items)
  items = ["a", "b"]
}
variable "bin" { default = "/usr/bin/tool" }
job "j" {
  schedule = "@daily"
  command  = "${local.cmd} ${local.count}"
}
`, Options{})
	if got, want := f.Jobs[0].Command, "/usr/bin/tool run --flag 2"; got != want {
		t.Errorf("Command = %q, want %q", got, want)
	}
}

func TestLocalErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
	}{
		{"self reference", `locals { a = local.a }`, "Circular reference in locals", "local.a -> local.a"},
		{"three-way cycle", "locals {\n a = local.b\n b = local.c\n c = local.a\n}", "Circular reference in locals", "local.a -> local.b -> local.c -> local.a"},
		{"duplicate across blocks", "locals { a = 1 }\nlocals { a = 2 }", "Duplicate local value", "first defined at test.hcl:1,10"},
		{"unknown local", `locals { a = local.nope }`, "Unsupported attribute", ""},
		{"blocks inside locals", "locals {\n  inner {}\n}", `Unexpected "inner" block`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := findDiag(t, parseErr(t, tc.src, Options{}), tc.summary)
			if !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("detail %q does not contain %q", d.Detail, tc.detail)
			}
		})
	}
}

// TestCycleDoesNotCascade checks that values depending on a failed local
// produce no further errors.
func TestCycleDoesNotCascade(t *testing.T) {
	diags := parseErr(t, `
locals {
  a = local.b
  b = local.a
}
job "j" {
  schedule = local.a
  command  = "echo ${local.b}"
  timeout  = local.a
}
`, Options{})
	if len(diags) != 1 {
		t.Errorf("got %d errors, want only the cycle:\n%s", len(diags), diags)
	}
}

func TestFunctions(t *testing.T) {
	env := fakeEnv(map[string]string{"HOME": "/home/q", "EMPTY": ""})
	tests := []struct {
		expr string
		want string
	}{
		{`env("HOME")`, "/home/q"},
		{`format("[%s]", env("UNSET"))`, "[]"},
		{`coalesce(env("UNSET"), "fallback")`, "fallback"},
		{`coalesce(env("EMPTY"), env("HOME"))`, "/home/q"},
		{`upper("abc")`, "ABC"},
		{`lower("ABC")`, "abc"},
		{`title("hello world")`, "Hello World"},
		{`format("%s-%03d", "x", 7)`, "x-007"},
		{`join(",", ["a", "b"])`, "a,b"},
		{`join("+", split(",", "a,b,c"))`, "a+b+c"},
		{`replace("a-b-c", "-", "_")`, "a_b_c"},
		{`trimspace("  x  ")`, "x"},
		{`substr("hello", 1, 3)`, "ell"},
		{`join(",", concat(["a"], ["b"]))`, "a,b"},
		{`jsonencode({a = 1})`, `{"a":1}`},
		{`min(3, 1, 2)`, "1"},
		{`max(3, 1, 2)`, "3"},
		{`length("héllo")`, "5"},
		{`length(["a", "b"])`, "2"},
		{`length({a = 1, b = 2})`, "2"},
		{`contains(["a", "b"], "b")`, "true"},
		{`join(",", keys({b = 1, a = 2}))`, "a,b"},
		{`join(",", values({b = "x", a = "y"}))`, "y,x"},
		{`lookup({a = "x"}, "b", "dflt")`, "dflt"},
		{`tostring(5)`, "5"},
		{`tonumber("5") + 1`, "6"},
		{`tobool("true")`, "true"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			src := "job \"j\" {\n  schedule = \"@daily\"\n  command  = " + tc.expr + "\n}\n"
			f := parseOK(t, src, Options{LookupEnv: env})
			if got := f.Jobs[0].Command; got != tc.want {
				t.Errorf("%s = %q, want %q", tc.expr, got, tc.want)
			}
		})
	}
	for _, name := range []string{"file", "templatefile", "fileexists", "abspath", "timestamp", "uuid"} {
		t.Run("no "+name, func(t *testing.T) {
			src := "job \"j\" {\n  schedule = \"@daily\"\n  command  = " + name + "(\"x\")\n}\n"
			findDiag(t, parseErr(t, src, Options{}), "Call to unknown function")
		})
	}
}

func TestLookupEnvDefaultsToProcessEnv(t *testing.T) {
	t.Setenv("QUEUECTL_TEST_ENV_FUNC", "from-process")
	t.Setenv("QUEUECTL_VAR_procvar", "var-from-process")
	f, diags := Parse([]byte(`
variable "procvar" {}
job "j" {
  schedule = "@daily"
  command  = "${env("QUEUECTL_TEST_ENV_FUNC")} ${var.procvar}"
}
`), "test.hcl", Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got, want := f.Jobs[0].Command, "from-process var-from-process"; got != want {
		t.Errorf("Command = %q, want %q", got, want)
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		expr string
		want time.Duration
	}{
		{`"90s"`, 90 * time.Second},
		{`"1h30m"`, 90 * time.Minute},
		{`"1d"`, 24 * time.Hour},
		{`"1d12h"`, 36 * time.Hour},
		{`45`, 45 * time.Second},
		{`1.5`, 1500 * time.Millisecond},
		{`"${2 * 30}m"`, time.Hour},
		{`"30"`, 30 * time.Second},
		{`0`, 0},
		{`"30d"`, 30 * 24 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			f := parseOK(t, "defaults {\n  timeout = "+tc.expr+"\n}\n", Options{})
			if got := *f.Defaults.Timeout; got != tc.want {
				t.Errorf("timeout = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValueErrors(t *testing.T) {
	job := func(attrs string) string {
		return "job \"j\" {\n  schedule = \"@daily\"\n  command  = \"true\"\n  " + attrs + "\n}\n"
	}
	tests := []struct {
		name, src, summary string
	}{
		{"timeout over 30d", "defaults {\n  timeout = \"31d\"\n}", "Invalid timeout"},
		{"negative timeout", "defaults {\n  timeout = -1\n}", "Invalid timeout"},
		{"zero hook_timeout", "defaults {\n  hook_timeout = 0\n}", "Invalid hook_timeout"},
		{"hook_timeout over 24h", "queue \"q\" {\n  hook_timeout = \"25h\"\n}", "Invalid hook_timeout"},
		{"zero max_backoff", "defaults {\n  max_backoff = 0\n}", "Invalid max_backoff"},
		{"max_retries over limit", "defaults {\n  max_retries = 1001\n}", "Invalid max_retries"},
		{"backoff_base over limit", "defaults {\n  backoff_base = 101\n}", "Invalid backoff_base"},
		{"priority over limit", job(`priority = 1000001`), "Invalid priority"},
		{"name too long", "queue \"" + strings.Repeat("q", 201) + "\" {}", "Invalid queue name"},
		{"negative max_backoff", "defaults {\n  max_backoff = -5\n}", "Invalid max_backoff"},
		{"duration of wrong type", "defaults {\n  timeout = true\n}", "Incorrect attribute value type"},
		{"duration list", "defaults {\n  timeout = [1]\n}", "Incorrect attribute value type"},
		{"backoff_base below 1", "defaults {\n  backoff_base = 0.9\n}", "Invalid backoff_base"},
		{"fractional count", "defaults {\n  max_retries = 1.5\n}", "Invalid max_retries"},
		{"huge count", "defaults {\n  max_retries = 1e12\n}", "Number out of range"},
		{"string count", "defaults {\n  max_retries = \"three\"\n}", "Incorrect attribute value type"},
		{"two defaults blocks", "defaults {}\ndefaults {}", "Duplicate defaults block"},
		{"invalid queue name", "queue \"has space\" {}", "Invalid queue name"},
		{"invalid job name", "job \"\" {\n  schedule = \"@daily\"\n  command = \"x\"\n}", "Invalid job name"},
		{"invalid variable name", "variable \"1x\" { default = 1 }", "Invalid variable name"},
		{"blank command", "job \"j\" {\n  schedule = \"@daily\"\n  command  = \"   \"\n}", "Empty command"},
		{"missing schedule", "job \"j\" {\n  command = \"x\"\n}", "Missing required argument"},
		{"null command", "job \"j\" {\n  schedule = \"@daily\"\n  command  = null\n}", "Missing value"},
		{"env not a map", job(`env = "A=B"`), "Incorrect attribute value type"},
		{"env name with =", job(`env = { "A=B" = "c" }`), "Invalid environment variable name"},
		{"env value NUL", job(`env = { A = "x\u0000y" }`), "Invalid environment variable value"},
		{"env sets QUEUECTL_JOB_ID", job(`env = { QUEUECTL_JOB_ID = "x" }`), "Reserved environment variable"},
		{"dir with timeout below 1ms", job(`timeout = "1us"`), "Invalid timeout"},
		{"negative jitter", job(`jitter = "-1s"`), "Invalid jitter"},
		{"zero max_catch_up", job(`max_catch_up = 0`), "Invalid max_catch_up"},
		{"enabled not bool", job(`enabled = "yes"`), "Incorrect attribute value type"},
		{"time zone Local", job(`time_zone = "Local"`), "Invalid time zone"},
		{"empty time zone", job(`time_zone = ""`), "Invalid time zone"},
		{"bare TZ schedule", "job \"j\" {\n  schedule = \"TZ=\"\n  command  = \"x\"\n}", "Invalid schedule"},
		{"CRON_TZ=x schedule", "job \"j\" {\n  schedule = \"CRON_TZ=x\"\n  command  = \"x\"\n}", "Invalid schedule"},
		{"empty schedule", "job \"j\" {\n  schedule = \"\"\n  command  = \"x\"\n}", "Invalid schedule"},
		{"ftp database", `database = "ftp://x/y"`, "Unsupported database URL"},
		{"upper-case postgres", `database = "POSTGRES://db/q"`, "Unsupported database URL"},
		{"queue label missing", "queue {}", "Missing name for queue"},
		{"backoff_base overflows float64", "defaults {\n  backoff_base = 1e400\n}", "Number out of range"},
		{"undeclared queue, none declared", job(`queue = "mail"`), "Undeclared queue"},
		{"duration overflows", "defaults {\n  timeout = 1e12\n}", "Invalid duration"},
		// Linux starts no process given a longer argument or variable, so
		// the store refuses such a job: every fire would fail.
		{"command too long", "job \"j\" {\n  schedule = \"@daily\"\n  command  = \"" + strings.Repeat("x", 128<<10) + "\"\n}", "Invalid command"},
		{"env entry too long", job(`env = { A = "` + strings.Repeat("x", 128<<10-2) + `" }`), "Invalid environment variable value"},
		{"env too large in all", job(`env = { ` + bigEnv(9) + ` }`), "Invalid environment"},
		// HCL keeps the last of two keys: the reader of the file who sees
		// the first would be misled.
		{"env key given twice", job(`env = { A = "1", B = "x", A = "2" }`), "Duplicate key"},
		{"env key given twice, once quoted", job(`env = { PATH = "/bin", "PATH" = "/tmp" }`), "Duplicate key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			findDiag(t, parseErr(t, tc.src, Options{}), tc.summary)
		})
	}
}

// A whole number too large to be one says the attribute's own range, not
// that of the integer type.
func TestHugeWholeNumberNamesItsRange(t *testing.T) {
	for _, tc := range []struct{ src, detail string }{
		{"defaults {\n  max_retries = 1e12\n}", "max_retries must be from 0 to 1000, got 1e+12."},
		{"queue \"q\" {\n  max_running = -1e12\n}", "max_running must be from 0 (no limit) to 1000000, got -1e+12."},
		{"queue \"q\" {\n  concurrency = 1e12\n}", "concurrency must be from 1 to 1000, got 1e+12."},
		{"queue \"q\" {\n  concurrency = -1e12\n}", "concurrency must be from 1 to 1000, got -1e+12."},
	} {
		d := findDiag(t, parseErr(t, tc.src, Options{}), "Number out of range")
		if d.Detail != tc.detail {
			t.Errorf("%s: detail %q, want %q", tc.src, d.Detail, tc.detail)
		}
	}
}

func TestDatabase(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		value string
		want  string
	}{
		{"queue.db", filepath.Join(dir, "queue.db")},
		{"data/../state/q.db", filepath.Join(dir, "state", "q.db")},
		{"/var/lib/queuectl/q.db", "/var/lib/queuectl/q.db"},
		{"postgres://user:pw@db:5432/queue?sslmode=disable", "postgres://user:pw@db:5432/queue?sslmode=disable"},
		{"postgresql://db/queue", "postgresql://db/queue"},
		{"~/q.db", filepath.Join(dir, "~", "q.db")}, // no shell expansion
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			path := filepath.Join(dir, "queue.hcl")
			writeFile(t, path, "database = \""+tc.value+"\"\n")
			f, diags := Load(path, Options{LookupEnv: fakeEnv(nil)})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if f.Database != tc.want {
				t.Errorf("Database = %q, want %q", f.Database, tc.want)
			}
		})
	}
}

func TestDirIsRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "queue.hcl")
	writeFile(t, path, `
job "rel" {
  schedule = "@daily"
  command  = "true"
  dir      = "work"
}
job "abs" {
  schedule = "@daily"
  command  = "true"
  dir      = "/srv/app/"
}
`)
	f, diags := Load(path, Options{LookupEnv: fakeEnv(nil)})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got, want := f.Jobs[0].Dir, filepath.Join(dir, "work"); got != want {
		t.Errorf("relative dir = %q, want %q", got, want)
	}
	if got, want := f.Jobs[1].Dir, "/srv/app"; got != want {
		t.Errorf("absolute dir = %q, want %q", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	f, diags := Load(filepath.Join(t.TempDir(), "nope.hcl"), Options{})
	if f != nil || !diags.HasErrors() || diags[0].Summary != "Cannot read configuration file" {
		t.Errorf("Load(missing) = %v, %v", f, diags)
	}
}

func TestSyntaxErrorStopsDecoding(t *testing.T) {
	f, diags := Parse([]byte("queue \"q\" {\n"), "test.hcl", Options{LookupEnv: fakeEnv(nil)})
	if f != nil || !diags.HasErrors() {
		t.Errorf("Parse = %v, %v; want nil file and errors", f, diags)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "10m": 10 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDuration("1w"); err == nil {
		t.Error(`ParseDuration("1w") succeeded`)
	}
}

// TestLimitsMatchQueueStore keeps the limits config checks equal to those the
// queue store applies when it enqueues a job.
func TestLimitsMatchQueueStore(t *testing.T) {
	if maxRetriesLimit != queue.MaxRetriesLimit || backoffBaseMin != queue.BackoffBaseMin ||
		backoffBaseMax != queue.BackoffBaseMax || maxBackoffLimit != queue.MaxBackoffLimit ||
		maxTimeoutLimit != queue.MaxTimeoutLimit || maxPriorityLimit != queue.MaxPriorityLimit || maxArgLen != queue.MaxArgLen || maxEnvSize != queue.MaxEnvSize ||
		DefaultQueue != queue.DefaultQueue {
		t.Error("config's limits differ from package queue's")
	}
	for _, name := range []string{"default", "mail:high", "reports.v2", "a", strings.Repeat("x", maxNameLen)} {
		if !validName(name) || queue.CheckName("queue", name) != nil {
			t.Errorf("name %q: config accepts %v, queue says %v", name, validName(name), queue.CheckName("queue", name))
		}
	}
	for _, name := range []string{"", "has space", "tab\t", "nl\n", "\x00", strings.Repeat("x", maxNameLen+1)} {
		if validName(name) || queue.CheckName("queue", name) == nil {
			t.Errorf("name %q: config accepts %v, queue says %v", name, validName(name), queue.CheckName("queue", name))
		}
	}
}

func TestRetryOr(t *testing.T) {
	job := Retry{Timeout: ptr(time.Minute)}
	queue := Retry{Timeout: ptr(time.Hour), MaxRetries: ptr(1)}
	defaults := Retry{MaxRetries: ptr(9), BackoffBase: ptr(2.0)}
	got := job.Or(queue).Or(defaults)
	want := Retry{Timeout: ptr(time.Minute), MaxRetries: ptr(1), BackoffBase: ptr(2.0)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Or = %s, want %s", fmtRetry(got), fmtRetry(want))
	}
}

// hook_timeout may be set in defaults, queue and job blocks; the most
// specific one wins, like the hooks themselves.
func TestHookTimeout(t *testing.T) {
	f := parseOK(t, `
defaults {
  hook_timeout = "10s"
}
queue "slow" {
  hook_timeout = "2m"
}
queue "plain" {}
job "j" {
  queue        = "slow"
  schedule     = "@daily"
  command      = "true"
  hook_timeout = "500ms"
}
job "k" {
  queue    = "slow"
  schedule = "@daily"
  command  = "true"
}
`, Options{})
	for _, tc := range []struct {
		queue string
		job   Retry
		want  time.Duration
	}{
		{"slow", f.Jobs[0].Retry, 500 * time.Millisecond},
		{"slow", f.Jobs[1].Retry, 2 * time.Minute},
		{"plain", Retry{}, 10 * time.Second},
	} {
		if got := f.RetryFor(tc.queue, tc.job).HookTimeout; got == nil || *got != tc.want {
			t.Errorf("queue %s: hook_timeout %v, want %v", tc.queue, got, tc.want)
		}
	}
	if got := parseOK(t, `defaults {}`, Options{}).Defaults.HookTimeout; got != nil {
		t.Errorf("unset hook_timeout = %v, want nil", *got)
	}
}

func TestRetention(t *testing.T) {
	f := parseOK(t, `
retention {
  completed = "7d"
  dead      = "30d"
  cancelled = "12h"
  output    = 86400
}
`, Options{})
	want := Retention{Completed: 7 * 24 * time.Hour, Dead: 30 * 24 * time.Hour, Cancelled: 12 * time.Hour, Output: 24 * time.Hour}
	if f.Retention != want {
		t.Fatalf("Retention = %+v, want %+v", f.Retention, want)
	}
	if f := parseOK(t, `retention {}`, Options{}); f.Retention != (Retention{}) {
		t.Fatalf("empty block: %+v", f.Retention)
	}
}

// bigEnv is the body of an env map of n variables of 120 KiB each: 8 fit
// in the size a job may carry, 9 do not.
func bigEnv(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%c = %q\n", 'A'+i, strings.Repeat("x", 120<<10))
	}
	return b.String()
}
