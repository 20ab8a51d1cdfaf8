"""The viewer's pages (evalwh/viewer/pages.py, app.py) without a browser: every page and its
`.json` twin give the named queries' numbers, filters, stored labels changing calibration,
baselines, escaping, reads on one connection, and a no-look run's pages."""

from __future__ import annotations

import html
import json
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from evalwh.reports import fmt
from tests.report_runs import BREAKOUT, IMG, SCRIPT, TOOL_ERROR, TOOL_RESULT
from tests.viewer.serving import ORIGIN, client, post


# -- pages and their JSON twins ----------------------------------------------------------------
def test_runs_list_and_its_json_give_the_runs_query(wh: dict[str, Any]) -> None:
    c = client(wh["view"])
    runs = c.get("/runs.json").json()["runs"]
    assert [r["run_id"] for r in runs] == [wh["b"], wh["a"]]
    expected = {r["run_id"]: r for r in wh["view"].runs()}
    for r in runs:
        assert r["n"] == expected[r["run_id"]]["n"]
        assert r["pass_rate"] == pytest.approx(expected[r["run_id"]]["pass_rate"])
        assert r["live"] is False
    page = c.get("/").text
    assert f'href="/runs/{wh["a"]}"' in page and f'href="/runs/{wh["b"]}"' in page
    assert "LIVE</span>" not in page


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("label=second", ["b"]),
        ("label=nope", []),
        ("suite=pairwise", ["b", "a"]),
        ("suite=other", []),
        ("status=completed", ["b", "a"]),
        ("status=running", []),
        ("since={today}", ["b", "a"]),  # the first day counts
        ("since={tomorrow}", []),
        ("until={today}", ["b", "a"]),  # the last day counts too
        ("until={yesterday}", []),
    ],
)
def test_runs_list_filters(wh: dict[str, Any], query: str, expected: list[str]) -> None:
    today = datetime.now(timezone.utc).date()
    query = query.format(
        today=today, tomorrow=today + timedelta(days=1), yesterday=today - timedelta(days=1)
    )
    suite = wh["view"].run(wh["a"])["suite"]
    query = query.replace("suite=pairwise", f"suite={suite}")
    runs = client(wh["view"]).get(f"/runs.json?{query}").json()["runs"]
    assert [r["run_id"] for r in runs] == [wh[k] for k in expected]


def test_a_bad_filter_is_a_clear_400(wh: dict[str, Any]) -> None:
    c = client(wh["view"])
    r = c.get("/runs.json?since=last-week")
    assert r.status_code == 400 and "2026-11-30" in r.json()["error"]
    assert c.get("/runs.json?status=weird").status_code == 400


def test_run_page_has_the_report_sections_and_its_numbers(wh: dict[str, Any]) -> None:
    c, view, run_id = client(wh["view"]), wh["view"], wh["a"]
    data = c.get(f"/runs/{run_id}.json").json()
    totals = view.query("run_totals", run_id=run_id).to_pylist()[0]
    assert data["totals"]["n"] == totals["n"] and data["n_rows"] == totals["n"]
    assert data["totals"]["pass_rate"] == pytest.approx(totals["pass_rate"])
    assert len(data["summary"]) == len(view.query("summary", run_id=run_id))
    page = c.get(f"/runs/{run_id}").text
    for section in ('id="gate"', 'id="calibration"', 'id="label"', f"<code>{run_id}</code>"):
        assert section in page
    assert 'src="/static/report.js"' in page and 'src="/static/htmx.min.js"' in page
    # a label reference resolves too, and an unknown run is a 404 naming it
    assert c.get("/runs/second.json").json()["run"]["run_id"] == wh["b"]
    missing = c.get("/runs/nope")
    assert missing.status_code == 404 and "nope" in missing.text


