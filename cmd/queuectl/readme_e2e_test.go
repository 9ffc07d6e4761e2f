package main

// The README's service walkthrough and the example configuration, run as
// a newcomer would: the built binary on the PATH, from a repository root.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/config"
	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
)

// exampleRoot copies the repository's examples directory into a fresh
// directory, which stands in for the repository root: the walkthrough's
// database and backups land there, not in the checkout.
func exampleRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("..", "..", "examples")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(root, "examples", rel)
		if d.IsDir() {
			if rel == "backups" {
				return filepath.SkipDir
			}
			return os.MkdirAll(dst, 0o755)
		}
		if strings.HasPrefix(d.Name(), "queue.db") {
			return nil // a developer's own run of the example
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// newcomerEnv is the environment of a shell after the README's set-up:
// queuectl on the PATH, a home of its own.
func newcomerEnv(t *testing.T) []string {
	return append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"QUEUECTL_HOME="+t.TempDir(), "QUEUECTL_DB=", "QUEUECTL_CONFIG=")
}

// walkStep is one "$ command" line of a console block and the output the
// README shows for it.
type walkStep struct {
	command string
	output  []string
}

// readmeWalkthrough reads the console block that follows the walkthrough
// marker in README.md.
func readmeWalkthrough(t *testing.T) []walkStep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("<!-- walkthrough:"))
	if !ok {
		t.Fatal("README.md has no walkthrough marker")
	}
	var steps []walkStep
	in := false
	sc := bufio.NewScanner(bytes.NewReader(rest))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```console":
			in = true
		case in && line == "```":
			return steps
		case in && strings.HasPrefix(line, "$ "):
			steps = append(steps, walkStep{command: strings.TrimPrefix(line, "$ ")})
		case in && len(steps) > 0:
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, line)
		}
	}
	t.Fatal("README.md: the walkthrough's console block does not end")
	return nil
}

// What varies from run to run in the README's output: times, fire stamps
// in job ids, and the amount of white space aligning tables.
var walkVariable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}T\d{6}(\.\d+)?Z`), "STAMP"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "TIME"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+`), "LOCAL"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

func normalizeOutput(lines []string) string {
	var out []string
	for _, l := range lines {
		for _, v := range walkVariable {
			l = v.re.ReplaceAllString(l, v.with)
		}
		out = append(out, strings.TrimSpace(l))
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// readOnly commands may be run again until their output matches: they show
// the work of the service in the background, which takes a moment.
func readOnly(command string) bool {
	for _, c := range []string{"queuectl status", "queuectl list", "queuectl show", "queuectl output", "queuectl cron list", "queuectl stats"} {
		if strings.HasPrefix(command, c) {
			return true
		}
	}
	return false
}

// TestE2EReadmeWalkthrough runs the README's service walkthrough as
// written, each command with bash from the repository root, and checks
// that each prints what the README shows.
func TestE2EReadmeWalkthrough(t *testing.T) {
	steps := readmeWalkthrough(t)
	if len(steps) < 5 {
		t.Fatalf("walkthrough has %d commands", len(steps))
	}
	root := exampleRoot(t)
	env := newcomerEnv(t)
	var bg *exec.Cmd
	var bgOut syncbuf.Buffer
	bgDone := make(chan error, 1)
	t.Cleanup(func() {
		if bg != nil && bg.ProcessState == nil {
			bg.Process.Kill()
			<-bgDone
		}
	})
	comment := regexp.MustCompile(`\s+#.*$`)
	for _, st := range steps {
		command := comment.ReplaceAllString(st.command, "")
		switch {
		case command == "kill %1":
			if bg == nil {
				t.Fatal("kill %1 without a background command")
			}
			bg.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-bgDone:
				if err != nil {
					t.Fatalf("the background command exited with %v:\n%s", err, bgOut.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the background command did not stop on SIGTERM:\n%s", bgOut.String())
			}
		case strings.HasSuffix(command, "&"):
			bg = exec.Command("bash", "-c", "exec "+strings.TrimSuffix(command, "&"))
			bg.Dir, bg.Env, bg.Stdout, bg.Stderr = root, env, &bgOut, &bgOut
			if err := bg.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { bgDone <- bg.Wait() }()
		default:
			want := normalizeOutput(st.output)
			deadline := time.Now().Add(20 * time.Second)
			for {
				cmd := exec.Command("bash", "-c", command)
				cmd.Dir, cmd.Env = root, env
				out, errOut, code := runProcess(t, cmd)
				got := normalizeOutput(strings.Split(out, "\n"))
				if code == 0 && got == want {
					break
				}
				if !readOnly(command) || time.Now().After(deadline) {
					t.Fatalf("$ %s\nexit %d, stderr %s\ngot:\n%s\nwant (as README.md shows, normalized):\n%s\nservice log:\n%s",
						command, code, errOut, got, want, bgOut.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// TestE2EExampleJobsSucceed triggers every enabled job of
// examples/queue.hcl on a fresh home, with a service running, and checks
// that each completed.
func TestE2EExampleJobsSucceed(t *testing.T) {
	root := exampleRoot(t)
	env := newcomerEnv(t)
	f, diags := config.Load(filepath.Join(root, "examples", "queue.hcl"), config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(binary, append(args, "-c", "examples/queue.hcl")...)
		cmd.Dir, cmd.Env = root, env
		return runProcess(t, cmd)
	}
	svc := exec.Command(binary, "run", "-c", "examples/queue.hcl")
	var log syncbuf.Buffer
	svc.Dir, svc.Env, svc.Stdout, svc.Stderr = root, env, &log, &log
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Wait() }()
	defer func() {
		svc.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			t.Errorf("service: %v\n%s", err, log.String())
		}
	}()
	enabled := 0
	for _, j := range f.Jobs {
		if !j.Enabled {
			continue
		}
		enabled++
		out, errOut, code := run("cron", "trigger", j.Name)
		if code != 0 {
			t.Fatalf("cron trigger %s: exit %d: %s", j.Name, code, errOut)
		}
		id := strings.TrimSpace(out)
		var v jobView
		waitFor(t, j.Name+" to finish", 60*time.Second, func() bool {
			out, _, _ := run("show", id, "--json")
			json.Unmarshal([]byte(out), &v)
			return v.State == "completed" || v.State == "failed" || v.State == "dead"
		})
		if v.State != "completed" {
			output, _, _ := run("output", id)
			t.Errorf("example job %s ended %s: %s", j.Name, v.State, output)
		}
	}
	if enabled < 3 {
		t.Fatalf("only %d enabled example jobs", enabled)
	}
	backups, _ := filepath.Glob(filepath.Join(root, "examples", "backups", "queue-*.db"))
	if len(backups) != 1 {
		t.Fatalf("nightly-backup wrote %v", backups)
	}
}
