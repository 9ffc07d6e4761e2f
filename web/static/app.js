// queuectl dashboard: the little script the pages need. Pages work without
// it; with it they refresh their live region, ask before destructive
// actions, and follow a running job through server-sent events.
(function () {
  "use strict";

  // Ask before a form marked data-confirm submits.
  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      ev.preventDefault();
    }
  });

  // Selects marked data-autosubmit submit their form on change.
  document.addEventListener("change", function (ev) {
    if (ev.target.hasAttribute && ev.target.hasAttribute("data-autosubmit")) {
      ev.target.form.submit();
    }
  });

  // Mark the tables too wide for their box: their pinned action column then
  // casts a shadow over the columns that scroll beneath it.
  function markScrolling() {
    document.querySelectorAll(".table-wrap").forEach(function (w) {
      w.classList.toggle("scrolls", w.scrollWidth > w.clientWidth + 1);
    });
  }
  markScrolling();
  window.addEventListener("resize", markScrolling);

  // An action's message came in the address (?done=…, with its count in
  // n=… and the job it links in job=…): it is on the page now; take it
  // out of the address so that a reload or a bookmark does not announce
  // the action again.
  if (window.history && window.history.replaceState && /[?&]done=/.test(window.location.search)) {
    var u = new URL(window.location.href);
    u.searchParams.delete("done");
    u.searchParams.delete("n");
    u.searchParams.delete("job");
    window.history.replaceState(null, "", u.pathname + u.search + u.hash);
  }

  var live = document.querySelector("[data-live]");
  if (!live) {
    var dot = document.querySelector(".live-dot");
    if (dot) { dot.classList.add("off"); }
    return;
  }

  // The running attempt's output panel follows the newest lines while its
  // reader is at the bottom, and stays put while they scroll up to read.
  function atEnd(pre) { return pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4; }
  function toEnd(pre) { pre.scrollTop = pre.scrollHeight; }
  // It opens at the newest lines, however much output came first.
  var firstPre = document.getElementById("output-live");
  if (firstPre) { toEnd(firstPre); }

  var busy = false;
  // refresh fetches this page again and swaps its live region, keeping
  // which output panels are open.
  function refresh() {
    if (busy || document.hidden || !live.hasAttribute("data-live")) { return; }
    // Never swap a form control out from under the person using it.
    var active = document.activeElement;
    if (active && live.contains(active) && /^(SELECT|INPUT|TEXTAREA)$/.test(active.tagName)) { return; }
    busy = true;
    // While the event stream keeps the running attempt's output, the page
    // need not send it again: X-Live-Held names the attempt held, and the
    // server leaves that panel's text out (data-held), about 64 KiB less
    // every few seconds for a chatty job.
    var headers = { "Accept": "text/html" };
    var asked = streaming() ? held.attempt : "";
    if (asked) { headers["X-Live-Held"] = asked; }
    var again = false;
    fetch(window.location.href, { headers: headers, credentials: "same-origin" })
      .then(function (res) {
        if (res.redirected || !res.ok) { throw new Error("status " + res.status); }
        return res.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById(live.id);
        if (!fresh) { return; }
        var open = {};
        live.querySelectorAll("details[data-keep]").forEach(function (d) {
          open[d.getAttribute("data-keep")] = d.open;
        });
        fresh.querySelectorAll("details[data-keep]").forEach(function (d) {
          var k = d.getAttribute("data-keep");
          if (k in open) { d.open = open[k]; }
        });
        // A queue's Limits form its reader opened stays as it is, with
        // what they typed, though no field has the focus.
        var editing = {};
        live.querySelectorAll("details.limits-edit[open]").forEach(function (d) {
          editing[d.getAttribute("data-keep")] = d;
        });
        fresh.querySelectorAll("details.limits-edit").forEach(function (d) {
          var k = d.getAttribute("data-keep");
          if (editing[k]) { d.replaceWith(editing[k]); }
        });
        // The fresh panel starts at the top: put it where the reader was,
        // at the newest lines if they were following or it is a new
        // attempt's panel.
        var oldPre = document.getElementById("output-live");
        var follow = !oldPre || atEnd(oldPre);
        var oldTop = oldPre ? oldPre.scrollTop : 0;
        var oldAttempt = oldPre && oldPre.getAttribute("data-attempt");
        live.replaceWith(fresh);
        live = fresh;
        markScrolling();
        var newPre = document.getElementById("output-live");
        if (newPre) {
          // The page's panel may be older or newer than the text the event
          // stream built, which its next "live-append" continues: keep that.
          if (streaming() && newPre.getAttribute("data-attempt") === held.attempt) {
            showHeld(newPre);
          } else if (newPre.hasAttribute("data-held")) {
            // The stream ended while this page was asked for without the
            // text: ask again, for all of it.
            again = true;
          }
          if (follow || newPre.getAttribute("data-attempt") !== oldAttempt) { toEnd(newPre); } else { newPre.scrollTop = oldTop; }
        }
        // An action's message (.flash) sits outside the live region and
        // stays until the reader leaves the page: the address no longer
        // carries it, so no refreshed copy of the page has it.
        stale(false);
        // A page whose live region ends (its job finished) stops
        // updating: its indicator goes, as on a page loaded that way.
        if (!live.hasAttribute("data-live")) {
          stopEvents();
          var dot = document.querySelector(".live-dot");
          if (dot) { dot.classList.add("off"); }
        }
      })
      .catch(function () { stale(true); })
      .finally(function () {
        busy = false;
        if (again) { refresh(); }
      });
  }

  // stale says, on the live indicator too, that the page stopped updating:
  // its refresh failed (the session ended, or the server does not answer).
  function stale(on) {
    document.body.classList.toggle("stale", on);
    var dot = document.querySelector(".live-dot");
    if (!dot) { return; }
    dot.textContent = on ? "not updating" : "live";
    dot.title = on ? "This page could not refresh (signed out, or the server does not answer): reload it" : "This page updates itself";
  }

  // streaming reports whether the event stream holds the running
  // attempt's output.
  function streaming() {
    return held !== null && source !== null && source.readyState !== EventSource.CLOSED;
  }

  // The running attempt's output as the event stream sent it: a "live"
  // event sends it whole (its last 64 KiB), a "live-append" what follows
  // its last line break, so the unfinished last line comes again, whole,
  // with what came after it. held is that text and its attempt; heldPre the
  // panel that shows exactly it, whose text nodes an append changes.
  var held = null;
  var heldPre = null;
  var heldMax = 65536;

  // cutText removes n characters of text from the start (or end) of pre.
  function cutText(pre, n, atStart) {
    while (n > 0 && pre.firstChild) {
      var node = atStart ? pre.firstChild : pre.lastChild;
      if (node.length <= n) {
        n -= node.length;
        node.remove();
      } else {
        node.deleteData(atStart ? 0 : node.length - n, n);
        n = 0;
      }
    }
  }

  // showHeld sets pre's text (as text, never as markup) to the held text.
  function showHeld(pre) {
    pre.textContent = held.text;
    heldPre = pre;
    showWritten();
  }
  function showWritten() {
    var note = document.getElementById("output-live-note");
    if (note) {
      note.textContent = held.written + " bytes written" + (held.written > heldMax ? "; the last 64 KiB shown" : "");
    }
  }
  function forget() {
    held = null;
    heldPre = null;
  }

  // onLive applies a "live" or "live-append" event.
  function onLive(ev, append) {
    var data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    var attempt = String(data.attempt);
    if (append && (!held || held.attempt !== attempt)) {
      // It continues a text this page lacks: start over, from a "live".
      stopEvents();
      startEvents();
      return;
    }
    var old = held ? held.text : "";
    var kept = append ? old.lastIndexOf("\n") + 1 : 0;
    var text = old.slice(0, kept) + data.output;
    // Keep about the last 64 KiB, from a line start.
    var cut = text.length > heldMax ? text.indexOf("\n", text.length - heldMax) + 1 : 0;
    held = { attempt: attempt, text: text.slice(cut), written: data.written };
    var pre = document.getElementById("output-live");
    if (!pre || attempt !== pre.getAttribute("data-attempt")) { heldPre = null; refresh(); return; }
    var follow = atEnd(pre);
    if (append && pre === heldPre) {
      // Change only the end, and the start when it is cut: the lines the
      // reader scrolled up to stay where they are.
      cutText(pre, old.length - kept, false);
      if (data.output) { pre.appendChild(document.createTextNode(data.output)); }
      if (pre.childNodes.length > 100) { pre.normalize(); }
      if (cut > 0) {
        var height = pre.scrollHeight;
        cutText(pre, cut, true);
        if (!follow) { pre.scrollTop -= height - pre.scrollHeight; }
      }
      showWritten();
    } else {
      showHeld(pre);
    }
    if (follow) { toEnd(pre); }
  }

  var source = null;
  function stopEvents() {
    if (source) { source.close(); source = null; }
    forget();
  }
  var events = live.getAttribute("data-events");
  function startEvents() {
    // A running job: refresh whenever its stream says it changed.
    source = new EventSource(events);
    source.addEventListener("job", function (ev) {
      // A job that stopped running holds no live output.
      try { if (JSON.parse(ev.data).state !== "processing") { forget(); } } catch (e) { /* refresh anyway */ }
      refresh();
    });
    source.addEventListener("output", refresh);
    source.addEventListener("live", function (ev) { onLive(ev, false); });
    source.addEventListener("live-append", function (ev) { onLive(ev, true); });
    source.addEventListener("end", function () { stopEvents(); refresh(); });
    source.addEventListener("open", function () { retryIn = 1000; });
    // A dropped connection the browser retries by itself; a refused one
    // (the database did not answer, 503) it gives up on: try again later,
    // waiting longer each time, while the job still runs.
    source.addEventListener("error", function () {
      if (!source || source.readyState !== EventSource.CLOSED) { return; }
      stopEvents();
      window.setTimeout(function () {
        if (!source && live.hasAttribute("data-live")) { startEvents(); }
      }, retryIn);
      retryIn = Math.min(retryIn * 2, 30000);
    });
  }
  var retryIn = 1000;
  if (events && window.EventSource) { startEvents(); }
  window.setInterval(refresh, 3000);
  document.addEventListener("visibilitychange", refresh);
})();