def test_run_page_sections_load_on_their_own_with_the_queries_numbers(
    wh: dict[str, Any],
) -> None:
    # The run page leaves its criteria, slices and case rows to requests of their own (each
    # under a second on a 10M-row warehouse): the page names them, each answers with the
    # named queries' numbers as HTML and as JSON, and report.js reads the rows from the JSON.
    c, view, run_id = client(wh["view"]), wh["view"], wh["a"]
    data = c.get(f"/runs/{run_id}.json").json()
    base = f"/runs/{run_id}/sections"
    assert data["sections"] == {n: f"{base}/{n}" for n in ("criteria", "slices", "cases")}
    assert "rows" not in data and "slices" not in data
    # a judged run's page reads its criteria itself (the calibration flags need them)
    assert data["judging"] and [r["criterion"] for r in data["criteria"]]
    page = c.get(f"/runs/{run_id}").text
    assert f'hx-get="{base}/slices" hx-trigger="load"' in page
    assert f'hx-get="{base}/criteria"' not in page and '<table class="criteria">' in page
    embedded = json.loads(page.split('id="evalwh-data">')[1].split("</script>")[0])
    assert embedded["rows_url"] == f"{base}/cases.json"

    criteria = c.get(f"{base}/criteria.json").json()["criteria"]
    expected = view.query("criteria", run_id=run_id).to_pylist()
    assert sorted((r["criterion"], r["n"], r["n_passed"]) for r in criteria) == sorted(
        (r["criterion"], r["n"], r["n_passed"]) for r in expected
    )
    assert '<table class="criteria">' in c.get(f"{base}/criteria").text
    sl = c.get(f"{base}/slices.json").json()
    keys = [r["key"] for r in view.query("metadata_keys", run_ids=[run_id]).to_pylist()]
    assert [s["key"] for s in sl["slices"]] == keys
    assert sum(r["n"] for r in sl["slices"][0]["rows"]) == data["totals"]["n"]
    cases = c.get(f"{base}/cases.json").json()
    assert len(cases["rows"]) == data["rows_shown"] == data["totals"]["n"]
    assert [r["c"] for r in cases["rows"]] == [
        r["case_id"]
        for r in view.query(
            "case_list", run_id=run_id, only_failures=False, case_id=None, limit=None
        ).to_pylist()
    ]
    assert cases["rows"][0]["c"] in c.get(f"{base}/cases").text
    assert c.get(f"{base}/nope").status_code == 404
    assert c.get("/runs/nope/sections/criteria").status_code == 404


