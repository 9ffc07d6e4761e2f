package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
)

// TestE2EHostileInputSameOnBothStores runs the same bad input against
// SQLite and PostgreSQL: each is refused with the same exit code and a
// one-line error naming what was wrong, and changes nothing stored.
func TestE2EHostileInputSameOnBothStores(t *testing.T) {
	onBothStores(t, func(t *testing.T, q, _ qctl) {
		q.ok("enqueue", "--id", "keep", "--command", "true", "--queue", "idle")
		before := q.ok("list", "--json", "--limit", "0")
		// A command no process can be started with (Linux: one argument
		// of 128 KiB at most) would fail every attempt: refused up front.
		tooLong := filepath.Join(t.TempDir(), "long.jsonl")
		writeFile(t, tooLong, `{"command":"echo `+strings.Repeat("x", 128<<10)+`"}`+"\n")
		notUTF8Dir := filepath.Join(t.TempDir(), "d\xff")
		if err := os.Mkdir(notUTF8Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args     []string
			code     int
			mentions string
		}{
			// Text PostgreSQL cannot store is refused by both stores alike.
			{[]string{"enqueue", "--command", "echo \xff"}, 2, "command is not valid UTF-8"},
			{[]string{"enqueue", "--command", "true", "--env", "A=\xff"}, 2, "the value of A is not valid UTF-8"},
			{[]string{"enqueue", "--command", "true", "--dir", notUTF8Dir}, 2, "not valid UTF-8"},
			{[]string{"enqueue", "--file", tooLong}, 2, "line 1: invalid: command is 131077 bytes, over the 131071"},
			// No job has an id that is not UTF-8: it is not found, as any other.
			{[]string{"show", "a\xffb"}, 1, "not found"},
			{[]string{"cancel", "a\xffb"}, 1, "not found"},
			{[]string{"retry", "a\xffb", "keep"}, 1, "not found"},
			{[]string{"output", "a\xffb"}, 1, "not found"},
			{[]string{"dlq", "retry", "a\xffb"}, 1, "not found"},
			{[]string{"wait", "a\xffb"}, 2, "not found"},
			// A bad flag value is refused before anything is stored.
			{[]string{"enqueue", "--command", "true", "--unique-key", ""}, 2, "--unique-key is empty"},
			{[]string{"enqueue", "--command", "true", "--queue", ""}, 2, "--queue is empty"},
			{[]string{"enqueue", "--command", "true", "--id", ""}, 2, "--id is empty"},
			{[]string{"enqueue", "--command", "true", "--run-at", ""}, 2, "--run-at is empty"},
			{[]string{"cancel", "keep", "--wait", "-1s"}, 2, "--wait -1s: must not be negative"},
			{[]string{"dlq", "list", "--limit", "-1"}, 2, "--limit -1"},
			{[]string{"worker", "start", "--count", "100000"}, 2, "--count 100000: must be from 1 to 1000"},
			{[]string{"enqueue", "--file", notUTF8Dir}, 2, "is a directory"},
			{[]string{"cleanup", "--older-than", "0", "--state", "bogus"}, 2, `cleanup: --state "bogus"`},
			{[]string{"cleanup", "--older-than", "0", "--state", "pending"}, 2, "only finished jobs"},
		} {
			out, errOut, code := q.run(tc.args...)
			if code != tc.code || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tc.mentions) {
				t.Errorf("queuectl %q: exit %d, stdout %q, stderr %q; want exit %d and one line mentioning %q",
					tc.args, code, out, errOut, tc.code, tc.mentions)
			}
		}
		if after := q.ok("list", "--json", "--limit", "0"); after != before {
			t.Errorf("refused commands changed the jobs:\nbefore %s\nafter  %s", before, after)
		}
		if out := q.ok("worker", "list", "--json"); strings.TrimSpace(out) != "[]" {
			t.Errorf("refused commands started workers: %s", out)
		}
		if out := q.ok("list", "--queue", "a\xffb"); strings.Count(out, "\n") != 1 {
			t.Errorf("list --queue with a name that is not UTF-8 = %q; want the header only", out)
		}
	})
}

// TestE2EEnqueueFileAfterNamesTheRightLine: a file job after an unknown
// job is refused naming its own line, not the line of an earlier job it
// also names; a file job after an earlier one that was not added (its
// unique key is held) runs after the holder.
func TestE2EEnqueueFileAfterNamesTheRightLine(t *testing.T) {
	onBothStores(t, func(t *testing.T, q, _ qctl) {
		q.ok("enqueue", "--id", "holder", "--command", "true", "--unique-key", "k")
		path := filepath.Join(t.TempDir(), "jobs.jsonl")
		writeFile(t, path, `{"id":"first","command":"true"}
{"id":"second","command":"true","after":["first","nope"]}
`)
		out, errOut, code := q.run("enqueue", "--file", path)
		if code != 2 || out != "" || !strings.Contains(errOut, "line 2: ") || !strings.Contains(errOut, `job "second"`) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming line 2 and job second", code, out, errOut)
		}
		for _, id := range []string{"first", "second"} {
			if _, _, code := q.run("show", id); code != 1 {
				t.Fatalf("show %s: exit %d; a refused file stored it", id, code)
			}
		}
		writeFile(t, path, `{"id":"first","command":"true","unique_key":"k"}
{"id":"second","command":"true","after":["first"]}
`)
		if out := q.ok("enqueue", "--file", path); out != "holder\nsecond\n" {
			t.Fatalf("stdout %q, want holder and second", out)
		}
		var j struct {
			State string   `json:"state"`
			After []string `json:"after"`
		}
		if err := json.Unmarshal([]byte(q.ok("show", "second", "--json")), &j); err != nil || j.State != "waiting" || len(j.After) != 1 || j.After[0] != "holder" {
			t.Fatalf("second: %+v %v; want waiting after holder", j, err)
		}
	})
}

// A job's env may carry up to queue.MaxEnvSize in all, and a job carrying
// that much starts: the bound leaves room for the worker's own environment
// and the command in what Linux gives a process. More is refused at
// enqueue, naming env.
func TestE2ELargestEnvStarts(t *testing.T) {
	c := newCLI(t)
	env := map[string]string{}
	n := 0
	for i := 0; n < queue.MaxEnvSize-(queue.MaxArgLen+2); i++ {
		k := fmt.Sprintf("V%02d", i)
		env[k] = strings.Repeat("x", queue.MaxArgLen-len(k)-1)
		n = queue.EnvSize(env)
	}
	k := "LAST"
	env[k] = strings.Repeat("x", queue.MaxEnvSize-n-len(k)-2)
	if got := queue.EnvSize(env); got != queue.MaxEnvSize {
		t.Fatalf("env of %d bytes, want %d", got, queue.MaxEnvSize)
	}
	line := func(id string) string {
		b, err := json.Marshal(map[string]any{"id": id, "command": `test ${#LAST} -gt 0`, "env": env})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	writeFile(t, path, line("big"))
	c.ok("enqueue", "--file", path)
	env["OVER"] = "" // 6 bytes more
	writeFile(t, path, line("over"))
	if _, errOut, code := c.run("enqueue", "--file", path); code != 2 || !strings.Contains(errOut, "env: the variables are 1048582 bytes in all") {
		t.Fatalf("an env over the bound: exit %d: %s", code, errOut)
	}
	c.ok("worker", "start")
	if j := c.waitState("big", "completed", 30*time.Second); j.Attempts != 1 {
		t.Fatalf("the job with the largest env: %+v", j)
	}
}
