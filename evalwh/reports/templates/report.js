/* evalwh report: tabs, the case list with filters and drill-down, and blind labelling.
   Hand-written, no library. Every piece of data is set with textContent, never as HTML. */
(function () {
  "use strict";
  var doc = document;
  doc.documentElement.classList.add("js");
  var node = doc.getElementById("evalwh-data");
  var data = node ? JSON.parse(node.textContent) : {};
  var PAGE = 50;

  function el(tag, props, kids) {
    var e = doc.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === "text") { e.textContent = props[k]; }
      else if (k === "cls") { e.className = props[k]; }
      else { e.setAttribute(k, props[k]); }
    });
    (kids || []).forEach(function (kid) {
      if (kid !== null && kid !== undefined) { e.appendChild(typeof kid === "string" ? doc.createTextNode(kid) : kid); }
    });
    return e;
  }
  function $(id) { return doc.getElementById(id); }
  function num(x, d) { return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 3 : d); }
  function clip(text, full, note) {
    var kids = [el("pre", { text: text === null || text === undefined ? "" : text })];
    if (full > (text || "").length) {
      kids.push(el("p", { cls: "muted", text: "(" + full.toLocaleString("en") + " characters; the first " + (text || "").length.toLocaleString("en") + " shown" + (note || "") + ")" }));
    }
    return kids;
  }
  function filesBlock(list) {  /* a question's attached files: an image inline, else name, size, hash */
    if (!list || !list.length) { return null; }
    var ul = el("ul", { cls: "files" });
    list.forEach(function (f) {
      var src = (data.files || {})[f.sha256];
      var said = [f.name + ": " + f.type + ", " + (f.bytes === null || f.bytes === undefined ? "?" : Number(f.bytes).toLocaleString("en")) + " bytes, sha256 ", el("code", { text: f.sha256 })];
      ul.appendChild(src
        ? el("li", {}, [el("figure", {}, [el("img", { src: src, alt: "attached image " + f.name }), el("figcaption", {}, ["image "].concat(said))])])
        : el("li", {}, ["file "].concat(said)));
    });
    return ul;
  }
  function textBlock(f, cls) {  /* a text of evalwh.reports.transcripts: {t, note when cut} */
    if (!f) { return []; }
    var kids = [el("pre", { cls: cls || "", text: f.t })];
    if (f.note) { kids.push(el("p", { cls: "muted", text: f.note })); }
    return kids;
  }
  function transcriptBlock(t) {  /* a tool loop's steps, collapsed (evalwh.reports.transcripts) */
    if (!t) { return null; }
    var list = el("ol", { cls: "steps" });
    t.steps.forEach(function (s) {
      var item = el("li", { cls: "step " + s.role + (s.error ? " failed" : "") }, [
        el("p", { cls: "step-head" }, [el("strong", { text: s.head }), s.figures ? el("span", { cls: "muted", text: " · " + s.figures }) : null])
      ]);
      var add = function (kids) { kids.forEach(function (k) { item.appendChild(k); }); };
      add(textBlock(s.text));
      (s.calls || []).forEach(function (c) {
        item.appendChild(el("p", { text: "calls " + c.name + (c.id ? " (" + c.id + ")" : "") + " with:" }));
        add(textBlock(c.args));
      });
      if (s.args) {
        item.appendChild(el("p", { cls: s.bad_args ? "bad" : "", text: s.bad_args ? "arguments (they did not fit the tool's schema):" : "arguments:" }));
        add(textBlock(s.args));
      }
      if (s.error) {
        item.appendChild(el("p", { cls: "bad" }, [el("span", { cls: "badge fail", text: "error" }), " the call failed:"]));
        add(textBlock(s.error, "bad"));
      }
      if (s.result) { item.appendChild(el("p", { text: "result:" })); add(textBlock(s.result)); }
      list.appendChild(item);
    });
    return el("details", { cls: "transcript" }, [
      el("summary", { text: t.summary }), list, t.more ? el("p", { cls: "muted", text: t.more }) : null
    ]);
  }
  function copyText(area, status) {
    area.select();
    var done = function () { status.textContent = "copied"; };
    var fallback = function () {
      try { doc.execCommand("copy"); done(); } catch (e) { status.textContent = "select the text and copy it"; }
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(area.value).then(done, fallback);
    } else { fallback(); }
  }

  /* -- tabs: the WAI-ARIA tabs pattern (roles, roving tabindex, arrow keys, Home/End) ----- */
  var tabLinks = Array.prototype.slice.call(doc.querySelectorAll("nav.tabs a[data-tab]"));
  function showTab(name, focus) {
    tabLinks.forEach(function (a) {
      var on = a.getAttribute("data-tab") === name;
      a.setAttribute("aria-selected", on ? "true" : "false");
      a.setAttribute("tabindex", on ? "0" : "-1");
      var panel = $(a.getAttribute("data-tab"));
      if (panel) { panel.hidden = !on; }
      if (on && focus) { a.focus(); }
    });
  }
  if (tabLinks.length) {
    tabLinks[0].parentNode.setAttribute("role", "tablist");
    tabLinks.forEach(function (a, i) {
      var name = a.getAttribute("data-tab"), panel = $(name);
      a.setAttribute("role", "tab");
      a.setAttribute("aria-controls", name);
      if (panel) { panel.setAttribute("role", "tabpanel"); panel.setAttribute("tabindex", "0"); }
      a.addEventListener("click", function (ev) { ev.preventDefault(); showTab(name, false); });
      a.addEventListener("keydown", function (ev) {
        var n = tabLinks.length, to = null;
        if (ev.key === "ArrowRight") { to = (i + 1) % n; }
        else if (ev.key === "ArrowLeft") { to = (i + n - 1) % n; }
        else if (ev.key === "Home") { to = 0; }
        else if (ev.key === "End") { to = n - 1; }
        else if (ev.key === " " || ev.key === "Enter") { to = i; }
        if (to === null) { return; }
        ev.preventDefault();
        showTab(tabLinks[to].getAttribute("data-tab"), true);
      });
    });
    var wanted = (location.hash || "").slice(1);
    showTab(tabLinks.some(function (a) { return a.getAttribute("data-tab") === wanted; }) ? wanted : tabLinks[0].getAttribute("data-tab"), false);
  }

  /* -- the keyboard shortcuts' dialog: `?` opens it, Escape (the dialog's own) closes it --- */
  var help = $("help");
  function typing(target) {
    var tag = (target && target.tagName) || "";
    return (tag === "INPUT" && target.type !== "radio") || tag === "TEXTAREA" || tag === "SELECT";
  }
  if (help && help.showModal) {
    var opener = $("help-open");
    if (opener) { opener.parentNode.hidden = false; opener.addEventListener("click", function () { help.showModal(); }); }
    $("help-close").addEventListener("click", function () { help.close(); });
    doc.addEventListener("keydown", function (ev) {
      if (ev.key !== "?" || ev.ctrlKey || ev.metaKey || ev.altKey || help.open || typing(ev.target)) { return; }
      ev.preventDefault();
      help.showModal();
    });
  }

  /* -- copy buttons ---------------------------------------------------------------------- */
  if ($("copy-decision")) {
    $("copy-decision").addEventListener("click", function () { copyText($("decision-text"), $("copy-decision-status")); });
  }

  /* -- cases ----------------------------------------------------------------------------- */
  var flags = data.flags || {};
  function status(r) { return r.e ? "error" : (r.ok ? "pass" : "fail"); }
  function cellOf(r) { return r.v + " × " + r.m; }
  function failed(r) { return r.crit.filter(function (c) { return !c.p; }).map(function (c) { return c.n; }); }

  function setupCases(rows) {
    var table = $("case-table"), list = $("case-list"), drill = $("drill"), page = 0, shown = [];
    $("filters").hidden = false; $("pager").hidden = false; table.hidden = false;
    function fill(select, values) {
      values.forEach(function (v) { select.appendChild(el("option", { value: v, text: v })); });
    }
    var cells = {}, crits = {}, slices = {};
    rows.forEach(function (r) {
      cells[cellOf(r)] = 1;
      r.crit.forEach(function (c) { crits[c.n] = 1; });
      Object.keys(r.meta || {}).forEach(function (k) { slices[k + "=" + r.meta[k]] = 1; });
    });
    fill($("f-cell"), Object.keys(cells).sort());
    fill($("f-crit"), Object.keys(crits).sort());
    fill($("f-slice"), Object.keys(slices).sort());

    function apply() {
      var cell = $("f-cell").value, crit = $("f-crit").value, slice = $("f-slice").value;
      var st = $("f-status").value, text = $("f-text").value.toLowerCase();
      shown = rows.filter(function (r) {
        if (cell && cellOf(r) !== cell) { return false; }
        if (crit && failed(r).indexOf(crit) < 0) { return false; }
        if (st && status(r) !== st) { return false; }
        if (slice) {
          var i = slice.indexOf("="), k = slice.slice(0, i);
          if (!r.meta || String(r.meta[k]) !== slice.slice(i + 1)) { return false; }
        }
        if (text) {
          var hay = (r.c + "\n" + (r.o || "") + "\n" + (r.e || "") + "\n" + JSON.stringify(r.meta)).toLowerCase();
          if (hay.indexOf(text) < 0) { return false; }
        }
        return true;
      });
      page = 0; draw();
    }
    function draw() {
      list.textContent = "";
      var pages = Math.max(1, Math.ceil(shown.length / PAGE));
      shown.slice(page * PAGE, page * PAGE + PAGE).forEach(function (r) {
        var st = status(r), badge = st === "pass" ? "pass" : (st === "error" ? "err" : "fail");
        var opener = el("button", {
          type: "button", cls: "case-open", "aria-controls": "drill", "aria-expanded": "false",
          "aria-label": "open case " + r.c + (r.r ? " #" + r.r : "") + ", " + cellOf(r) + ", " + st,
          text: r.c + (r.r ? " #" + r.r : "")
        });
        var tr = el("tr", { "data-case": r.c }, [
          el("td", {}, [opener]),
          el("td", { text: cellOf(r) }),
          el("td", {}, [el("span", { cls: "badge " + badge, text: st })]),
          el("td", { cls: "n", text: num(r.s) }),
          el("td", { text: failed(r).join(", ") }),
          el("td", { cls: "mono", text: (r.e || r.o || "").slice(0, 120) })
        ]);
        tr.addEventListener("click", function () {  /* the row's button, or anywhere on the row */
          Array.prototype.forEach.call(list.querySelectorAll("tr.open"), function (x) {
            x.classList.remove("open");
            x.querySelector("button.case-open").setAttribute("aria-expanded", "false");
          });
          tr.classList.add("open");
          opener.setAttribute("aria-expanded", "true");
          openCase(r, opener);
        });
        list.appendChild(tr);
      });
      $("page-info").textContent = "page " + (page + 1) + " / " + pages + " · " + shown.length + " row(s) match";
      $("prev").disabled = page === 0; $("next").disabled = page >= pages - 1;
    }
    var back = null;  /* the button that opened the case: Escape goes back to it */
    drill.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape" && back && doc.body.contains(back)) { ev.preventDefault(); back.focus(); }
    });
    function openCase(row, opener) {
      var same = rows.filter(function (r) { return r.c === row.c && r.r === row.r; });
      back = opener;
      drill.textContent = "";
      drill.appendChild(el("h3", { id: "drill-title", tabindex: "-1", text: "case " + row.c + (row.r ? " (repeat " + row.r + ")" : "") }));
      var meta = Object.keys(row.meta || {}).map(function (k) { return k + "=" + row.meta[k]; }).join(", ");
      if (meta) { drill.appendChild(el("p", { cls: "muted", text: "metadata: " + meta })); }
      var seen = {};
      same.forEach(function (r) {
        var key = r.v + "\u0000" + r.c;
        if (seen[key] || !(key in (data.prompts || {}))) { return; }
        seen[key] = 1;
        drill.appendChild(el("p", { text: "prompt (" + r.v + "):" }));
        drill.appendChild(el("pre", { cls: "prompt", text: data.prompts[key] }));
        var files = filesBlock((data.attached || {})[key]);
        if (files) { drill.appendChild(files); }
      });
      if (row.exp !== null && row.exp !== undefined) {
        drill.appendChild(el("p", { text: "expected:" }));
        drill.appendChild(el("pre", { text: row.exp }));
      }
      var sides = el("div", { cls: "sides" });
      same.forEach(function (r) {
        var st = status(r);
        var box = el("div", { cls: "side" }, [
          el("h4", { text: cellOf(r) + " · " + st + " · score " + num(r.s) }),
          el("p", { cls: "muted", text: "latency " + num(r.lat, 0) + " ms" + (r.q >= 1 ? " · queued " + num(r.q, 0) + " ms" : "") + " · cost " + (r.cost == null ? "–" : "$" + num(r.cost, 4)) + " · attempts " + r.att + (r.cached ? " · cached" : "") })
        ]);
        if (r.e) { box.appendChild(el("p", { cls: "bad", text: "error" + (r.ek ? " (" + r.ek + ")" : "") + ": " + r.e })); }
        clip(r.o, r.ol).forEach(function (k) { box.appendChild(k); });
        var steps = transcriptBlock((data.transcripts || {})[[r.v, r.m, r.c, r.r].join("\u0000")]);
        if (steps) { box.appendChild(steps); }
        var t = el("table", {}, [el("tr", {}, [el("th", { text: "criterion" }), el("th", { text: "score" }), el("th", { text: "details / rationale" })])]);
        r.crit.forEach(function (c) {
          var name = el("td", { text: c.n + (c.req ? " (required)" : "") + " " });
          (flags["criterion:" + c.n] || []).forEach(function (reason) {  /* analysis.judging's flags */
            var tag = reason.split(":")[0];
            name.appendChild(el("span", { cls: "badge " + (tag === "FLIPPY" ? "flip" : "uncal"), title: reason, text: tag }));
          });
          var det = el("td", {}, [
            c.det ? el("div", { cls: "mono", text: c.det }) : null,
            c.rat ? el("div", { text: "rationale" + (c.j ? " (" + c.j + ")" : "") + ": " + c.rat }) : null,
            c.err ? el("div", { cls: "bad", text: "scorer error: " + c.err }) : null
          ]);
          t.appendChild(el("tr", {}, [name, el("td", { cls: c.p ? "good" : "bad", text: num(c.sc) + (c.p ? " pass" : " fail") }), det]));
        });
        box.appendChild(t);
        sides.appendChild(box);
      });
      drill.appendChild(sides);
      drill.hidden = false;
      $("drill-title").focus({ preventScroll: true });
      drill.scrollIntoView({ block: "nearest" });
    }
    ["f-cell", "f-crit", "f-slice", "f-status"].forEach(function (id) { $(id).addEventListener("change", apply); });
    $("f-text").addEventListener("input", apply);
    $("prev").addEventListener("click", function () { page -= 1; draw(); });
    $("next").addEventListener("click", function () { page += 1; draw(); });
    apply();
  }
  if (data.rows && $("case-list")) { setupCases(data.rows); }
  else if (data.rows_url && $("case-list")) {  /* the viewer: the rows come in a request of their own */
    fetch(data.rows_url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (got) {
      data.prompts = got.prompts;
      data.attached = got.attached;
      data.transcripts = got.transcripts;
      data.files = got.files;
      setupCases(got.rows);
    });
  }

  /* -- blind labelling ------------------------------------------------------------------- */
  function hash(text) {  /* FNV-1a: a fixed pseudo-random order per pair */
    var h = 2166136261;
    for (var i = 0; i < text.length; i++) { h ^= text.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
    return h;
  }
  var yamlSources = [];  /* each labelling list adds its entries; one file holds them all */
  function labelsYaml() {
    var lines = ["labels:"];
    yamlSources.forEach(function (source) { lines = lines.concat(source()); });
    return lines.join("\n") + "\n";
  }
  function showYaml() {
    Array.prototype.forEach.call(doc.querySelectorAll("textarea.labels-yaml"), function (t) { t.value = labelsYaml(); });
  }
  function downloadYaml() {
    var url = URL.createObjectURL(new Blob([labelsYaml()], { type: "text/yaml" }));
    var a = el("a", { href: url, download: "labels-" + data.run_id.replace(/[^A-Za-z0-9._-]/g, "_") + ".yaml" });
    doc.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function loadLabels(storeKey) {
    try { return JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { return {}; }
  }
  function saveLabels(storeKey, labels) {
    try { localStorage.setItem(storeKey, JSON.stringify(labels)); } catch (e) { /* private mode */ }
  }
  function keysFor(panel, handle) {  /* a tab's keyboard shortcuts, only while it is shown */
    doc.addEventListener("keydown", function (ev) {
      if ($(panel).hidden || ev.ctrlKey || ev.metaKey || ev.altKey || (help && help.open)) { return; }
      if (typing(ev.target)) { return; }  /* a label's own radio button keeps the keys */
      if (handle(ev.key.toLowerCase())) { ev.preventDefault(); }
    });
  }
  function setupLabels(pairs) {
    var storeKey = "evalwh-labels:" + data.run_id, labels = loadLabels(storeKey), current = 0, unblind = false, cards = [];
    function key(p) { return p.comparison + "\u0000" + p.case; }
    function swapped(p) { return (hash(data.run_id + "\u0000" + key(p)) & 1) === 1; }
    function sideOf(p, letter) {  /* which stored side a shown letter is */
      var first = swapped(p) ? "candidate" : "baseline", second = swapped(p) ? "baseline" : "candidate";
      return letter === "A" ? first : (letter === "B" ? second : "tie");
    }
    function letterOf(p, side) {
      if (side === "tie" || side === null || side === undefined) { return side === "tie" ? "tie" : "–"; }
      return sideOf(p, "A") === side ? "A" : "B";
    }
    function save() { saveLabels(storeKey, labels); }
    yamlSources.push(function () {
      var lines = [];
      pairs.forEach(function (p) {
        var side = labels[key(p)];
        if (!side) { return; }
        var prefer = side === "baseline" ? "A" : (side === "candidate" ? "B" : "tie");
        lines.push("  - {case: " + JSON.stringify(p.case) + ", comparison: " + JSON.stringify(p.comparison) + ", prefer: " + prefer + "}");
      });
      return lines;
    });
    function store(p, side) {  /* the viewer (evalwh serve) keeps labels in the warehouse */
      var status = $("label-saved");
      fetch(data.label_url, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ comparison: p.comparison, "case": p.case, prefer: side })
      }).then(function (r) {
        if (status) { status.textContent = r.ok ? "saved in the warehouse" : "not saved (" + r.status + ")"; }
      }, function () { if (status) { status.textContent = "not saved (no answer)"; } });
    }
    function refresh() {
      var n = pairs.filter(function (p) { return labels[key(p)]; }).length;
      $("label-progress").textContent = n + " / " + pairs.length;
      showYaml();
      drawPage();
      cards.forEach(function (c) {
        c.update();
        c.box.classList.toggle("current", c.index === current);
        if (c.index === current) { c.box.setAttribute("aria-current", "true"); } else { c.box.removeAttribute("aria-current"); }
      });
    }
    function choose(i, letter) {
      var p = pairs[i];
      labels[key(p)] = sideOf(p, letter);
      save();
      if (data.label_url) { store(p, labels[key(p)]); }
      current = Math.min(i + 1, pairs.length - 1);
      refresh();
      if (cards[current - first]) { cards[current - first].box.scrollIntoView({ block: "nearest" }); }
    }
    var holder = $("pairs"), LPAGE = 20, shownPage = -1, first = 0;
    function makeCard(p, i) {
      var names = { A: el("span", { cls: "muted side-name" }), B: el("span", { cls: "muted side-name" }) };
      var buttons = {};
      var choiceRow = el("div", { cls: "choices" });
      [["A", "Prefer A"], ["tie", "Tie"], ["B", "Prefer B"]].forEach(function (c) {
        var b = el("button", { type: "button", "data-choice": c[0], "aria-pressed": "false", text: c[1] });
        b.addEventListener("click", function () { current = i; choose(i, c[0]); });
        buttons[c[0]] = b; choiceRow.appendChild(b);
      });
      function side(letter) {
        var s = sideOf(p, letter);
        var box = el("div", { cls: "side" }, [el("h4", {}, ["Answer " + letter + " ", names[letter]])]);
        if (p[s + "_error"]) { box.appendChild(el("p", { cls: "bad", text: "error: " + p[s + "_error"] })); }
        clip(p[s + "_output"], p[s + "_len"]).forEach(function (k) { box.appendChild(k); });
        return box;
      }
      var verdict = el("details", { cls: "verdict" });
      var box = el("div", { cls: "pair", "data-key": key(p) }, [
        el("h3", { text: (i + 1) + ". case " + p.case + " · " + p.comparison }),
        el("pre", { cls: "prompt", text: p.prompt || "" }),
        filesBlock(p.att),
        p.expected !== null && p.expected !== undefined ? el("p", { cls: "muted", text: "reference: " + p.expected }) : null,
        el("div", { cls: "sides" }, [side("A"), side("B")]),
        choiceRow, verdict
      ]);
      holder.appendChild(box);
      return {
        index: i,
        box: box,
        update: function () {
          var mine = labels[key(p)];
          box.classList.toggle("done", !!mine);
          Object.keys(buttons).forEach(function (k) {
            var on = !!mine && sideOf(p, k) === mine;
            buttons[k].classList.toggle("on", on);
            buttons[k].setAttribute("aria-pressed", on ? "true" : "false");
          });
          names.A.textContent = unblind ? "(" + p[sideOf(p, "A")] + ")" : "";
          names.B.textContent = unblind ? "(" + p[sideOf(p, "B")] + ")" : "";
          verdict.textContent = "";
          if (!mine && !unblind) { verdict.hidden = true; return; }
          verdict.hidden = false;
          verdict.appendChild(el("summary", { text: "judge: " + letterOf(p, p.verdict) + (p.flipped ? " (the two orders disagree)" : "") }));
          verdict.appendChild(el("p", { text: "shown first the baseline: " + letterOf(p, p.verdict_ab) + " · shown first the candidate: " + letterOf(p, p.verdict_ba) }));
          if (p.rationale_ab) { verdict.appendChild(el("p", { text: "rationale: " + p.rationale_ab })); }
          if (p.rationale_ba) { verdict.appendChild(el("p", { text: "rationale (other order): " + p.rationale_ba })); }
        }
      };
    }
    function drawPage() {  /* only one page of pairs is in the document at a time */
      var page = Math.floor(current / LPAGE);
      if (page === shownPage) { return; }
      shownPage = page; first = page * LPAGE; holder.textContent = ""; cards = [];
      pairs.slice(first, first + LPAGE).forEach(function (p, j) { cards.push(makeCard(p, first + j)); });
      $("pair-page").textContent = "pairs " + (first + 1) + "–" + (first + cards.length) + " of " + pairs.length;
      $("pair-prev").disabled = page === 0;
      $("pair-next").disabled = first + LPAGE >= pairs.length;
    }
    $("pair-prev").addEventListener("click", function () { current = Math.max(0, first - LPAGE); refresh(); });
    $("pair-next").addEventListener("click", function () { current = Math.min(pairs.length - 1, first + LPAGE); refresh(); });
    keysFor("label", function (k) {
      if (k === "a") { choose(current, "A"); }
      else if (k === "b") { choose(current, "B"); }
      else if (k === "t") { choose(current, "tie"); }
      else if (k === "j") { current = Math.min(current + 1, pairs.length - 1); refresh(); }
      else if (k === "k") { current = Math.max(current - 1, 0); refresh(); }
      else { return false; }
      return true;
    });
    $("unblind").addEventListener("click", function () {
      unblind = !unblind;
      $("unblind").textContent = unblind ? "Blind the sides again" : "Unblind the sides";
      refresh();
    });
    $("clear-labels").addEventListener("click", function () { labels = {}; save(); refresh(); });
    $("copy-labels").addEventListener("click", function () { copyText($("labels-yaml"), $("copy-labels-status")); });
    $("download-labels").addEventListener("click", downloadYaml);
    refresh();
  }
  if (data.pairs && data.pairs.length && $("pairs")) { setupLabels(data.pairs); }

  /* -- blind pointwise labelling: one card per llm-judge criterion x case, one label per answer -- */
  function setupPointLabels(items) {
    var storeKey = "evalwh-answer-labels:" + data.run_id, labels = loadLabels(storeKey), current = 0, unblind = false, cards = [];
    var holder = $("points"), LPAGE = 20, shownPage = -1, first = 0;
    function key(it, a) { return [it.criterion, it.case, a.v, a.m, a.r].join("\u0000"); }
    function choices(it) {  /* pass/fail, or each whole score of a numeric judge's scale */
      var lo = it.scale[0], hi = it.scale[1];
      if (lo === 0 && hi === 1) { return [["pass", "Pass", "p"], ["fail", "Fail", "f"]]; }
      var out = [];
      for (var v = Math.ceil(lo); v <= hi; v++) { out.push([v, String(v), String(v)]); }
      return out;
    }
    function shown(it) {  /* the answers in a fixed random order per item */
      return it.answers.slice().sort(function (x, y) { return hash(data.run_id + it.criterion + it.case + x.name) - hash(data.run_id + it.criterion + it.case + y.name); });
    }
    var flat = [];  /* every answer in the order shown: [item index, answer] */
    items.forEach(function (it, i) { shown(it).forEach(function (a) { flat.push([i, a]); }); });
    function itemStart(i) { for (var n = 0; n < flat.length; n++) { if (flat[n][0] === i) { return n; } } return 0; }
    function save() { saveLabels(storeKey, labels); }
    function yamlValue(v) { return typeof v === "number" ? String(v) : v; }
    yamlSources.push(function () {
      var lines = [];
      flat.forEach(function (f) {
        var it = items[f[0]], a = f[1], v = labels[key(it, a)];
        if (v === undefined || v === null) { return; }
        lines.push("  - {case: " + JSON.stringify(it.case) + ", criterion: " + JSON.stringify(it.criterion) + ", variant: " + JSON.stringify(a.v) + ", model: " + JSON.stringify(a.m) + ", repeat: " + a.r + ", label: " + yamlValue(v) + "}");
      });
      return lines;
    });
    function store(it, a, value) {  /* the viewer (evalwh serve) keeps labels in the warehouse */
      var status = $("point-saved");
      fetch(data.label_url, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ criterion: it.criterion, "case": it.case, variant: a.v, model: a.m, repeat: String(a.r), label: String(value) })
      }).then(function (r) {
        if (status) { status.textContent = r.ok ? "saved in the warehouse" : "not saved (" + r.status + ")"; }
      }, function () { if (status) { status.textContent = "not saved (no answer)"; } });
    }
    function refresh() {
      var n = flat.filter(function (f) { return labels[key(items[f[0]], f[1])] !== undefined; }).length;
      $("point-progress").textContent = n + " / " + flat.length;
      showYaml();
      drawPage();
      cards.forEach(function (c) { c.update(); });
    }
    function choose(n, value) {
      var f = flat[n];
      labels[key(items[f[0]], f[1])] = value;
      save();
      if (data.label_url) { store(items[f[0]], f[1], value); }
      current = Math.min(n + 1, flat.length - 1);
      refresh();
      var box = holder.querySelector(".answer.current");
      if (box) { box.scrollIntoView({ block: "nearest" }); }
    }
    function makeCard(it, i) {
      var boxes = [], base = itemStart(i);
      var answers = el("div", { cls: "sides" });
      shown(it).forEach(function (a, j) {
        var n = base + j, name = el("span", { cls: "muted side-name" }), inputs = [];
        var group = "answer-" + i + "-" + j;
        var legend = el("legend", { text: "Answer " + (j + 1) + ": does it meet " + it.criterion + "?" });
        var fieldset = el("fieldset", { cls: "choices" }, [legend]);
        choices(it).forEach(function (c) {
          var id = group + "-" + String(c[0]);
          var input = el("input", { type: "radio", name: group, id: id, value: String(c[0]), "data-choice": String(c[0]) });
          input.addEventListener("change", function () { if (input.checked) { current = n; choose(n, c[0]); } });
          inputs.push([c[0], input]);
          fieldset.appendChild(el("label", { "for": id, title: "key " + c[2] }, [input, " " + c[1]]));
        });
        var stored = a.human !== undefined && a.human !== null ? el("p", { cls: "muted", text: "stored label of this answer: " + a.human }) : null;
        var verdict = el("details", { cls: "verdict" });
        var box = el("div", { cls: "side answer", "data-key": key(it, a) }, [el("h4", {}, ["Answer " + (j + 1) + " ", name])]);
        if (a.e) { box.appendChild(el("p", { cls: "bad", text: "error: " + a.e })); }
        clip(a.o, a.len).forEach(function (k) { box.appendChild(k); });
        box.appendChild(fieldset);
        if (stored) { box.appendChild(stored); }
        box.appendChild(verdict);
        box.addEventListener("focusin", function () { if (current !== n) { current = n; cards.forEach(function (c) { c.update(); }); } });
        answers.appendChild(box);
        boxes.push({ n: n, a: a, box: box, name: name, inputs: inputs, verdict: verdict });
      });
      var caseLabel = it.human !== undefined && it.human !== null
        ? el("p", { cls: "muted", text: "stored per-case label: " + it.human + " (judged against the majority of " + it.n_answers + " answers, unless its answers are labelled)" }) : null;
      var box = el("div", { cls: "point", "data-key": it.criterion + "\u0000" + it.case }, [
        el("h3", { text: (i + 1) + ". case " + it.case + " · criterion " + it.criterion }),
        el("pre", { cls: "prompt", text: it.prompt || "" }),
        filesBlock(it.att),
        it.expected !== null && it.expected !== undefined ? el("p", { cls: "muted", text: "reference: " + it.expected }) : null,
        answers, caseLabel
      ]);
      holder.appendChild(box);
      return {
        box: box,
        update: function () {
          var all = true;
          boxes.forEach(function (b) {
            var mine = labels[key(it, b.a)], done = mine !== undefined;
            all = all && done;
            b.box.classList.toggle("done", done);
            b.box.classList.toggle("current", b.n === current);
            if (b.n === current) { b.box.setAttribute("aria-current", "true"); } else { b.box.removeAttribute("aria-current"); }
            b.inputs.forEach(function (x) { x[1].checked = done && x[0] === mine; });
            b.name.textContent = unblind ? "(" + b.a.name + ")" : "";
            var shows = done || unblind;
            b.verdict.hidden = !shows;
            /* built once when it first shows: rebuilding it under a click (focusing an answer
               updates every card) would swallow the click that opens it */
            if (!shows || b.verdict.firstChild) { return; }
            var scale = it.scale[0] === 0 && it.scale[1] === 1 ? "" : " (score " + num(b.a.raw, 2) + ")";
            b.verdict.appendChild(el("summary", { text: "judge: " + (b.a.ok ? "pass" : "fail") + scale }));
            if (b.a.rat) { b.verdict.appendChild(el("p", { text: "rationale: " + b.a.rat })); }
            if (b.a.jerr) { b.verdict.appendChild(el("p", { cls: "bad", text: "judge error: " + b.a.jerr })); }
          });
          box.classList.toggle("done", all);
          box.classList.toggle("current", flat[current][0] === i);
        }
      };
    }
    function drawPage() {
      var page = Math.floor(flat[current][0] / LPAGE);
      if (page === shownPage) { return; }
      shownPage = page; first = page * LPAGE; holder.textContent = ""; cards = [];
      items.slice(first, first + LPAGE).forEach(function (it, j) { cards.push(makeCard(it, first + j)); });
      $("point-page").textContent = "items " + (first + 1) + "–" + (first + cards.length) + " of " + items.length;
      $("point-prev").disabled = page === 0;
      $("point-next").disabled = first + LPAGE >= items.length;
    }
    $("point-prev").addEventListener("click", function () { current = itemStart(Math.max(0, first - LPAGE)); refresh(); });
    $("point-next").addEventListener("click", function () { current = itemStart(Math.min(items.length - 1, first + LPAGE)); refresh(); });
    keysFor("label-points", function (k) {
      var hit = choices(items[flat[current][0]]).filter(function (c) { return c[2] === k; })[0];
      if (hit) { choose(current, hit[0]); }
      else if (k === "j") { current = Math.min(current + 1, flat.length - 1); refresh(); }
      else if (k === "k") { current = Math.max(current - 1, 0); refresh(); }
      else { return false; }
      return true;
    });
    $("point-unblind").addEventListener("click", function () {
      unblind = !unblind;
      $("point-unblind").textContent = unblind ? "Blind the answers again" : "Unblind the answers";
      refresh();
    });
    $("clear-point-labels").addEventListener("click", function () { labels = {}; save(); refresh(); });
    $("copy-point-labels").addEventListener("click", function () { copyText($("point-labels-yaml"), $("copy-point-labels-status")); });
    $("download-point-labels").addEventListener("click", downloadYaml);
    refresh();
  }
  if (data.points && data.points.length && $("points")) { setupPointLabels(data.points); }
}());