def test_the_run_page_lists_at_most_view_rows_failures_first(
    wh: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The case rows section and the page's count both follow VIEW_ROWS (1,000: the rows a
    # page turns into JSON in well under a second); at exactly the run's size nothing is cut.
    from evalwh.viewer import app

    c, view, run_id = client(wh["view"]), wh["view"], wh["a"]
    n = view.query("run_totals", run_id=run_id).to_pylist()[0]["n"]
    listed = [
        r["case_id"]
        for r in view.query(
            "case_list", run_id=run_id, only_failures=False, case_id=None, limit=None
        ).to_pylist()
    ]
    assert app.VIEW_ROWS == 1000
    for limit, shown in ((n, n), (n - 1, n - 1), (2, 2)):
        monkeypatch.setattr(app, "VIEW_ROWS", limit)
        cases = c.get(f"/runs/{run_id}/sections/cases.json").json()["rows"]
        assert [r["c"] for r in cases] == listed[:shown]
        data = c.get(f"/runs/{run_id}.json").json()
        assert (data["rows_shown"], data["n_rows"]) == (shown, n)
        page = c.get(f"/runs/{run_id}").text
        assert (f"{n - shown} left out" in page) == (shown < n)


def test_a_page_reads_on_one_connection_and_a_write_inside_it_is_refused(
    wh: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from evalwh.errors import WarehouseError
    from evalwh.warehouse.connect import write_connection

    store, opened = wh["view"].store, []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(1) or real(*a, **k))
    store.query("run_totals", run_id=wh["a"])
    store.query("summary", run_id=wh["a"])
    assert len(opened) == 2  # outside a block: a connection per query
    with store.reading():
        with store.reading():  # a block inside a block reuses the outer one
            store.query("run_totals", run_id=wh["a"])
        store.query("summary", run_id=wh["a"])
        store.run_row(wh["a"])
        with (
            pytest.raises(WarehouseError, match="inside a read block"),
            write_connection(store.path),
        ):
            pass
    assert len(opened) == 3
    with write_connection(store.path):  # the block closed its connection
        pass


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/runs/{a}",
        "/runs/{a}/sections/cases.json",
        "/compare/{a}/{b}",
        "/compare/{a}/{b}/sections/criteria.json",
        "/runs/{a}/slices.json?by={key}",
        "/runs/{a}/calibration",
        "/cases/q03",
    ],
)
def test_each_page_opens_the_warehouse_once_and_defines_the_macros_once(
    wh: dict[str, Any], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's named queries (a compare section ~10, the calibration page 5) share one read
    connection, opened for the request and closed at its end (a pool held between requests
    would hold DuckDB's file lock and keep `evalwh run` from writing), with the macros defined
    on it once."""
    import duckdb

    from evalwh.warehouse import queries

    key = wh["view"].query("metadata_keys", run_ids=[wh["a"]]).to_pylist()[0]["key"]
    c, opened, defined = client(wh["view"]), [], []
    real_connect, real_macros = duckdb.connect, queries.macros
    monkeypatch.setattr(
        duckdb, "connect", lambda *a, **k: opened.append(1) or real_connect(*a, **k)
    )
    monkeypatch.setattr(queries, "macros", lambda: defined.append(1) or real_macros())
    response = c.get(url.format(a=wh["a"], b=wh["b"], key=key))
    assert response.status_code == 200
    assert (len(opened), len(defined)) == (1, 1)


def test_a_write_waits_for_a_read_of_another_thread_in_this_process(
    wh: dict[str, Any],
) -> None:
    # DuckDB refuses a read-write connection while this process holds the file read-only
    # ("different configuration"): the viewer's label write retries until the page's read
    # block ends instead of failing.
    import threading

    from evalwh.warehouse.connect import write_connection

    store, entered, done = wh["view"].store, threading.Event(), threading.Event()

    def page() -> None:
        with store.reading():
            store.query("run_totals", run_id=wh["a"])
            entered.set()
            time.sleep(0.3)
        done.set()

    reader = threading.Thread(target=page)
    reader.start()
    entered.wait(10)
    with write_connection(store.path, wait_s=10):
        assert done.is_set()  # it could open only once the read block had ended
    reader.join(10)


def test_compare_sections_show_each_deltas_p_and_the_verdict_rule(wh: dict[str, Any]) -> None:
    """Each criterion's and slice's delta carries its p, and the rule that decides the
    verdict (sql/compare.sql, in fmt.compare_rule's words) sits under the table, once."""
    c, a, b = client(wh["view"]), wh["a"], wh["b"]
    for name in ("criteria", "slices"):
        section = c.get(f"/compare/{a}/{b}/sections/{name}.json").json()
        rows = section[name]
        page = html.unescape(c.get(f"/compare/{a}/{b}/sections/{name}").text)
        assert page.count(fmt.compare_rule(section["cluster"])) == 1, name
        assert any(r["pass_rate_p"] is not None for r in rows), name
        for r in rows:
            if r["pass_rate_p"] is not None:
                assert fmt.delta(r, "pass_rate") in page, (name, r["target"])
                assert fmt.p_value(r["pass_rate_p"]) in page


def test_compare_slices_case_history_calibration_baselines_answer(wh: dict[str, Any]) -> None:
    c, view, a, b = client(wh["view"]), wh["view"], wh["a"], wh["b"]
    cmp = c.get(f"/compare/{a}/{b}.json").json()
    assert (cmp["a"]["run_id"], cmp["b"]["run_id"]) == (a, b)
    assert cmp["overall"]["n"] == view.compare(a, b).to_dict()["overall"]["n"]
    picked = c.get(f"/compare?a={a}&b=second", follow_redirects=False)
    assert picked.status_code == 303 and picked.headers["location"] == f"/compare/{a}/{b}"
    assert c.get(f"/compare/{a}/{b}").status_code == 200

    # the page holds the run and cell deltas; criteria, slices and movers come from requests
    # of their own, each with the numbers of the whole comparison (`evalwh compare`'s)
    whole = view.compare(a, b).to_dict()
    assert (cmp["overall"], cmp["cells"]) == (whole["overall"], whole["cells"])
    assert not {"criteria", "slices", "movers"} & set(cmp)
    html_page = c.get(f"/compare/{a}/{b}").text
    for name in ("criteria", "slices", "movers"):
        url = f"/compare/{a}/{b}/sections/{name}"
        assert cmp["sections"][name] == url
        assert f'hx-get="{url}" hx-trigger="load"' in html_page
        part = c.get(url + ".json").json()
        assert (part["a"]["run_id"], part["b"]["run_id"]) == (a, b)
        got = [{k: v for k, v in r.items() if k in whole[name][0]} for r in part[name]]
        if name == "movers":  # the page cuts long outputs and counts their length
            got = [{k: v for k, v in r.items() if not k.startswith("output_")} for r in got]
            whole[name] = [
                {k: v for k, v in r.items() if not k.startswith("output_")} for r in whole[name]
            ]
        assert len(got) == len(whole[name]) and (got or name == "movers"), name  # none moved
        for mine, theirs in zip(sorted(got, key=str), sorted(whole[name], key=str), strict=True):
            assert mine.keys() == theirs.keys(), name
            for k, v in theirs.items():  # a float may differ in its last bits between runs
                assert mine[k] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v)
        assert f'<div id="{name}-section">' in c.get(url).text
    first = whole["criteria"][0]["target"]
    assert first in c.get(f"/compare/{a}/{b}/sections/criteria").text
    assert c.get(f"/compare/{a}/{b}/sections/nope").status_code == 404
    assert c.get(f"/compare/{a}/nope/sections/criteria").status_code == 404

    key = view.query("metadata_keys", run_ids=[a]).to_pylist()[0]["key"]
    crit = view.query("criteria", run_id=a).to_pylist()[0]["criterion"]
    sl = c.get(f"/runs/{a}/slices.json?by={key}&criterion={crit}").json()
    expected = view.slice(a, key).to_dicts()
    assert sum(r["n"] for r in sl["rows"]) == sum(r["n"] for r in expected if r["variant"] is None)
    assert sum(r["n"] for r in sl["by_criterion"]) == len(
        view.sql(f"SELECT 1 FROM scores WHERE run_id = '{a}' AND criterion = '{crit}'")
    )
    page = c.get(f"/runs/{a}/slices?by={key}&criterion={crit}")
    assert page.status_code == 200 and f"<h2>criterion {crit}</h2>" in page.text
    assert f"<option selected>{key}</option>" in page.text
    assert c.get(f"/runs/{a}/slices?by=nokey").status_code == 400

    history = c.get("/cases/q03.json").json()
    assert history["notice"] is None  # no no-look run holds q03
    assert {r["run_id"] for r in history["rows"]} == {a, b}
    # latency and, apart, the time its requests waited to be sent
    assert all("latency_ms" in r and "queued_ms" in r for r in history["rows"])
    assert '<th class="n">latency</th><th class="n">queued</th>' in c.get("/cases/q03").text
    assert sum(r["n"] for r in history["rows"] if r["run_id"] == a) == len(
        view.cases(a, case_id="q03")
    )
    assert c.get("/cases/no-such-case").status_code == 400

    cal = c.get(f"/runs/{a}/calibration.json").json()
    assert [x["comparison"] for x in cal["judging"]["comparisons"]] == [
        x["comparison"] for x in view.judging(a)["comparisons"]
    ]
    # the page shows the win rate as every surface does: interval, sign test, verdict, counts
    comparison = view.judging(a)["comparisons"][0]
    shown = f"{fmt.win_rate(comparison)} ({fmt.win_counts(comparison)})"
    assert f'<td class="n win-rate">{shown}</td>' in c.get(f"/runs/{a}/calibration").text
    assert cal["judging"]["comparisons"][0]["verdict"] == comparison["verdict"]


def test_planted_markup_is_escaped_on_every_page(wh: dict[str, Any]) -> None:
    c, a, b = client(wh["view"]), wh["a"], wh["b"]
    sections = [f"/compare/{a}/{b}/sections/{name}" for name in ("criteria", "slices", "movers")]
    for url in ("/cases/q03", f"/runs/{a}", f"/compare/{a}/{b}", "/", *sections):
        page = c.get(url).text
        for planted in (SCRIPT, IMG, BREAKOUT):
            assert planted not in page, (url, planted)
    assert html.escape(SCRIPT, quote=False) in c.get("/cases/q03").text
    # a case id that is itself markup comes back as text
    r = c.get("/cases/" + "<script>alert(1)<%2Fscript>")
    assert "<script>alert(1)" not in r.text and "&lt;script&gt;alert(1)" in r.text


def test_a_cases_page_shows_each_runs_transcript_collapsed_and_escaped(
    tool_runs: dict[str, Any],
) -> None:
    # attack: a tool's result and error that close the <details> and plant script and an
    # <img onerror>; the page holds them as escaped text, inside the collapsed transcript
    c = client(tool_runs["view"])
    page = c.get("/cases/looping").text
    (details,) = re.findall(r'<details class="transcript">.*?</ol>', page, re.S)
    assert "<summary>Transcript — 3 turns, 2 tool calls (2 errors)</summary>" in details
    assert '<details class="transcript" open' not in page  # collapsed by default
    assert details.count('<li class="step assistant">') == 3
    assert details.count('<li class="step tool failed">') == 2
    assert '<span class="badge fail">error</span> the call failed:' in details
    assert html.escape(TOOL_ERROR, quote=False) in details
    for planted in (TOOL_ERROR, "<img src=x", "</details></li><img"):
        assert planted not in page
    paris = c.get("/cases/paris").text
    assert "arguments (they did not fit the tool's schema):" in paris
    warmer = c.get("/cases/warmer").text
    assert "window.pwned=1&lt;/script&gt;" in warmer and TOOL_RESULT not in warmer
    # the no-look run's row says its output was not kept, and shows no transcript
    history = c.get("/cases/looping.json").json()
    by_run = {r["run_id"]: r for r in history["rows"]}
    assert "transcript" not in by_run[tool_runs["no_look_id"]]
    shown = by_run[tool_runs["run_id"]]["transcript"]
    assert [s["role"] for s in shown["steps"]] == ["assistant", "tool"] * 2 + ["assistant"]
    assert page.count('<details class="transcript">') == 1
    # the run page's case rows (report.js draws their drill-down) carry them too
    rows = c.get(f"/runs/{tool_runs['run_id']}/sections/cases.json").json()
    key = "\u0000".join(("agent", "scripted-agent", "looping", "0"))
    assert rows["transcripts"][key]["summary"] == "Transcript — 3 turns, 2 tool calls (2 errors)"
    assert c.get(f"/runs/{tool_runs['no_look_id']}/sections/cases.json").json()["transcripts"] == {}


def test_the_compare_page_shows_tool_use_and_links_the_cells_that_changed(
    tool_compare: dict[str, Any],
) -> None:
    """The page itself holds the tool use, the changed cells each linking to its case's
    history; with a no-look run, the note instead. Attack: a tool's name that is a <script>
    (a model made it up) renders as text."""
    from tests.report_runs import TOOL_NAME

    c, a, b = client(tool_compare["view"]), tool_compare["a"], tool_compare["b"]
    page = c.get(f"/compare/{a}/{b}").text
    assert '<h2 id="tools">' in page
    (cells,) = re.findall(r'<table class="tool-cells">.*?</table>', page, re.S)
    assert cells.count("<tr>") == 2  # the header and warmer
    assert '<td><a href="/cases/warmer">warmer</a></td>' in cells
    assert TOOL_NAME not in page and html.escape(TOOL_NAME, quote=False) in cells
    blind = c.get(f"/compare/{a}/{tool_compare['no_look']}").text
    assert 'id="tools"' not in blind and "tool use is not compared" in blind


# -- writes: labels and baselines --------------------------------------------------------------
def test_a_stored_label_changes_calibration_and_names_who_and_when(wh: dict[str, Any]) -> None:
    c, view, a = client(wh["view"]), wh["view"], wh["a"]
    pair = view.query("pair_list", run_id=a).to_pylist()[-1]
    before = c.get(f"/runs/{a}/calibration.json").json()["judging"]["comparisons"][0]["n_labels"]
    label = {"comparison": pair["comparison"], "case": pair["case_id"], "prefer": "candidate"}
    r = post(c, f"/runs/{a}/labels", label)
    assert r.status_code == 200, r.text
    assert r.json()["by"] == "tester"
    after = c.get(f"/runs/{a}/calibration.json").json()["judging"]["comparisons"][0]["n_labels"]
    assert after == before + (0 if pair["human"] else 1)
    row = view.sql(
        f"SELECT prefer, labelled_by, labelled_at FROM labels WHERE run_id = '{a}' "
        f"AND case_id = '{pair['case_id']}' AND comparison = '{pair['comparison']}'"
    ).to_pylist()
    assert len(row) == 1 and row[0]["prefer"] == "candidate" and row[0]["labelled_by"] == "tester"
    assert abs(row[0]["labelled_at"] - datetime.now(timezone.utc)) < timedelta(minutes=1)
    # labelling it again replaces the label, the calibration page shows the count
    r = post(c, f"/runs/{a}/labels", {**label, "prefer": "tie", "who": "ann"})
    assert r.json()["replaced"] == 1 and r.json()["by"] == "ann"
    assert f">{after}</td>" in c.get(f"/runs/{a}/calibration").text


def test_a_label_of_one_answer_is_stored_and_counted_against_that_answers_verdict(
    wh: dict[str, Any],
) -> None:
    """The Label answers tab's write: one judged answer's label, stored with its variant,
    model and repeat; the calibration page counts it as an answer label, against the judge's
    verdict on that answer; a second label of the same answer replaces it; an answer the run
    does not have is refused."""
    c, view, b = client(wh["view"]), wh["view"], wh["b"]
    item = view.query("point_list", run_id=b).to_pylist()[0]
    answer = item["answers"][0]
    body = {
        "criterion": item["criterion"],
        "case": item["case_id"],
        "variant": answer["variant"],
        "model": answer["model"],
        "repeat": "0",
        "label": "fail" if answer["passed"] else "pass",  # against the judge
    }
    r = post(c, f"/runs/{b}/labels", body)
    assert r.status_code == 200, r.text
    assert (r.json()["model"], r.json()["repeat"], r.json()["by"]) == (answer["model"], 0, "tester")
    (p,) = c.get(f"/runs/{b}/calibration.json").json()["judging"]["pointwise"]
    assert (p["n_labels"], p["n_answer_labels"], p["agreement"]) == (1, 1, 0.0)
    assert p["label_units"] == "1 answer label(s)"
    assert "1 answer label(s)" in c.get(f"/runs/{b}/calibration").text
    again = post(c, f"/runs/{b}/labels", {**body, "label": "pass" if answer["passed"] else "fail"})
    assert again.json()["replaced"] == 1
    (p,) = c.get(f"/runs/{b}/calibration.json").json()["judging"]["pointwise"]
    assert (p["n_labels"], p["agreement"]) == (1, 1.0)
    r = post(c, f"/runs/{b}/labels", {**body, "model": "nope"})
    assert r.status_code == 400 and "unknown model 'nope'" in r.json()["error"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"comparison": "x", "case": "q01", "prefer": "candidate"}, "judged no pair"),
        ({"comparison": "large-vs-small", "case": "q01", "prefer": "A"}, "prefer must be"),
        (
            {"comparison": "large-vs-small", "case": "q01", "prefer": "tie", "who": "x" * 101},
            "1 to 100",
        ),
    ],
)
def test_a_bad_label_is_refused_with_the_reason(
    wh: dict[str, Any], body: dict[str, str], fragment: str
) -> None:
    r = post(client(wh["view"]), f"/runs/{wh['a']}/labels", body)
    assert r.status_code == 400 and fragment in r.json()["error"]


