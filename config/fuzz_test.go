package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// FuzzParse checks that no input makes the loader or the diagnostic writer
// panic, and that its results keep their promises. Seeds: the example, every
// testdata file, schedules that crash robfig/cron, and garbage.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../examples/queue.hcl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	inputs, err := filepath.Glob("testdata/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range inputs {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, s := range []string{
		"job \"j\" {\n  schedule = \"TZ=\"\n  command = \"x\"\n}\n",
		"job \"j\" {\n  schedule = \"CRON_TZ=x\"\n  command = \"x\"\n}\n",
		"job \"j\" {\n  schedule = \"0 TZ= * * *\"\n  command = \"x\"\n}\n",
		"job \"j\" {\n  schedule = \"@every 0s\"\n  command = \"x\"\n  jitter = 1e300\n}\n",
		"locals {\n  a = local.a\n}\n",
		"variable \"v\" {}\nvariable \"v\" { default = var.v }\n",
		"job \"j\" {\n  schedule = \"* * * * *\"\n  command = env(\"X\")\n  env = { (\"\") = null }\n}\n",
		"queue \"q\" { concurrency = 1e400 }",
		// Bad inputs that enqueue refuses, in their HCL form.
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  env = { \"\" = \"v\" }\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  env = { \"A=B\" = \"v\" }\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  env = { \"A\\u0000\" = \"v\", B = \"v\\u0000\" }\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  env = { QUEUECTL_JOB_ID = \"other\" }\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  dir = \"/tmp/\\u0000\"\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\\u0000\"\n}\n",
		"job \"j\\u0007\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  timeout = \"500us\"\n}\n",
		"job \"j\" {\n  schedule = \"@hourly\"\n  command = \"x\"\n  timeout = \"100000d\"\n}\n",
		"defaults {\n  timeout = \"-1s\"\n}\n",
		"job \"j\" {\n  schedule = \"* * * * * *\"\n  command = \"x\"\n  catch_up = \"all\"\n}\n",
		"",
		"\x00\xff{{{",
		"job job job",
		"${}",
	} {
		f.Add([]byte(s))
	}

	env := fakeEnv(map[string]string{"X": "x", "QUEUECTL_VAR_v": "1"})
	f.Fuzz(func(t *testing.T, src []byte) {
		const filename = "fuzz.hcl"
		file, diags := Parse(src, filename, Options{LookupEnv: env})
		if file == nil && !diags.HasErrors() {
			t.Fatal("nil file without an error")
		}
		for _, d := range diags {
			if d == nil {
				t.Fatal("nil diagnostic")
			}
		}
		var buf bytes.Buffer
		if err := WriteDiagnostics(&buf, map[string][]byte{filename: src}, diags); err != nil {
			t.Fatalf("WriteDiagnostics: %v", err)
		}
		if file == nil || diags.HasErrors() {
			return
		}
		checkValidFile(t, file, diags)
	})
}

// checkValidFile asserts the invariants of a file decoded without errors.
func checkValidFile(t *testing.T, f *File, diags hcl.Diagnostics) {
	t.Helper()
	if _, ok := f.Queue(DefaultQueue); !ok {
		t.Error("no default queue")
	}
	for _, q := range f.Queues {
		if q.Concurrency < 1 {
			t.Errorf("queue %q: concurrency %d", q.Name, q.Concurrency)
		}
	}
	for _, j := range f.Jobs {
		if _, ok := f.Queue(j.Queue); !ok {
			t.Errorf("job %q: queue %q does not exist", j.Name, j.Queue)
		}
		s, err := j.ParseSchedule()
		if err != nil {
			t.Fatalf("job %q: schedule %q accepted but ParseSchedule fails: %v\n%v", j.Name, j.Schedule, err, diags)
		}
		from := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
		if next := s.Next(from); !next.After(from) {
			t.Errorf("job %q: Next(%s) = %s, not after", j.Name, from, next)
		}
		if j.MaxCatchUp < 1 || j.Jitter < 0 || j.Command == "" {
			t.Errorf("job %q: invalid values accepted: %+v", j.Name, j)
		}
	}
}
