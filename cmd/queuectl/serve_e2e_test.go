package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/testutil/syncbuf"
)

// server is a running `queuectl serve`.
type server struct {
	url  string
	logs *syncbuf.Buffer
}

// startServe starts `queuectl serve` with extra environment and arguments,
// waits for its "serving http" log line and stops it when the test ends.
func startServe(t *testing.T, c *cli, env []string, args ...string) *server {
	t.Helper()
	cmd := c.cmd(append([]string{"serve", "--log-format", "json"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{logs: &syncbuf.Buffer{}}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.logs.Write(append(sc.Bytes(), '\n'))
			var line struct{ Message, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "serving http" {
				found <- line.URL
			}
		}
		close(found)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("serve exited before serving")
		}
		s.url = u
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start")
	}
	return s
}

func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestE2EServe(t *testing.T) {
	c := newCLI(t)
	c.ok("enqueue", "--id", "hello", "--command", "echo hello")
	tokenFile := filepath.Join(c.home, "token")
	os.WriteFile(tokenFile, []byte("admin-token\n"), 0o600)
	s := startServe(t, c, []string{"QUEUECTL_HTTP_VIEWER_TOKEN=viewer-token"}, "--listen", "127.0.0.1:0", "--token-file", tokenFile)
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("logged url %q", s.url)
	}
	if strings.Contains(s.logs.String(), "admin-token") || strings.Contains(s.logs.String(), "viewer-token") {
		t.Error("a token appears in the log")
	}
	if code, _ := httpGet(t, s.url+"/healthz", ""); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	if code, _ := httpGet(t, s.url+"/api/v1/jobs", ""); code != 401 {
		t.Errorf("jobs without a token: %d", code)
	}
	code, body := httpGet(t, s.url+"/api/v1/jobs", "viewer-token")
	cliJSON := c.ok("list", "--json")
	var api, cliJobs []map[string]any
	json.Unmarshal([]byte(body), &api)
	json.Unmarshal([]byte(cliJSON), &cliJobs)
	if code != 200 || len(api) != 1 || api[0]["id"] != "hello" || len(api[0]) != len(cliJobs[0]) {
		t.Errorf("jobs: %d %s\nCLI: %s", code, body, cliJSON)
	}

	// A second server on the same port fails at once, naming the address.
	addr := strings.TrimPrefix(s.url, "http://")
	_, errOut, exit := c.run("serve", "--listen", addr, "--token-file", tokenFile)
	if exit != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, addr) {
		t.Errorf("busy port: exit %d: %q", exit, errOut)
	}
	// Without a token only loopback addresses are allowed.
	_, errOut, exit = c.run("serve", "--listen", "0.0.0.0:0")
	if exit != 2 || !strings.Contains(errOut, "--token-file") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("no token on every interface: exit %d: %q", exit, errOut)
	}
}

// A --listen that is not host:port with a port from 0 to 65535 is bad
// input, with or without a token: exit 2, one line naming the flag and the
// problem, as the file's http { listen } is refused.
func TestE2EServeRefusesABadListenAddress(t *testing.T) {
	c := newCLI(t)
	tokenFile := filepath.Join(c.home, "token")
	os.WriteFile(tokenFile, []byte("admin-token\n"), 0o600)
	for _, tt := range []struct {
		listen, says string
		token        bool
	}{
		{"nonsense", "is not host:port", false},
		{"nonsense", "is not host:port", true},
		{"127.0.0.1:99999", "the port must be a number from 0 to 65535", false},
		{"0.0.0.0:99999", "the port must be a number from 0 to 65535", true},
	} {
		args := []string{"serve", "--listen", tt.listen}
		if tt.token {
			args = append(args, "--token-file", tokenFile)
		}
		_, errOut, exit := c.run(args...)
		if exit != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "--listen") ||
			!strings.Contains(errOut, tt.listen) || !strings.Contains(errOut, tt.says) || strings.Contains(errOut, "token") {
			t.Errorf("serve --listen %s (token %v): exit %d: %q", tt.listen, tt.token, exit, errOut)
		}
	}
}

// Without a token the service's http block may listen on loopback only:
// the one line that says so names what the file sets, token_file, not
// serve's flag, which run does not take.
func TestE2ERunRefusesEveryInterfaceWithoutAToken(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, "http {\n  listen = \"0.0.0.0:0\"\n}\n")
	_, errOut, exit := c.run("run", "-c", cfg) // stderr is also the service's log
	if exit != 2 || !strings.Contains(errOut, "queuectl: refusing to serve without a token") ||
		!strings.Contains(errOut, "token_file") || strings.Contains(errOut, "--token-file") {
		t.Errorf("no token on every interface: exit %d: %q", exit, errOut)
	}
}

// A token file must hold one token: empty, or holding two lines (no
// Authorization header nor the sign-in form can carry a line break, so
// the role could never be used), it is bad input: exit 2 naming the
// file, before anything listens.
func TestE2EServeRefusesABadTokenFile(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct{ name, content, says string }{
		{"empty", "\n", "is empty"},
		{"two-lines", "admin-token\nviewer-token\n", "holds more than one line"},
	} {
		path := filepath.Join(c.home, tt.name)
		os.WriteFile(path, []byte(tt.content), 0o600)
		for _, flag := range []string{"--token-file", "--viewer-token-file"} {
			cmd := c.cmd("serve", "--listen", "127.0.0.1:0", flag, path)
			serving := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() }) // it took the file
			_, errOut, exit := runProcess(t, cmd)
			serving.Stop()
			if exit != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, path) ||
				!strings.Contains(errOut, tt.says) || strings.Contains(errOut, "admin-token") {
				t.Errorf("%s %s: exit %d: %q", flag, tt.name, exit, errOut)
			}
		}
	}
}

func TestE2ERunServesHTTP(t *testing.T) {
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	os.WriteFile(filepath.Join(c.home, "admin.token"), []byte("run-admin\n"), 0o600)
	writeFile(t, cfg, `
queue "default" { concurrency = 3 }
http {
  listen     = "127.0.0.1:0"
  token_file = "admin.token"
}
`)
	svc := c.startService("-c", cfg)
	var url string
	waitFor(t, "the service to serve http", 20*time.Second, func() bool {
		for _, l := range strings.Split(svc.log(), "\n") {
			var line struct{ Message, URL string }
			if json.Unmarshal([]byte(l), &line) == nil && line.Message == "serving http" {
				url = line.URL
			}
		}
		return url != ""
	})
	if code, _ := httpGet(t, url+"/readyz", ""); code != 200 {
		t.Errorf("readyz: %d", code)
	}
	// The server listens before the service writes the file's queues to the
	// store (so a busy port fails at once); the queues show from then on.
	waitFor(t, "the service to start", 20*time.Second, func() bool {
		return strings.Contains(svc.log(), `"message":"service started"`)
	})
	code, body := httpGet(t, url+"/api/v1/queues", "run-admin")
	if code != 200 || !strings.Contains(body, `"concurrency": 3`) {
		t.Errorf("queues: %d %s", code, body)
	}
	svc.signal(syscall.SIGTERM)
	if err := svc.wait(20 * time.Second); err != nil {
		t.Fatalf("service: %v\n%s", err, svc.log())
	}
}
