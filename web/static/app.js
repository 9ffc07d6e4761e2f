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

  // An action's message came in the address (?done=…): it is on the page
  // now; take it out of the address so that a reload or a bookmark does not
  // announce the action again.
  if (window.history && window.history.replaceState && /[?&]done=/.test(window.location.search)) {
    var u = new URL(window.location.href);
    u.searchParams.delete("done");
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
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
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
          if (follow || newPre.getAttribute("data-attempt") !== oldAttempt) { toEnd(newPre); } else { newPre.scrollTop = oldTop; }
        }
        // An action's message (.flash) sits outside the live region and
        // stays until the reader leaves the page: the address no longer
        // carries it, so no refreshed copy of the page has it.
        document.body.classList.remove("stale");
        if (!live.hasAttribute("data-live")) { stopEvents(); }
      })
      .catch(function () { document.body.classList.add("stale"); })
      .finally(function () { busy = false; });
  }

  var source = null;
  function stopEvents() {
    if (source) { source.close(); source = null; }
  }
  var events = live.getAttribute("data-events");
  if (events && window.EventSource) {
    // A running job: refresh whenever its stream says it changed.
    source = new EventSource(events);
    source.addEventListener("job", refresh);
    source.addEventListener("output", refresh);
    // The running attempt's output so far: set as text, never as markup.
    source.addEventListener("live", function (ev) {
      var pre = document.getElementById("output-live");
      var note = document.getElementById("output-live-note");
      var data;
      try { data = JSON.parse(ev.data); } catch (e) { return; }
      if (!pre || String(data.attempt) !== pre.getAttribute("data-attempt")) { refresh(); return; }
      var follow = atEnd(pre);
      pre.textContent = data.output;
      if (follow) { toEnd(pre); }
      if (note) {
        note.textContent = data.written + " bytes written" + (data.written > 65536 ? "; the last 64 KiB shown" : "");
      }
    });
    source.addEventListener("end", function () { stopEvents(); refresh(); });
  }
  window.setInterval(refresh, 3000);
  document.addEventListener("visibilitychange", refresh);
})();
