package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A running job's output so far streams as "live" events and shows on its
// page, cleaned of escape sequences and escaped.
func TestLiveOutputOfARunningJob(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"run","command":"long"}`)
			h.claim("run")
			save := func(out string) { h.saveLive("run", out) }
			save("step \x1b[1m1\x1b[0m <b>\n")
			ctx := context.Background()

			body, _ := h.page("/jobs/run", h.signIn(viewerToken))
			if !strings.Contains(body, `id="output-live" data-attempt="1">step 1 &lt;b&gt;`) {
				t.Errorf("the job page lacks the live output:\n%s", body)
			}

			srv := httptest.NewServer(h.srv.Handler())
			defer srv.Close()
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			r, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/api/v1/jobs/run/events", nil)
			r.Header.Set("Authorization", "Bearer "+viewerToken)
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			lines := bufio.NewScanner(res.Body)
			// next returns the data of the next "live" event.
			next := func() string {
				t.Helper()
				for lines.Scan() {
					if lines.Text() == "event: live" && lines.Scan() {
						return lines.Text()
					}
				}
				t.Fatalf("the stream ended without a live event: %v", lines.Err())
				return ""
			}
			if got := next(); got != `data: {"attempt":1,"output":"step 1 \u003cb\u003e\n","written":19}` {
				t.Errorf("first live event: %s", got)
			}
			save("step 1 <b>\nstep 2\n")
			if got := next(); !strings.Contains(got, `step 2\n`) || !strings.Contains(got, `"written":18`) {
				t.Errorf("second live event: %s", got)
			}
		})
	}
}