def test_a_name_of_exactly_100_characters_is_a_labeller(wh: dict[str, Any]) -> None:
    pair = wh["view"].query("pair_list", run_id=wh["a"]).to_pylist()[0]
    body = {"comparison": pair["comparison"], "case": pair["case_id"], "prefer": "tie"}
    r = post(client(wh["view"]), f"/runs/{wh['a']}/labels", {**body, "who": "y" * 100})
    assert r.status_code == 200 and r.json()["by"] == "y" * 100


def test_baselines_pin_and_unpin_from_the_page(wh: dict[str, Any]) -> None:
    c = client(wh["view"])
    r = c.post("/baselines/pin", data={"run": "second", "name": "prod"}, headers={"Origin": ORIGIN})
    assert r.status_code == 200 and wh["b"] in r.text  # followed to the baselines page
    assert {b["name"]: b["run_id"] for b in c.get("/baselines.json").json()["baselines"]} == {
        "prod": wh["b"]
    }
    assert wh["view"].resolve("prod") == wh["b"]
    r = c.post(
        "/baselines/unpin", data={"name": "prod"}, headers={"Referer": ORIGIN + "/baselines"}
    )
    assert r.status_code == 200
    assert c.get("/baselines.json").json()["baselines"] == []


# -- a no-look run ------------------------------------------------------------------------------
NO_LOOK_CANARY = "CNRYviewer7q"  # in the case's vars and expected value, echoed by the mock


