package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/internal/view"
	"github.com/queuectl/queuectl/queue"
)

// On PostgreSQL heartbeats are stamped with the server's clock: a service
// whose own clock runs an hour ahead still counts a worker that just beat as
// alive, in the API's status, the metrics and the pages.
func TestSkewedServiceCountsLiveWorkersOnTheDatabaseClock(t *testing.T) {
	h := newHarness(t, postgresDatabase(t)(), adminToken, viewerToken)
	h.store.RegisterWorker(context.Background(), &queue.WorkerInfo{ID: "live", PID: 7, Host: "box", BootID: "b", StartedAt: h.clock.Now(), HeartbeatAt: h.clock.Now()})
	h.clock.Advance(time.Hour)

	if st := decode[view.Status](t, h.must(req{path: "/api/v1/status", token: viewerToken}, http.StatusOK)); st.Workers != 1 {
		t.Errorf("status counts %d live workers, want 1", st.Workers)
	}
	if body := h.must(req{path: "/metrics", token: viewerToken}, http.StatusOK).Body.String(); !strings.Contains(body, "queuectl_workers_alive 1\n") {
		t.Errorf("metrics do not count the live worker")
	}
	c := h.signIn(viewerToken)
	if body, _ := h.page("/workers", c); !strings.Contains(body, "1 alive") || strings.Contains(body, "state-dead") {
		t.Errorf("the workers page does not show the live worker as alive:\n%s", body)
	}
	if body, _ := h.page("/", c); !regexp.MustCompile(`workers alive</span>\s*<span class="tile-value">1<`).MatchString(body) {
		t.Errorf("the overview does not count the live worker:\n%s", body)
	}
}
