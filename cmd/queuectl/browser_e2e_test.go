package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The dashboard in a real browser: headless Chromium driven by chromedp
// against the real binary. Screenshots of every page go to
// $QUEUECTL_SCREENSHOT_DIR (docs/screenshots keeps the current ones), else
// to the test's temporary directory.

// chromium returns the browser to drive: missing, the test skips, or in CI
// (CI=true) fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH: CI must run the browser tests (apt-get install chromium)")
	}
	t.Skip("no Chromium on PATH: install chromium to run the browser tests")
	return ""
}

// browser starts headless Chromium with a new empty profile and no
// background networking (the machine may have no network).
func browser(t *testing.T) context.Context {
	t.Helper()
	// Chromium leaves a directory of its sockets in TMPDIR when it is
	// killed: the test's own temporary directory removes it.
	tmp := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Env("TMPDIR=" + tmp),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(filepath.Join(tmp, "profile")),
		chromedp.WindowSize(1440, 960),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// Accept the confirmation dialogs of destructive actions.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return ctx
}

// step runs browser actions with a deadline.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one browser action that returns a value, with a deadline.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot saves the whole page as NAME.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("QUEUECTL_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestE2EBrowserDashboard(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
queue "default" { concurrency = 2 }
queue "reports" { concurrency = 1 }
job "nightly-backup" {
  schedule  = "30 2 * * *"
  time_zone = "Europe/Berlin"
  command   = "echo backing up"
}
job "report" {
  queue    = "reports"
  schedule = "*/15 * * * *"
  command  = "echo report"
}
job "heartbeat" {
  schedule = "* * * * *"
  command  = "true"
}
`)
	c.ok("cron", "trigger", "report", "-c", cfg) // applies the file's recurring jobs
	for i, cmd := range []string{"echo resize image-1.png", "echo send welcome mail", "printf '\\033[32mok\\033[0m\\n'", "sleep 0.3; echo done"} {
		c.ok("enqueue", "--id", "seed-"+string(rune('a'+i)), "--command", cmd)
	}
	c.ok("enqueue", "--id", "broken-import", "--queue", "reports", "--max-retries", "0", "--command", "echo 'import failed: no such table' >&2; exit 3")
	c.ok("worker", "start", "--count", "2")
	c.waitState("broken-import", "dead", 30*time.Second)

	s := startServe(t, c, []string{"QUEUECTL_HTTP_TOKEN=browser-admin"}, "--listen", "127.0.0.1:0")

	// Sign in.
	step(t, ctx, "open the dashboard", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	loc := value(t, ctx, "location", chromedp.Location())
	if !strings.Contains(loc, "/login") {
		t.Fatalf("without a session the dashboard is at %s", loc)
	}
	screenshot(t, ctx, "login")
	step(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS(`#token`), "browser-admin"), chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart-throughput svg`)))

	// A job enqueued from the CLI appears on the jobs page without a reload.
	step(t, ctx, "open jobs", chromedp.Navigate(s.url+"/jobs"), chromedp.WaitVisible(chromedp.CSS(`a[href="/jobs/seed-a"]`)))
	// The job runs until the test opens its gates, one by one, so its
	// output is watched while it runs.
	gate := func(n int) string { return filepath.Join(c.home, fmt.Sprint("gate", n)) }
	wait := func(n int) string { return "while [ ! -e '" + gate(n) + "' ]; do sleep 0.05; done; " }
	c.ok("enqueue", "--id", "live-job", "--command", "echo step 1; "+wait(1)+"printf 'step 2,'; "+wait(2)+"echo ' then 3'; "+wait(3)+
		"echo step 4; "+wait(4)+"echo finished")
	step(t, ctx, "see the new job without reload", chromedp.WaitVisible(chromedp.CSS(`a[href="/jobs/live-job"]`)))
	screenshot(t, ctx, "jobs")

	// Open it and watch its output arrive.
	step(t, ctx, "open the job", chromedp.Click(chromedp.CSS(`a[href="/jobs/live-job"]`)), chromedp.WaitVisible(chromedp.CSS(`#job-state`)))
	step(t, ctx, "watch its output while it runs", chromedp.WaitVisible(`//pre[@id="output-live"][contains(text(), "step 1")]`))
	if state := value(t, ctx, "state", chromedp.Text(chromedp.CSS(`#job-state`))); state != "processing" {
		t.Errorf("live output shown while the job is %q", state)
	}
	screenshot(t, ctx, "job-running")
	// What it prints next comes through the event stream, appended; an
	// unfinished line is completed. The page's refreshes, which would show
	// it too, are held meanwhile (their fetch fails).
	appends := `window.appends = 0; new EventSource(document.querySelector("[data-events]").dataset.events).
		addEventListener("live-append", () => window.appends++); true`
	value(t, ctx, "count the appends", chromedp.Evaluate[bool](appends))
	refreshes := func(on bool) {
		t.Helper()
		js := `window.pageFetch = window.pageFetch || window.fetch; window.fetch = () => Promise.reject(new Error("held by the test")); true`
		if on {
			js = `window.fetch = window.pageFetch; true`
		}
		value(t, ctx, "hold or resume refreshes", chromedp.Evaluate[bool](js))
	}
	shows := func(text string) string { return `//pre[@id="output-live"][. = "` + text + `"]` }
	refreshes(false)
	writeFile(t, gate(1), "")
	step(t, ctx, "see an unfinished line", chromedp.WaitVisible(shows("step 1\nstep 2,")))
	writeFile(t, gate(2), "")
	step(t, ctx, "see it finished", chromedp.WaitVisible(shows("step 1\nstep 2, then 3\n")))
	// The page says when its refreshes fail, and again when they work.
	dot := func(text string) string { return `//span[contains(@class, "live-dot")][. = "` + text + `"]` }
	step(t, ctx, "see the page say it is not updating", chromedp.WaitVisible(dot("not updating")))
	// A refresh of the live region keeps the output, and what comes next
	// still continues it.
	value(t, ctx, "mark the live region", chromedp.Evaluate[bool](`document.querySelector("[data-live]").classList.add("seen"); true`))
	refreshes(true)
	step(t, ctx, "see the region refreshed", chromedp.WaitVisible(`//*[@data-live][not(contains(@class, "seen"))]`+shows("step 1\nstep 2, then 3\n")))
	step(t, ctx, "see the page say it is live again", chromedp.WaitVisible(dot("live")))
	refreshes(false)
	writeFile(t, gate(3), "")
	step(t, ctx, "see a line appended after the refresh", chromedp.WaitVisible(shows("step 1\nstep 2, then 3\nstep 4\n")))
	if n := value(t, ctx, "appends", chromedp.Evaluate[int](`window.appends`)); n == 0 {
		t.Error("the output came without live-append events")
	}
	refreshes(true)
	writeFile(t, gate(4), "")
	step(t, ctx, "see it finish without reload", chromedp.WaitVisible(`//pre[@id="output-1"][. = "`+"step 1\nstep 2, then 3\nstep 4\nfinished\n"+`"]`))
	if cancel := value(t, ctx, "cancel button", chromedp.Evaluate[bool](`document.querySelector("#cancel") !== null`)); cancel {
		t.Error("the finished job still offers Cancel")
	}
	// It no longer updates, so it no longer says "live", as a finished
	// job's page loaded afresh does not.
	step(t, ctx, "see the live indicator go", chromedp.WaitNotVisible(chromedp.CSS(`.live-dot`)))
	screenshot(t, ctx, "job")

	// A chatty job: the page keeps about the last 64 KiB of its output,
	// from a line start, and the lines a reader scrolled up to stay put.
	seq := func(from, to int) string {
		return fmt.Sprintf("seq -f 'line %%05g: some output of a chatty job' %d %d; ", from, to)
	}
	c.ok("enqueue", "--id", "chatty", "--command", seq(1, 1600)+wait(5)+seq(1601, 1800)+wait(6))
	step(t, ctx, "open the chatty job", chromedp.Navigate(s.url+"/jobs/chatty"), chromedp.WaitVisible(`//pre[@id="output-live"][contains(., "line 01600")]`))
	const pre = `document.getElementById("output-live")`
	if end := value(t, ctx, "where it opens", chromedp.Evaluate[bool](`(p => p.scrollTop + p.clientHeight >= p.scrollHeight - 4)(`+pre+`)`)); !end {
		t.Error("the running attempt's output does not open at its newest lines")
	}
	// topLine scrolls the panel into view and returns the start of the line at its top.
	const topLine = `(p => { p.scrollIntoView(); const r = p.getBoundingClientRect();
		const c = document.caretRangeFromPoint(r.left + 30, r.top + parseFloat(getComputedStyle(p).paddingTop) + 4);
		const t = c.startContainer.textContent; return t.slice(t.lastIndexOf("\n", c.startOffset - 1) + 1).slice(0, 10); })(` + pre + `)`
	refreshes(false)
	value(t, ctx, "scroll up", chromedp.Evaluate[bool](`(p => { p.scrollTop = 300 * parseFloat(getComputedStyle(p).lineHeight); return true; })(`+pre+`)`))
	before := value(t, ctx, "the top line", chromedp.Evaluate[string](topLine))
	writeFile(t, gate(5), "")
	step(t, ctx, "see more output", chromedp.WaitVisible(`//pre[@id="output-live"][contains(., "line 01800")]`))
	if after := value(t, ctx, "the top line", chromedp.Evaluate[string](topLine)); after != before || !strings.HasPrefix(before, "line 00") {
		t.Errorf("the reader's top line was %q and is %q", before, after)
	}
	// 72,000 bytes written: the first 162 lines go.
	if start := value(t, ctx, "the output's start", chromedp.Evaluate[string](pre+`.textContent.slice(0, 11)`)); start != "line 00163:" {
		t.Errorf("the panel keeps the output from %q", start)
	}
	refreshes(true)
	writeFile(t, gate(6), "")

	// Retry a dead job from the dead-letter queue.
	step(t, ctx, "open the DLQ", chromedp.Navigate(s.url+"/dlq"), chromedp.WaitVisible(chromedp.CSS(`a[href="/jobs/broken-import"]`)))
	screenshot(t, ctx, "dlq")
	step(t, ctx, "open the dead job", chromedp.Click(chromedp.CSS(`a[href="/jobs/broken-import"]`)), chromedp.WaitVisible(chromedp.CSS(`#retry`)))
	// Its queue paused, the retried job waits, so the page that shows the
	// retry's message follows it (refreshing) until it runs.
	c.ok("queue", "pause", "reports")
	step(t, ctx, "retry it", chromedp.Click(chromedp.CSS(`#retry`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	// The message stays on the page but leaves the address, so that a
	// reload does not announce the retry again.
	if loc := value(t, ctx, "location after the retry", chromedp.Location()); strings.Contains(loc, "done=") {
		t.Errorf("the address still carries the action's message: %s", loc)
	}
	c.ok("queue", "resume", "reports")
	waitFor(t, "the retried job to run again", 30*time.Second, func() bool {
		j := c.job("broken-import")
		return j.State == "dead" && j.Attempts == 1 && len(c.ok("show", "broken-import")) > 0 && strings.Count(c.ok("show", "broken-import"), "failed") >= 2
	})
	// The page follows the job to its end, and the retry's message stays
	// through those refreshes.
	step(t, ctx, "see the retried job dead again", chromedp.WaitVisible(`//*[@id="job-state"][contains(text(), "dead")]`))
	if flash := value(t, ctx, "message after the refreshes", chromedp.Evaluate[string](`(document.querySelector(".flash") || {}).textContent || ""`)); flash == "" {
		t.Error("the retry's message left the page when it refreshed")
	}

	// Enqueue a job from the dashboard's form.
	step(t, ctx, "open the enqueue form", chromedp.Navigate(s.url+"/jobs"), chromedp.Click(chromedp.CSS(`#new-job`)),
		chromedp.WaitVisible(chromedp.CSS(`#f-command`)))
	step(t, ctx, "fill it in", chromedp.SendKeys(chromedp.CSS(`#f-command`), "./scripts/thumbnails.sh --size 256"),
		chromedp.SendKeys(chromedp.CSS(`#f-queue`), "reports"), chromedp.SendKeys(chromedp.CSS(`#f-id`), "from-the-form"),
		chromedp.SendKeys(chromedp.CSS(`#f-timeout`), "10m"))
	screenshot(t, ctx, "enqueue")
	step(t, ctx, "enqueue it", chromedp.Click(chromedp.CSS(`#enqueue`)), chromedp.WaitVisible(chromedp.CSS(`#job-state`)))
	if j := c.job("from-the-form"); j.Queue != "reports" {
		t.Errorf("the form's job is in queue %q", j.Queue)
	}

	// The overview's charts render.
	step(t, ctx, "overview", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#chart-throughput svg rect.bar-ok`)))
	bars := value(t, ctx, "chart bars", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#chart-throughput rect")).map(r => r.getAttribute("height"))`))
	if len(bars) == 0 {
		t.Error("the throughput chart has no bars")
	}
	screenshot(t, ctx, "overview")
	step(t, ctx, "cron", chromedp.Navigate(s.url+"/cron"), chromedp.WaitVisible(`//div[contains(text(), "every 15 minutes")]`))
	screenshot(t, ctx, "cron")
	// On a phone the table scrolls sideways and its rows stay a few lines
	// tall: a next fire squeezed into a narrow column once took three
	// lines, and each row about 200 px.
	step(t, ctx, "cron on a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/cron"),
		chromedp.WaitVisible(`//div[contains(text(), "every 15 minutes")]`))
	rows := value(t, ctx, "cron row heights", chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll(".grid tbody tr")).map(r => r.getBoundingClientRect().height)`))
	if len(rows) == 0 || slices.Max(rows) > 120 {
		t.Errorf("cron rows at 390 px are %v px tall, want at most 120", rows)
	}
	step(t, ctx, "back to a desktop", chromedp.EmulateViewport(1440, 960))
	step(t, ctx, "workers", chromedp.Navigate(s.url+"/workers"), chromedp.WaitVisible(chromedp.CSS(`.grid`)))
	step(t, ctx, "pause a queue", chromedp.Click(chromedp.CSS(`#pause-reports`)), chromedp.WaitVisible(chromedp.CSS(`#resume-reports`)))
	if out := c.ok("queue", "list", "--json"); !strings.Contains(out, `"paused": true`) {
		t.Errorf("the queue paused from the page is not paused:\n%s", out)
	}
	screenshot(t, ctx, "workers")
	// A queue's limits, from the form its Limits button opens.
	step(t, ctx, "open the limits form", chromedp.Click(chromedp.CSS(`#limits-default`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/queues/default/limits"] input[name="max_running"]`)))
	screenshot(t, ctx, "workers-limits")
	step(t, ctx, "set the limits", chromedp.SendKeys(chromedp.CSS(`form[action="/queues/default/limits"] input[name="max_running"]`), "3"),
		chromedp.SendKeys(chromedp.CSS(`form[action="/queues/default/limits"] input[name="rate_limit"]`), "20/m"),
		chromedp.Click(chromedp.CSS(`form[action="/queues/default/limits"] button`)),
		chromedp.WaitVisible(`//div[contains(text(), "3 running at most")]`))
	var queues []struct {
		Name       string  `json:"name"`
		MaxRunning int     `json:"max_running"`
		RateLimit  *string `json:"rate_limit"`
	}
	if err := json.Unmarshal([]byte(c.ok("queue", "list", "--json")), &queues); err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if q.Name == "default" && (q.MaxRunning != 3 || q.RateLimit == nil || *q.RateLimit != "20/m") {
			t.Errorf("the limits set from the page are not stored: %+v", q)
		}
	}

	// Retry every dead job of a queue: the message, with its count, leaves
	// the address as the job page's does.
	step(t, ctx, "open the reports DLQ", chromedp.Navigate(s.url+"/dlq?queue=reports"), chromedp.WaitVisible(chromedp.CSS(`#dlq-retry`)))
	step(t, ctx, "retry them all", chromedp.Click(chromedp.CSS(`#dlq-retry`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if loc := value(t, ctx, "location after retrying all", chromedp.Location()); strings.Contains(loc, "done=") || strings.Contains(loc, "n=") ||
		!strings.HasSuffix(loc, "/dlq?queue=reports") {
		t.Errorf("after retrying all dead jobs the address is %s", loc)
	}
}

// On a phone, a queue named at length (up to 200 bytes are allowed) does
// not widen the pages whose queue filter lists it: a select is as wide as
// its longest option, and once made the jobs and dead-letter pages scroll
// sideways at 390 px. Nor do the pages that name it in their text: with
// no hyphen to break at, the dead-letter page's count of its jobs and a
// job page's path to its queue did.
func TestE2EBrowserLongQueueNameOnAPhone(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	long := "q" + strings.Repeat("_a_long_queue_name", 8)
	c.ok("enqueue", "--id", "long-queue-job", "--queue", long, "--max-retries", "0", "--command", "exit 3")
	c.ok("worker", "start", "--count", "1")
	c.waitState("long-queue-job", "dead", 30*time.Second)
	s := startServe(t, c, []string{"QUEUECTL_HTTP_TOKEN=browser-admin"}, "--listen", "127.0.0.1:0")
	step(t, ctx, "sign in on a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)), chromedp.SendKeys(chromedp.CSS(`#token`), "browser-admin"),
		chromedp.Submit(chromedp.CSS(`#token`)), chromedp.WaitVisible(chromedp.CSS(`.tiles`)))
	for path, shown := range map[string]string{"/jobs": `a[href="/jobs/long-queue-job"]`, "/dlq": `a[href="/jobs/long-queue-job"]`,
		"/dlq?queue=" + long: `a[href="/jobs/long-queue-job"]`, "/jobs/long-queue-job": `#job-state`} {
		step(t, ctx, "open "+path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS(shown)))
		if w := value(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
			t.Errorf("%s is %d px wide on a 390 px screen", path, w)
		}
	}
}

// A queue's Limits form, once opened, stays open through the page's
// refreshes with what was typed in it: the refresh swapped it for a
// closed one within 3 seconds unless a field had the focus.
func TestE2EBrowserLimitsFormSurvivesRefresh(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	c.ok("enqueue", "--id", "later", "--run-at", "+1h", "--command", "true")
	s := startServe(t, c, nil, "--listen", "127.0.0.1:0")
	const input = `form[action="/queues/default/limits"] input[name="max_running"]`
	step(t, ctx, "type a limit", chromedp.Navigate(s.url+"/workers"), chromedp.Click(chromedp.CSS(`#limits-default`)),
		chromedp.SendKeys(chromedp.CSS(input), "7"), chromedp.Click(chromedp.CSS(`h1`)))
	value(t, ctx, "mark the live region", chromedp.Evaluate[bool](`document.querySelector("[data-live]").classList.add("seen"); true`))
	step(t, ctx, "see the region refreshed", chromedp.WaitVisible(`//*[@data-live][not(contains(@class, "seen"))]`))
	got := value(t, ctx, "the form", chromedp.Evaluate[string](`document.querySelector("#limits-default").parentElement.open + " " +
		document.querySelector('`+input+`').value`))
	if got != "true 7" {
		t.Errorf("after a refresh the Limits form's open state and max running are %q, want \"true 7\"", got)
	}
}

// On a phone, the message after a trigger, which links the job it added,
// wraps a long job id: a recurring job named with underscores (no place
// to break) made the cron page scroll sideways.
func TestE2EBrowserTriggerMessageOnAPhone(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	const name = "nightly_database_backup_of_all_the_customer_records_and_invoices"
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
queue "default" { concurrency = 1 }
job "`+name+`" {
  schedule = "30 2 * * *"
  overlap  = "allow"
  command  = "true"
}
`)
	c.ok("cron", "trigger", name, "-c", cfg) // applies the file's recurring jobs
	s := startServe(t, c, nil, "--listen", "127.0.0.1:0")
	step(t, ctx, "trigger on a phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/cron"),
		chromedp.Click(chromedp.CSS(`form[action="/cron/`+name+`/trigger"] button`)), chromedp.WaitVisible(chromedp.CSS(`.flash a`)))
	if w := value(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("after a trigger the cron page is %d px wide on a 390 px screen", w)
	}
}

// The message after a trigger, with the job it links, leaves the address
// as every action's message does: the job stayed in it.
func TestE2EBrowserTriggerAddress(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	cfg := filepath.Join(c.home, "queue.hcl")
	writeFile(t, cfg, `
job "report" {
  schedule = "*/15 * * * *"
  overlap  = "allow"
  command  = "true"
}
`)
	c.ok("cron", "trigger", "report", "-c", cfg) // applies the file's recurring jobs
	s := startServe(t, c, nil, "--listen", "127.0.0.1:0")
	step(t, ctx, "trigger", chromedp.Navigate(s.url+"/cron"),
		chromedp.Click(chromedp.CSS(`form[action="/cron/report/trigger"] button`)), chromedp.WaitVisible(chromedp.CSS(`.flash a`)))
	if loc := value(t, ctx, "location after the trigger", chromedp.Location()); !strings.HasSuffix(loc, "/cron") {
		t.Errorf("after a trigger the address is %s", loc)
	}
}

// On a phone, an error that names a long job id wraps it: an id need not
// hold a hyphen to break at, and the error page and the enqueue form's
// error then pushed the page past the screen.
func TestE2EBrowserLongIDInErrorsOnAPhone(t *testing.T) {
	ctx := browser(t)
	c := newCLI(t)
	long := "job" + strings.Repeat("_with_a_long_id", 8)
	c.ok("enqueue", "--id", long, "--run-at", "+1h", "--command", "true")
	s := startServe(t, c, nil, "--listen", "127.0.0.1:0")
	step(t, ctx, "open a job that is not there", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/jobs/"+long+"_2"),
		chromedp.WaitVisible(chromedp.CSS(`.error-card`)))
	width := func(what string) {
		t.Helper()
		if w := value(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
			t.Errorf("%s is %d px wide on a 390 px screen", what, w)
		}
	}
	width("the error page")
	step(t, ctx, "enqueue a job whose id is taken", chromedp.Navigate(s.url+"/enqueue"),
		chromedp.SendKeys(chromedp.CSS(`#f-command`), "true"), chromedp.SendKeys(chromedp.CSS(`#f-id`), long),
		chromedp.Click(chromedp.CSS(`#enqueue`)), chromedp.WaitVisible(chromedp.CSS(`#enqueue-error`)))
	width("the refused enqueue form")
}