def test_a_no_look_runs_pages_say_so_and_show_no_output(tmp_path: Path) -> None:
    """Run, case history and compare pages (and their JSON) of a no-look run name it as such
    and carry none of its case data, while the same case's ordinary run still shows its
    output: the pages decline, they do not just find NULLs."""
    from tests.conftest import write

    cfg = write(
        tmp_path / "eval.yaml",
        f"""
name: nolook-viewer
models: [{{id: m, provider: mock, mock: {{default: "said {{{{ vars.q }}}}"}}}}]
variants: [{{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}]
cases: [{{id: a, vars: {{q: {NO_LOOK_CANARY}}}, expected: {NO_LOOK_CANARY}}}]
scorecard: [{{name: exact, type: exact}}]
""",
    )
    out = tmp_path / ".evalwh"
    seen = api.run_eval(cfg, output_dir=out, no_cache=True)
    blind = api.run_eval(cfg, output_dir=out, no_look=True)
    assert blind.no_look and not seen.no_look
    c = client(api.open_warehouse(out / "warehouse.duckdb"))

    page = c.get(f"/runs/{blind.run_id}").text
    assert 'id="no-look"' in page and "no-look run" in page
    assert NO_LOOK_CANARY not in page
    data = c.get(f"/runs/{blind.run_id}.json").json()
    assert data["notice"] and data["run"]["no_look"] is True
    assert NO_LOOK_CANARY not in json.dumps(data)
    # the case rows load as a section of their own: no output keys for the no-look run
    rows = c.get(f"/runs/{blind.run_id}/sections/cases.json").json()["rows"]
    assert rows and not {"o", "exp"} & set(rows[0])
    assert NO_LOOK_CANARY not in json.dumps(rows)
    shown = c.get(f"/runs/{seen.run_id}").text
    assert 'id="no-look"' not in shown
    assert NO_LOOK_CANARY in c.get(f"/runs/{seen.run_id}/sections/cases.json").text

    history = c.get("/cases/a.json").json()
    by_run = {r["run_id"]: r for r in history["rows"]}
    assert history["notice"]
    assert "output" not in by_run[blind.run_id] and by_run[blind.run_id]["no_look"]
    assert NO_LOOK_CANARY in by_run[seen.run_id]["output"]
    text = c.get("/cases/a").text
    assert 'id="no-look"' in text and "output not kept" in text
    assert text.count(NO_LOOK_CANARY) == 1  # the ordinary run's output, once

    compared = c.get(f"/compare/{seen.run_id}/{blind.run_id}").text
    assert "no-look" in compared
