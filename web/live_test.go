package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queuectl/queuectl/queue"
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

			body, _ := h.page("/jobs/run", h.signIn(viewerToken))
			if !strings.Contains(body, `id="output-live" data-attempt="1">step 1 &lt;b&gt;`) {
				t.Errorf("the job page lacks the live output:\n%s", body)
			}
			// A refresh beside a stream that holds attempt 1 gets its panel
			// without the text; one that holds another attempt gets it all.
			c := h.signIn(viewerToken)
			for held, want := range map[string]string{
				"1": `id="output-live" data-attempt="1" data-held></pre>`,
				"2": `id="output-live" data-attempt="1">step 1 &lt;b&gt;`,
			} {
				rec := h.must(req{path: "/jobs/run", cookies: []*http.Cookie{c}, header: map[string]string{"Accept": "text/html", "X-Live-Held": held}}, http.StatusOK)
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("X-Live-Held: %s: the page lacks %s", held, want)
				}
			}

			lines := h.events("run")
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

// events opens the event stream of job id on a real server, as the viewer,
// for 30 seconds at most.
func (h *harness) events(id string) *bufio.Scanner {
	h.t.Helper()
	srv := httptest.NewServer(h.srv.Handler())
	h.t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.t.Cleanup(cancel) // before the server closes: it waits for the stream to end
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/jobs/"+id+"/events", nil)
	r.Header.Set("Authorization", "Bearer "+viewerToken)
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { res.Body.Close() })
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
	return lines
}

// liveEvents reads the "live" and "live-append" events of a job's event
// stream and keeps the text a client shows, as app.js does: a "live" event
// replaces it; a "live-append" replaces its unfinished last line.
type liveEvents struct {
	t     *testing.T
	lines *bufio.Scanner
	shown string
}

// next returns the next live event's name and data, applied to l.shown.
func (l *liveEvents) next() (string, liveEvent) {
	l.t.Helper()
	for l.lines.Scan() {
		event, ok := strings.CutPrefix(l.lines.Text(), "event: ")
		if !ok || (event != "live" && event != "live-append") || !l.lines.Scan() {
			continue
		}
		var ev liveEvent
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l.lines.Text(), "data: ")), &ev); err != nil {
			l.t.Fatal(err)
		}
		l.shown = applyLive(l.shown, event, ev.Output)
		return event, ev
	}
	l.t.Fatalf("the stream ended without a live event: %v", l.lines.Err())
	return "", liveEvent{}
}

// applyLive is a client's rule for the live events.
func applyLive(shown, event, output string) string {
	if event == "live-append" {
		return shown[:strings.LastIndexByte(shown, '\n')+1] + output
	}
	return output
}

// After its first "live" event, a stream sends what a running attempt adds
// as "live-append" events: the new output and the unfinished line before it,
// again, cleaned from its start, so that escape sequences, "\r\n" and runes
// cut between two saves come out as cleaning the whole output does. A gap
// longer than the saved tail, or a new attempt, sends "live" again.
func TestLiveAppendsOnlyWhatIsNew(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			h := newHarness(t, sk.open(t), adminToken, viewerToken)
			h.enqueue(`{"id":"run","command":"long","max_retries":1}`)
			job := h.claim("run")
			stream := &liveEvents{t: t, lines: h.events("run")}

			var raw []byte
			start := 0 // where in raw the shown text starts
			// write saves more output and checks the event it brings.
			write := func(more, wantEvent, wantOutput string) liveEvent {
				t.Helper()
				raw = append(raw, more...)
				h.saveLiveOf("run", job.Attempts, raw)
				event, ev := stream.next()
				if event != wantEvent || ev.Output != wantOutput || ev.Written != int64(len(raw)) {
					t.Fatalf("after %q: %s %+v, want %s %q", more, event, ev, wantEvent, wantOutput)
				}
				if want := cleanOutput(settled(raw[start:])); stream.shown != want {
					t.Fatalf("after %q the client shows\n%q\nnot\n%q", more, stream.shown, want)
				}
				return ev
			}
			// Cut in a CSI sequence, then in a rune ("ü" is C3 BC), then
			// after a "\r" that the next save pairs with "\n".
			write("one \x1b[1mbold\x1b[0m\nhalf a line, cut in \x1b[3", "live", "one bold\nhalf a line, cut in ")
			write("1mred\x1b[0m \xc3", "live-append", "half a line, cut in red ")
			write("\xbc done\r", "live-append", "half a line, cut in red ü done")
			write("\nnext line\n", "live-append", "half a line, cut in red ü done\nnext line\n")
			// An escape sequence that runs across a line feed: cleaning is
			// not line by line, and the client never sees "with a line feed".
			write("\x1b]0;a title\nwith a line feed", "live-append", "")
			write("\x07 after the title\n\x1b", "live-append", " after the title\n")
			write("\nstill the line of the ESC\n", "live-append", "still the line of the ESC\n")
			if want := cleanOutput(raw); stream.shown != want {
				t.Fatalf("the client shows\n%q\nnot\n%q", stream.shown, want)
			}

			// More than the saved tail at once: the lines in between are lost,
			// so the tail comes whole, from its first line start.
			var lines strings.Builder
			for i := 0; lines.Len() <= queue.LiveOutputMax; i++ {
				fmt.Fprintf(&lines, "line %d\n", i)
			}
			tail := lines.String()[lines.Len()-queue.LiveOutputMax:]
			tail = tail[strings.IndexByte(tail, '\n')+1:]
			start = len(raw) + lines.Len() - len(tail)
			write(lines.String(), "live", tail)
			write("and on\n", "live-append", "and on\n")

			// A new attempt starts over.
			code := 1
			end := queue.End{Outcome: queue.OutcomeFailed, ExitCode: &code, Error: "exit status 1", Started: h.clock.Now(), Finished: h.clock.Now(), Output: raw}
			if _, err := h.store.FinishJobs(context.Background(), []queue.Finish{queue.RetryPolicy{}.Decide(job, "w1", end, end.Finished)}); err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(time.Hour)
			job = h.claim("run")
			raw, start = nil, 0
			if ev := write("attempt two\n", "live", "attempt two\n"); ev.Attempt != 2 {
				t.Errorf("the new attempt's event is of attempt %d", ev.Attempt)
			}
		})
	}
}

