package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// parseTestdata parses testdata/name.hcl with an empty environment and
// returns the file, its diagnostics and their rendering.
func parseTestdata(t *testing.T, name string) (*File, hcl.Diagnostics, string) {
	t.Helper()
	filename := filepath.ToSlash(filepath.Join("testdata", name+".hcl"))
	src, err := os.ReadFile(filename)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := Parse(src, filename, Options{LookupEnv: fakeEnv(nil)})
	var buf bytes.Buffer
	if err := WriteDiagnostics(&buf, map[string][]byte{filename: src}, diags); err != nil {
		t.Fatalf("WriteDiagnostics: %v", err)
	}
	return f, diags, buf.String()
}

// checkGolden compares got with testdata/name.golden, or rewrites the file
// with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("diagnostics differ from %s (run go test -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// findDiag returns the error diagnostic with the given summary, failing the
// test if there is none.
func findDiag(t *testing.T, diags hcl.Diagnostics, summary string) *hcl.Diagnostic {
	t.Helper()
	for _, d := range diags {
		if d.Summary == summary {
			if d.Severity != hcl.DiagError {
				t.Errorf("%q has severity %v, want error", summary, d.Severity)
			}
			return d
		}
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary)
	}
	t.Fatalf("no diagnostic %q; got %q", summary, got)
	return nil
}

