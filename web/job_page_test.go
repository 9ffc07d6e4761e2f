package web

import (
	"context"
	"strings"
	"testing"

	"github.com/queuectl/queuectl/queue"
)

// A job page shows the output of the newest 20 attempts and says how
// many older ones it leaves out: it left them out without a word.
func TestJobPageSaysWhichOutputsItLeavesOut(t *testing.T) {
	h := tokens(t)
	h.enqueue(`{"id":"flaky","command":"false","max_retries":0}`)
	for i := range 22 {
		if i > 0 {
			if _, err := h.store.RetryJobs(context.Background(), queue.RetryParams{IDs: []string{"flaky"}, Now: h.clock.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		h.runJob("flaky", queue.OutcomeFailed, "try\n")
	}
	c := h.signIn(viewerToken)
	page, _ := h.page("/jobs/flaky", c)
	if n := strings.Count(page, `<pre class="output" id="output-`); n != 20 {
		t.Errorf("%d outputs shown, want the newest 20", n)
	}
	if !strings.Contains(page, "The output of the 2 oldest attempts is not shown here") {
		t.Errorf("the page does not say it leaves 2 outputs out:\n%s", page)
	}
}