// Whatever the output and wherever the saves cut it, a client that applies
// the events shows the cleaned output from where its last "live" event
// started, as far as it is settled.
func TestLiveCursorRebuildsTheCleanedOutput(t *testing.T) {
	pieces := []string{"a", "b c", "\n", "\r", "\r\n", "\t", "\x1b", "\x1b[", "1;31m", "\x1b]0;t", "\x07", "\x1b\\",
		"\x9b", "2J", "\xc3", "\xbc", "€", "\xe2\x82", "\xac", "\u202e", "\x00", "\x7f", "\xff"}
	rnd := rand.New(rand.NewPCG(1, 2))
	var appends, snapshots int
	for run := 0; run < 2000; run++ {
		keep := 8 + rnd.IntN(56) // the saved tail, small to cut it often
		var raw []byte
		var c liveCursor
		shown, start := "", 0
		const saves = 30
		for save := 0; save <= saves; save++ {
			if save < saves {
				for n := rnd.IntN(6); n >= 0; n-- {
					raw = append(raw, pieces[rnd.IntN(len(pieces))]...)
				}
			} else {
				// The last save ends in a line feed, so nothing is left
				// unsettled: the client shows all of the cleaned output,
				// checked below without settled's help.
				raw = append(raw, '\n')
			}
			l := &queue.LiveOutput{Attempt: 1, Output: raw[max(0, len(raw)-keep):], Written: int64(len(raw))}
			event, ev := c.next(l, time.Time{})
			switch event {
			case "live":
				snapshots++
				start = len(raw) - len(l.Output)
				if start > 0 {
					if i := bytes.IndexByte(l.Output, '\n'); i >= 0 {
						start += i + 1
					}
				}
			case "live-append":
				appends++
			default:
				t.Fatalf("no event for %q", raw)
			}
			shown = applyLive(shown, event, ev.Output)
			want := cleanOutput(settled(raw[start:]))
			if save == saves {
				want = cleanOutput(raw[start:])
			}
			if shown != want {
				t.Fatalf("after %q (%s %q) the client shows\n%q\nnot\n%q", raw[start:], event, ev.Output, shown, want)
			}
		}
	}
	if appends < 10000 || snapshots < 2000 {
		t.Errorf("%d appends and %d snapshots: the cases are not all covered", appends, snapshots)
	}
}

// settled holds back only what the next byte may change: a last rune cut
// short and a last "\r".
func TestSettled(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "abc", "abc\r": "abc", "abc\r\n": "abc\r\n", "ab\t": "ab\t", "ab\xc3": "ab", "ab\xe2\x82": "ab",
		"ab€": "ab€", "ab\xc3\r": "ab\xc3", "\xff": "\xff", "": "",
	} {
		if got := string(settled([]byte(in))); got != want {
			t.Errorf("settled(%q) = %q, want %q", in, got, want)
		}
	}
}