func TestDiagnosticsGolden(t *testing.T) {
	tests := []struct {
		name       string // testdata/<name>.hcl and .golden
		summary    string
		line, col  int    // start of the subject
		subject    string // the source text the subject covers
		detailPart string // a part of the detail, if worth checking
		fileIsNil  bool   // decoding cannot continue
	}{
		{name: "unknown_attribute", summary: "Unsupported argument", line: 2, col: 3, subject: "concurency"},
		{name: "unknown_block", summary: "Unsupported block type", line: 5, col: 1, subject: "jobs"},
		{name: "duplicate_queue", summary: "Duplicate queue", line: 5, col: 7, subject: `"reports"`,
			detailPart: "first defined at testdata/duplicate_queue.hcl:1,1"},
		{name: "duplicate_job", summary: "Duplicate job", line: 6, col: 5, subject: `"backup"`,
			detailPart: "first defined at testdata/duplicate_job.hcl:1,1"},
		{name: "undeclared_queue", summary: "Undeclared queue", line: 6, col: 14, subject: `"backups"`,
			detailPart: `Declared queues: "reports"`},
		{name: "invalid_cron", summary: "Invalid schedule", line: 2, col: 14, subject: `"0 25 * * *"`,
			detailPart: `invalid hour field "25"`},
		{name: "tz_prefix", summary: "Invalid schedule", line: 2, col: 14, subject: `"CRON_TZ=Europe/Berlin 0 2 * * *"`,
			detailPart: `time_zone = "Europe/Berlin"`},
		{name: "never_fires", summary: "Schedule never fires", line: 2, col: 14, subject: `"0 0 30 2 *"`},
		{name: "invalid_time_zone", summary: "Invalid time zone", line: 3, col: 15, subject: `"Europe/Springfield"`},
		{name: "invalid_duration", summary: "Invalid duration", line: 2, col: 13, subject: `"10 minutes"`},
		{name: "negative_count", summary: "Invalid max_retries", line: 2, col: 17, subject: "-1"},
		{name: "concurrency", summary: "Invalid concurrency", line: 2, col: 17, subject: "0"},
		{name: "invalid_limits", summary: "Invalid max_running", line: 2, col: 17, subject: "-1"},
		{name: "invalid_limits", summary: "Invalid rate_limit", line: 3, col: 17, subject: `"ten/s"`,
			detailPart: "use COUNT/PERIOD"},
		{name: "invalid_overlap", summary: "Invalid overlap value", line: 4, col: 14, subject: `"replace"`,
			detailPart: `use "skip", "queue" or "allow"`},
		{name: "invalid_catch_up", summary: "Invalid catch_up value", line: 4, col: 14, subject: `"first"`,
			detailPart: `use "none", "latest" or "all"`},
		{name: "missing_variable", summary: "Missing value for variable", line: 1, col: 1, subject: `variable "backup_dir"`,
			detailPart: "QUEUECTL_VAR_backup_dir"},
		{name: "local_cycle", summary: "Circular reference in locals", line: 2, col: 7, subject: `"${local.b}-a"`,
			detailPart: "local.a -> local.b -> local.a"},
		{name: "unknown_function", summary: "Call to unknown function", line: 3, col: 14, subject: "file"},
		{name: "missing_required", summary: "Missing required argument", line: 1, col: 14},
		{name: "syntax_error", summary: "Invalid expression", line: 2, col: 17, fileIsNil: true},
		{name: "invalid_retention", summary: "Invalid retention", line: 2, col: 15, subject: `"0s"`,
			detailPart: "leave it out to keep forever"},
		{name: "invalid_http", summary: "Invalid listen address", line: 2, col: 23, subject: `"localhost"`,
			detailPart: "is not host:port"},
		{name: "invalid_http", summary: "Token file not found", line: 3, col: 23, subject: `"no-such-token"`,
			detailPart: "token_file"},
		{name: "invalid_http", summary: "Same token file twice", line: 4, col: 23, subject: `"no-such-token"`,
			detailPart: "must differ"},
		{name: "value_from_variable", summary: "Invalid duration", line: 6, col: 13, subject: "var.timeout",
			detailPart: `invalid duration "ten minutes"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, diags, rendered := parseTestdata(t, tc.name)
			checkGolden(t, tc.name, rendered)

			if (f == nil) != tc.fileIsNil {
				t.Errorf("file is nil: %v, want %v", f == nil, tc.fileIsNil)
			}
			d := findDiag(t, diags, tc.summary)
			if d.Subject == nil {
				t.Fatalf("%q has no subject", tc.summary)
			}
			if d.Subject.Start.Line != tc.line || d.Subject.Start.Column != tc.col {
				t.Errorf("%q at line %d, column %d; want line %d, column %d",
					tc.summary, d.Subject.Start.Line, d.Subject.Start.Column, tc.line, tc.col)
			}
			if tc.subject != "" {
				src, _ := os.ReadFile(d.Subject.Filename)
				if got := string(d.Subject.SliceBytes(src)); got != tc.subject {
					t.Errorf("subject covers %q, want %q", got, tc.subject)
				}
			}
			if !strings.Contains(d.Detail, tc.detailPart) {
				t.Errorf("detail %q does not contain %q", d.Detail, tc.detailPart)
			}
		})
	}
}

// TestManyErrorsAtOnce checks that decoding goes on past every semantic error
// and reports all of them in one call, in source order.
func TestManyErrorsAtOnce(t *testing.T) {
	f, diags, rendered := parseTestdata(t, "many_errors")
	checkGolden(t, "many_errors", rendered)
	if f == nil {
		t.Fatal("file is nil; semantic errors must not stop decoding")
	}

	want := []struct {
		line    int
		summary string
	}{
		{1, "Unsupported database URL"},
		{3, "Missing value for variable"},
		{6, "Circular reference in locals"},
		{11, "Invalid max_retries"},
		{12, "Invalid backoff_base"},
		{13, "Invalid duration"},
		{14, "Invalid timeout"},
		{18, "Invalid concurrency"},
		{19, "Unsupported argument"},
		{22, "Duplicate queue"},
		{27, "Undeclared queue"},
		{28, "Invalid schedule"},
		{29, "Invalid time zone"},
		{30, "Empty command"},
		{31, "Invalid overlap value"},
		{32, "Invalid catch_up value"},
		{33, "Invalid max_catch_up"},
		{34, "Invalid jitter"},
		{35, "Invalid priority"},
		{36, "Incorrect attribute value type"},
		{37, "Invalid environment variable name"},
		{40, "Duplicate job"},
		{41, "Invalid schedule"},
		{46, "Schedule never fires"},
	}
	if len(diags) != len(want) {
		for _, d := range diags {
			t.Logf("%s: %s", d.Subject, d.Summary)
		}
		t.Fatalf("got %d diagnostics, want %d", len(diags), len(want))
	}
	for i, w := range want {
		d := diags[i]
		if d.Severity != hcl.DiagError || d.Summary != w.summary || d.Subject == nil || d.Subject.Start.Line != w.line {
			t.Errorf("diagnostic %d = %q at %v, want %q on line %d", i, d.Summary, d.Subject, w.summary, w.line)
		}
	}
}

func TestWriteDiagnosticsReadsFilesFromDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.hcl")
	writeFile(t, path, "queue \"q\" {\n  concurrency = 0\n}\n")
	_, diags := Load(path, Options{LookupEnv: fakeEnv(nil)})
	var buf bytes.Buffer
	if err := WriteDiagnostics(&buf, nil, diags); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Error: Invalid concurrency",
		"on " + path + " line 2, column 17, in queue \"q\":",
		"   2:   concurrency = 0",
		"concurrency must be from 1 to 1000, got 0.",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestWriteDiagnosticsWithoutSource(t *testing.T) {
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "No subject", Detail: "Just a detail."},
		{Severity: hcl.DiagError, Summary: "Gone", Subject: &hcl.Range{Filename: filepath.Join(t.TempDir(), "missing.hcl"), Start: hcl.Pos{Line: 3, Column: 2}, End: hcl.Pos{Line: 3, Column: 5}}},
	}
	var buf bytes.Buffer
	if err := WriteDiagnostics(&buf, nil, diags); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Error: No subject\n\nJust a detail.\n", "line 3, column 2:\n  (source code not available)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

// catch_up = "all" with overlap = "skip" is valid but drops the caught-up
// runs: a warning on catch_up, not an error, so the file still loads.
func TestCatchUpAllWithSkipWarns(t *testing.T) {
	f, diags, rendered := parseTestdata(t, "catch_up_all_skip")
	checkGolden(t, "catch_up_all_skip", rendered)
	if f == nil || diags.HasErrors() || len(diags) != 1 {
		t.Fatalf("want one warning and a file, got %v", diags)
	}
	d := diags[0]
	if d.Severity != hcl.DiagWarning || d.Summary != "Caught-up runs would be skipped" ||
		d.Subject == nil || d.Subject.Start.Line != 4 || d.Subject.Start.Column != 14 {
		t.Fatalf("diagnostic %v at %v", d, d.Subject)
	}
	for _, other := range []string{`overlap = "queue"`, `overlap = "allow"`} {
		src := "job \"r\" {\n  schedule = \"0 * * * *\"\n  command = \"x\"\n  catch_up = \"all\"\n  " + other + "\n}\n"
		if _, diags := Parse([]byte(src), "x.hcl", Options{LookupEnv: fakeEnv(nil)}); len(diags) != 0 {
			t.Errorf("%s: want no diagnostics, got %v", other, diags)
		}
	}
}

// catch_up = "all" with unique = true drops the caught-up runs too: the
// same warning, saying why.
func TestCatchUpAllWithUniqueWarns(t *testing.T) {
	f, diags, rendered := parseTestdata(t, "catch_up_all_unique")
	checkGolden(t, "catch_up_all_unique", rendered)
	if f == nil || diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning ||
		diags[0].Summary != "Caught-up runs would be skipped" || !strings.Contains(diags[0].Detail, "unique = true") {
		t.Fatalf("want one warning naming unique and a file, got %v", diags)
	}
}

// A token file is looked for next to the configuration file only when its
// path is relative; the error for an absolute one does not say so.
func TestTokenFileNotFoundSaysWhereItLooked(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "admin.token")
	for _, tc := range []struct{ path, detail string }{
		{"admin.token", `token_file "admin.token" (next to the file): no such file or directory.`},
		{abs, `token_file "` + abs + `": no such file or directory.`},
	} {
		src := "http {\n  token_file = \"" + tc.path + "\"\n}\n"
		d := findDiag(t, parseErr(t, src, Options{}), "Token file not found")
		if d.Detail != tc.detail {
			t.Errorf("token_file %s: detail %q, want %q", tc.path, d.Detail, tc.detail)
		}
	}
}

// validate reads a token file as run does, so the two agree: an empty
// file, one of two lines, and two files holding the same token are each
// refused at their line, and the error never quotes a token.
func TestTokenFileReadAsRunReadsIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	empty, lines := write("empty", " \n"), write("lines", "secret-a\nsecret-b\n")
	a, b := write("a", "secret-same\n"), write("b", "  secret-same")
	for _, tc := range []struct{ src, summary, detail string }{
		{`token_file = "` + empty + `"`, "Invalid token file", "the file is empty"},
		{`viewer_token_file = "` + lines + `"`, "Invalid token file", "more than one line"},
		{"token_file = \"" + a + "\"\n  viewer_token_file = \"" + b + "\"", "Same token twice", "must differ"},
	} {
		src := "http {\n  " + tc.src + "\n}\n"
		d := findDiag(t, parseErr(t, src, Options{}), tc.summary)
		if !strings.Contains(d.Detail, tc.detail) || strings.Contains(d.Detail, "secret") || d.Subject == nil || d.Subject.Start.Line < 2 {
			t.Errorf("%s: %+v; want %q at its line, quoting no token", tc.src, d, tc.detail)
		}
	}
}
