/* evalwh serve: the keyboard help (the ? key) and the live tail of a running run
   (server-sent events). Text from the warehouse is set with textContent only. */
(function () {
  "use strict";
  var doc = document;

  /* -- the keys' dialog: ? opens it (not while typing in a field), Escape closes it. A page
     whose own template brings its list of keys (the report's run page: #help, report.js)
     leaves ? to that one; the nav's Keys button still opens this one. ------------------ */
  var help = doc.getElementById("keys-help"), opener = null;
  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }
  function showHelp() {
    if (!help || help.open) { return; }
    opener = doc.activeElement;
    help.showModal();
    doc.getElementById("keys-help-close").focus();
  }
  if (help) {
    doc.getElementById("keys-help-button").addEventListener("click", showHelp);
    doc.addEventListener("keydown", function (ev) {
      if (doc.getElementById("help")) { return; }
      if (ev.key === "?" && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !typing(ev.target)) {
        ev.preventDefault();
        showHelp();
      }
    });
    /* keys typed in the dialog stay in it: a page's own shortcuts (a, t, b ...) do not fire */
    help.addEventListener("keydown", function (ev) { ev.stopPropagation(); });
    help.addEventListener("close", function () {  /* Escape or Close: focus goes back */
      if (opener && opener.focus) { opener.focus(); }
    });
  }

  /* -- the live tail ------------------------------------------------------------------------ */
  var live = doc.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var body = live.querySelector("#live-rows tbody");
  var keep = Number(live.getAttribute("data-keep")) || 1000, seen = {}, dropped = 0;
  function $(id) { return doc.getElementById(id); }
  function cell(tr, text, cls) {
    var td = doc.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function showProgress(p) {
    $("live-progress").textContent = p.n + " / " + p.n_planned;
    $("live-passed").textContent = String(p.n_passed);
    $("live-errors").textContent = String(p.n_errors);
    $("live-status").textContent = p.status;
    var bar = $("live-bar");
    bar.max = p.n_planned || 1; bar.value = p.n;
  }
  /* The run is over: the report's header parts rendered while it ran are fetched again from
     this page's own URL (the server's autoescaped HTML, parsed inertly) and put in place. */
  var REFRESHED = ["#report dl.meta", "#gate", "#report table.scorecard"];
  function refreshHeader() {
    return fetch(location.pathname, { credentials: "same-origin" }).then(function (r) {
      return r.text();
    }).then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      REFRESHED.forEach(function (sel) {
        var old = doc.querySelector(sel), now = fresh.querySelector(sel);
        if (old && now) { old.replaceWith(doc.importNode(now, true)); }
      });
    });
  }
  var source = new EventSource(live.getAttribute("data-events"));
  source.addEventListener("progress", function (ev) { showProgress(JSON.parse(ev.data)); });
  source.addEventListener("end", function (ev) {
    var p = JSON.parse(ev.data);
    source.close();  /* only here: every row came before this event */
    showProgress(p);
    live.classList.add("done");
    live.querySelector(".live-badge").textContent = "DONE";
    $("live-heading").textContent = "The run is over";
    refreshHeader().then(function () {
      var ended = $("live-ended");
      ended.textContent = "The run ended " + p.status + " with " + p.n + " of " + p.n_planned +
        " answers stored; the run's figures below are final (reload the page for its case list and charts).";
      ended.hidden = false;
      live.setAttribute("data-ended", p.status);
    });
  });
  source.addEventListener("rows", function (ev) {
    JSON.parse(ev.data).forEach(function (r) {
      var key = [r.variant, r.model, r.case_id, r.repeat].join("\u0000");
      if (seen[key]) { return; }  /* sent again after a reconnect */
      seen[key] = 1;
      var tr = doc.createElement("tr");
      tr.setAttribute("data-case", r.case_id);
      cell(tr, r.variant + " × " + r.model);
      var a = doc.createElement("a");
      a.href = live.getAttribute("data-case-url") + encodeURIComponent(r.case_id);
      a.textContent = r.case_id;
      cell(tr, "").appendChild(a);
      cell(tr, String(r.repeat), "n");
      cell(tr, r.error_kind ? "error: " + r.error_kind : (r.passed ? "pass" : "fail"), r.passed ? "good" : "bad");
      cell(tr, r.score === null ? "–" : r.score.toFixed(2), "n");
      cell(tr, (r.latency_ms === null ? "–" : Math.round(r.latency_ms) + " ms") +
        (r.queued_ms >= 1 ? " (+" + Math.round(r.queued_ms) + " ms queued)" : ""), "n");
      body.insertBefore(tr, body.firstChild);
    });
    while (body.children.length > keep) { body.removeChild(body.lastChild); dropped += 1; }
    if (dropped) {
      $("live-dropped").textContent = "This table keeps the newest " + keep + " answers; " +
        dropped + " earlier ones are in the run's case list.";
      $("live-dropped").hidden = false;
    }
  });
  source.onerror = function () { /* EventSource reconnects by itself until the end event */ };
}());
