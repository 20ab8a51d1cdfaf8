/* evalwh serve: the live tail of a running run (server-sent events). Text is set with
   textContent only; no markup from the warehouse is ever parsed. */
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.EventSource) { return; }
  var body = live.querySelector("#live-rows tbody"), MAX_ROWS = 200;
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  var source = new EventSource(live.getAttribute("data-events"));
  source.addEventListener("progress", function (ev) {
    var p = JSON.parse(ev.data);
    document.getElementById("live-progress").textContent = p.n + " / " + p.n_planned;
    document.getElementById("live-passed").textContent = String(p.n_passed);
    document.getElementById("live-errors").textContent = String(p.n_errors);
    document.getElementById("live-status").textContent = p.status;
    var bar = document.getElementById("live-bar");
    bar.max = p.n_planned || 1; bar.value = p.n;
    if (!p.live) {
      source.close();
      live.classList.add("done");
      live.querySelector(".live-badge").textContent = "DONE";
    }
  });
  source.addEventListener("rows", function (ev) {
    JSON.parse(ev.data).forEach(function (r) {
      var tr = document.createElement("tr");
      cell(tr, r.variant + " × " + r.model);
      var a = document.createElement("a");
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
    while (body.children.length > MAX_ROWS) { body.removeChild(body.lastChild); }
  });
  source.onerror = function () { /* EventSource reconnects by itself */ };
}());
