"""No-look mode (docs/no-look.md): a run over data nobody may read leaves no case data behind.

The canary test puts a unique string into every case (vars and expected values), runs with a
judge, an exec check and a provider error that echoes the prompt, then reads everything a
user, an agent or an attacker could: ``--failures``, ``show --case``, ``compare``, every
export format, the MCP tools — and searches the output folder (the warehouse and the Parquet
files decoded, since both compress), the response cache, the system temp folder the run used
and the captured stdout/stderr for any canary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.config.model import hashed
from tests.conftest import run_cli, write
from tests.fakes.servers import Behavior, FakeLLMServer, RecordedRequest, error, reply

CANARY = "CNRY"  # every canary starts with this; ids and metadata never hold one
CANARY_RE = re.compile(r"CNRY[0-9a-z]+")


def canary(i: int, what: str) -> str:
    return f"{CANARY}{what}{i:03d}x"


def responder(req: RecordedRequest) -> Behavior | None:
    """The judge grades with a rationale quoting the case; a prompt marked ERRME gets a 400
    whose body echoes the whole prompt (as some providers do); anything else is echoed."""
    text = json.dumps(req.body)
    if req.body.get("model") == "judge":
        found = CANARY_RE.findall(text)
        return reply(json.dumps({"score": 1, "rationale": f"it repeats {found}"}))
    if "ERRME" in text:
        return error(400, f"invalid request, you sent: {text}")
    return None


def config(server: FakeLLMServer, *, cases: str, privacy: str = "") -> str:
    return f"""
name: nolook
{privacy}
models:
  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0, max_retries: 0}}
judges:
  - id: j
    rubric: Does the answer repeat the question?
    model: {{id: jm, provider: openai-compatible, model: judge, base_url: '{server.openai_url}', price: 0}}
variants:
  - id: v
    messages:
      - role: user
        content: "{{{{ question }}}}"
cases:
{cases}
scorecard:
  - {{name: exact, type: exact}}
  - {{name: graded, type: llm-judge, judge: j, required: false}}
"""


def write_cases(folder: Path) -> str:
    """Inline cases (one with an exec check, one that errors), a case file and shards."""
    inline = "\n".join(
        f'  - id: in{i}\n    vars: {{question: "{canary(i, "q")}{" ERRME" if i == 1 else ""}"}}\n'
        f'    expected: "{canary(i, "e")}"\n    metadata: {{lang: en}}'
        + ('\n    check: \'test -n "$ANSWER_TEXT" && echo "$ANSWER_TEXT"\'' if i == 0 else "")
        for i in range(3)
    )
    rows = [
        {"id": f"f{i}", "question": canary(i, "fq"), "expected": canary(i, "fe"), "lang": "fr"}
        for i in range(4)
    ]
    write(folder / "cases.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    for shard in range(2):
        rows = [
            {"id": f"d{shard}-{i}", "vars": {"question": canary(10 * shard + i, "dq")}}
            for i in range(3)
        ]
        write(folder / "shards" / f"{shard}.jsonl", "\n".join(json.dumps(r) for r in rows))
    return inline + "\n  - {file: cases.jsonl, metadata: [lang]}"


def decoded(path: Path) -> str:
    """What a file holds, as text: the warehouse's and Parquet's (compressed) values too."""
    if path.suffix == ".duckdb":
        con = duckdb.connect(str(path), read_only=True)
        try:
            tables = [
                r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            ]
            return "\n".join(
                repr(con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM {t}").fetchall()) for t in tables
            )
        finally:
            con.close()
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return repr(pq.read_table(path).to_pylist())
    return ""


def leaks(*places: Path | str) -> list[str]:
    """Every canary found in these folders (bytes and decoded values) or texts."""
    found = []
    for place in places:
        if isinstance(place, str):
            found += [f"text: {m}" for m in CANARY_RE.findall(place)]
            continue
        for path in sorted(place.rglob("*")):
            if not path.is_file():
                continue
            raw = path.read_bytes()
            if CANARY.encode() in raw or CANARY in decoded(path):
                found.append(str(path))
    return found


@pytest.fixture
def server() -> Any:
    with FakeLLMServer() as s:
        s.responder = responder
        yield s


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_the_canaries_never_leave_the_run(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    folder, out, tmp = tmp_path / "eval", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the MCP run below is in this process
    monkeypatch.setattr(tempfile, "tempdir", None)
    cases = write_cases(folder)
    write(folder / "eval.yaml", config(server, cases=cases))
    streamed = (
        cases + "\n  - {source: jsonl-glob, params: {pattern: 'shards/*.jsonl', page_size: 2}}"
    )
    write(
        folder / "stream.yaml", config(server, cases=streamed, privacy="privacy: {no_look: true}")
    )
    env = {"TMPDIR": str(tmp)}
    texts: list[str] = []

    def cli(*args: str, code: int | None = None) -> str:
        done = run_cli("-o", str(out), *args, env=env)
        texts.extend([done.stdout, done.stderr])
        assert code is None or done.returncode == code, done.stderr
        return done.stdout

    # the flag on a file + inline config, the config key on a streaming one
    cli("run", str(folder / "eval.yaml"), "--no-look", "--label", "files", code=0)
    cli("run", str(folder / "stream.yaml"), "--label", "stream", code=0)
    assert server.count >= 2 * (3 + 4) + 6  # every case was asked, judged cases too
    asked = json.dumps([r.body for r in server.requests])
    assert canary(0, "q") in asked and canary(11, "dq") in asked  # the data did flow

    shown = cli("show", "files", "--failures")
    assert "in1" in shown and "no-look run" in texts[-1] and "output:" not in shown
    cli("show", "stream", "--case", "in0")
    data = json.loads(cli("--json", "show", "stream", "--failures"))
    assert data["no_look"] and data["cases"] and "output" not in data["cases"][0]
    assert json.loads(cli("--json", "compare", "files", "stream"))["no_look"]
    cli("compare", "files", "stream", "--html", str(out / "compare.html"))
    for fmt in ("json", "csv", "md", "junit", "html"):
        cli("export", "stream", "--format", fmt)
        cli("export", "files", "--format", fmt, "--out", str(out / f"files.{fmt}"))
    cli("export", "stream", "--format", "parquet")
    cli("sql", "SELECT * FROM cases")
    cli("render", str(folder / "stream.yaml"), "v", "in0", code=2)  # refused: prompts are data

    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    agent = Agent(root=tmp_path, output_dir=out, allow_code=True, cwd=folder)
    answers = [
        tools.run_eval(agent, str(folder / "stream.yaml"), label="mcp"),
        tools.get_run(agent, "stream"),
        tools.get_run(agent, "stream", detail="failures"),
        tools.get_run(agent, "stream", detail="full"),
        tools.case_brief(agent.view(), "files", "v", "m", "in0"),
        tools.compare_runs(agent, "files", "stream"),
        tools.list_runs(agent),
        tools.query(agent, "SELECT * FROM cases"),
        tools.query(agent, "SELECT * FROM scores"),
        tools.write_report(agent, "stream", path=str(out / "mcp.html")),
        tools.write_report(agent, "stream", against="files", path=str(out / "mcp-cmp.html")),
    ]
    from jsonschema import Draft202012Validator

    from evalwh.mcp.outputs import OUTPUT_SCHEMAS

    # the no-look answers fit each tool's outputSchema, as the full ones do
    named = ("run_eval", *["get_run"] * 3, "get_case_result", "compare_runs", "list_runs")
    for name, data in zip(
        (*named, "query", "query", "write_report", "write_report"), answers, strict=True
    ):
        Draft202012Validator(OUTPUT_SCHEMAS[name]).validate(data)
    with pytest.raises(Exception, match="no-look"):
        tools.render_prompt(agent, str(folder / "stream.yaml"), "v", "in0")
    assert answers[4]["no_look"] and "output" not in answers[4]
    texts.append(json.dumps(answers, default=str))

    assert leaks(out, tmp, *texts) == []

    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    runs = con.execute(
        "SELECT label, no_look, config_snapshot, datasources FROM runs ORDER BY label"
    ).fetchall()
    kept = con.execute(
        "SELECT case_id, error, error_kind, check_passed, check_exit_code, metadata "
        "FROM cases WHERE case_id IN ('in0', 'in1') ORDER BY run_id, case_id"
    ).fetchall()
    judged = con.execute(
        "SELECT count(*), count(rationale), count(details), min(score) FROM scores "
        "WHERE criterion = 'graded'"
    ).fetchone()
    cached = con.execute("SELECT count(*) FROM response_cache").fetchone()
    con.close()
    assert [(r[0], r[1]) for r in runs] == [("files", True), ("mcp", True), ("stream", True)]
    snapshot = json.loads(runs[0][2])
    assert [c.get("id") for c in snapshot["cases"]] == ["in0", "in1", "in2", None]
    assert snapshot["cases"][-1] == {"file": "cases.jsonl", "metadata": ["lang"]}
    assert snapshot["cases"][0]["expected"] == hashed(canary(0, "e"))  # inline cases: hashed
    assert json.loads(runs[2][3])[0]["rows_read"] == 6  # the stream's datasource, recorded
    # ids, metadata, the error's status and class, the check's pass and exit status stay
    assert kept[0] == ("in0", None, None, True, 0, '{"lang": "en"}')
    assert kept[1][:3] == ("in1", "HTTP 400 (http)", "http")
    assert judged is not None and judged[0] > 0 and judged[1:3] == (0, 0) and judged[3] == 1.0
    assert cached == (0,)  # nothing written to the response cache


def test_without_no_look_the_same_search_finds_the_canaries(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    # the search above can fail: an ordinary run leaves canaries in the warehouse (compressed
    # or not), the exports, the check's answer file and the terminal
    folder, out, tmp = tmp_path / "eval", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    write(folder / "eval.yaml", config(server, cases=write_cases(folder)))
    done = run_cli("-o", str(out), "run", str(folder / "eval.yaml"), env={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    shown = run_cli("-o", str(out), "show", "latest", "--failures")
    page = out / "page.html"
    assert (
        run_cli("-o", str(out), "export", "latest", "-f", "html", "--out", str(page)).returncode
        == 0
    )
    found = leaks(out, shown.stdout)
    assert str(out / "warehouse.duckdb") in found and str(page) in found
    assert any(p.endswith("cases.parquet") for p in found)
    assert any(p.startswith("text:") for p in found)


def test_no_look_neither_reads_nor_writes_the_cache(tmp_path: Path) -> None:
    import evalwh

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: x}, expected: x}, {id: b, vars: {q: y}, expected: z}]
scorecard: [{name: exact, type: exact}]
""",
    )
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    second = evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    third = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert first.stats["cache_hits"] == 0 and not first.no_look
    assert second.stats["cache_hits"] == 0 and second.no_look  # not read
    assert third.stats["cache_hits"] == 2  # the first run's answers, still there
    view = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
    rows = view.sql("SELECT run_id FROM response_cache").to_pylist()
    assert {r["run_id"] for r in rows} == {first.run_id}  # not written
    shown = view.show(second.run_id, failures=True)
    assert shown["no_look"] and shown["notice"] and shown["cases"][0]["case_id"] == "b"
    assert set(shown["cases"][0]) >= {"case_id", "score", "passed", "criteria"}
    assert not set(shown["cases"][0]) & {"output", "expected", "vars", "messages"}
    assert "output" in view.show(first.run_id, failures=True)["cases"][0]


def test_resume_of_a_no_look_run_keeps_no_look(tmp_path: Path) -> None:
    import evalwh
    from evalwh.errors import UsageError

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: x}, expected: x}]
scorecard: [{name: exact, type: exact}]
""",
    )
    run = evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    with pytest.raises(UsageError, match="no-look") as caught:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", resume=run.run_id, force=True)
    assert caught.value.exit_code == 2


def test_pairwise_is_refused_in_no_look(tmp_path: Path) -> None:
    from evalwh.errors import ConfigError

    cfg = write(
        tmp_path / "eval.yaml",
        """
privacy: {no_look: true}
models: [{id: a, provider: mock}, {id: b, provider: mock}]
judges: [{id: j, model: {id: jm, provider: mock}}]
pairwise: [{name: ab, judge: j, baseline: {model: a}, candidate: {model: b}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: x}}]
scorecard: [{name: exact, type: exact}]
""",
    )
    import evalwh

    with pytest.raises(ConfigError, match="no-look run stores none"):
        evalwh.validate(cfg, output_dir=tmp_path / "o")


def test_errors_are_reduced_to_status_and_class() -> None:
    from evalwh.engine.runner import error_class, error_text
    from evalwh.providers.base import ProviderError

    echoed = ProviderError("bad request: you sent SECRET", status=400, kind="http")
    assert error_class(echoed) == "HTTP 400 (http)"
    assert error_class(ProviderError("timed out on SECRET", kind="timeout")) == "timeout error"
    assert error_text(echoed, lambda s: s, no_look=True) == "HTTP 400 (http)"
    assert "SECRET" in error_text(echoed, lambda s: s)  # an ordinary run keeps the text


def test_a_no_look_case_file_error_quotes_no_value(tmp_path: Path) -> None:
    from evalwh.config.loader import load_config
    from evalwh.errors import ConfigError

    write(tmp_path / "c.jsonl", '{"id": 1, "vars": "CNRYvalue"}\n')
    body = """
models: [{id: m, provider: mock}]
variants: [{id: v, messages: [{role: user, content: "x"}]}]
cases: [{file: c.jsonl}]
scorecard: [{name: exact, type: exact}]
"""
    with pytest.raises(ConfigError, match="CNRYvalue"):
        load_config(write(tmp_path / "plain.yaml", body))
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path / "nl.yaml", body + "privacy: {no_look: true}\n"))
    assert "must be a mapping" in str(caught.value) and CANARY not in str(caught.value)


def test_an_exec_check_writes_no_answer_file_in_no_look(tmp_path: Path) -> None:
    import asyncio

    from evalwh.scoring.checks import parse_check, run_check

    spec = parse_check('ls -A; test -z "$ANSWER" && echo "$ANSWER_TEXT"', "case check", "f")
    seen = asyncio.run(run_check(spec, "the answer", {}, no_look=True))
    assert seen.passed and seen.output.strip() == "the answer"  # no file listed, ANSWER unset
    plain = asyncio.run(run_check(spec, "the answer", {}))
    assert not plain.passed and "answer.txt" in plain.output
    files = parse_check({"run": "true", "files": {"t.py": "x"}}, "case check", "f")
    refused = asyncio.run(run_check(files, "a", {}, no_look=True))
    assert not refused.passed and "no case data to disk" in (refused.error or "")


VISION = """
models: [{id: m, provider: mock}]
variants:
  - id: v
    messages:
      - role: user
        content: [{text: "Which colour?"}, {image: "{{ files.photo }}"}]
cases: [{id: red, files: {photo: red.png}, expected: red, metadata: {kind: primary}}]
scorecard: [{name: colour, type: contains}]
"""


@pytest.mark.parametrize("no_look", [True, False])
def test_no_look_leaves_attachment_bytes_and_the_artifact_store_alone(
    tmp_path: Path, no_look: bool
) -> None:
    """An attached file's bytes are read from where the file is, never copied into the
    artifact store, and the case row keeps no hash, type or size of it; an ordinary run of
    the same eval does both (so the checks below can fail)."""
    import evalwh

    png = (Path(__file__).parents[2] / "examples/vision/images/red-square.png").read_bytes()
    folder, out = tmp_path / "eval", tmp_path / "out"
    folder.mkdir()
    (folder / "red.png").write_bytes(png + canary(0, "img").encode())  # after IEND: still a PNG
    write(folder / "eval.yaml", VISION)
    result = evalwh.run_eval(folder / "eval.yaml", output_dir=out, no_look=no_look)
    assert result.totals["n"] == 1 and result.totals["n_errors"] == 0  # the model got the image
    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    (attachments,) = con.execute("SELECT attachments FROM cases").fetchone() or (None,)
    con.close()
    stored = sorted(p.name for p in (out / "artifacts").rglob("*") if p.is_file())
    if no_look:
        assert attachments is None and not (out / "artifacts").exists()
        assert leaks(out) == []
    else:
        assert json.loads(attachments)["photo"]["media_type"] == "image/png"
        assert len(stored) == 1 and leaks(out) != []


def test_no_look_neither_reads_nor_writes_a_cache_dir(tmp_path: Path) -> None:
    """The response cache in its own file (settings.cache_dir / EVALWH_CACHE_DIR): a no-look
    run takes no hit from it (nor counts one in its estimate) and adds no entry to it."""
    import evalwh

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: CNRYcachedir1}, expected: x}, {id: b, vars: {q: y}, expected: y}]
scorecard: [{name: exact, type: exact}]
settings: {cache_dir: shared}
""",
    )
    shared = tmp_path / "shared" / "cache.duckdb"
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "a")
    assert first.stats["cache_hits"] == 0 and shared.is_file()
    before = shared.read_bytes()
    blind = evalwh.run_eval(cfg, output_dir=tmp_path / "b", no_look=True)
    assert blind.stats["cache_hits"] == 0 and blind.stats["requests"] == 2  # not read
    assert blind.estimate is not None and blind.estimate["cached"] == 0
    assert shared.read_bytes() == before  # not written (nor touched)
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "c")
    assert again.stats["cache_hits"] == 2  # the cache itself still serves ordinary runs
    con = duckdb.connect(str(tmp_path / "b" / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM response_cache").fetchone() == (0,)
    finally:
        con.close()


def test_every_shard_of_a_run_has_the_same_no_look(tmp_path: Path) -> None:
    """A sharded no-look run is stored as no-look, and a shard without --no-look may not join
    it (nor a no-look shard an ordinary sharded run): its rows would keep case data."""
    import evalwh
    from evalwh.errors import UsageError

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: x}, expected: x}, {id: b, vars: {q: y}, expected: y},
        {id: c, vars: {q: z}, expected: z}, {id: d, vars: {q: w}, expected: w}]
scorecard: [{name: exact, type: exact}]
""",
    )
    out = tmp_path / "o"
    first = evalwh.run_eval(cfg, output_dir=out, shard=(1, 8), run_id="blind", no_look=True)
    assert first.no_look
    view = evalwh.open_warehouse(out / "warehouse.duckdb")
    assert view.run("blind")["no_look"] is True
    with pytest.raises(UsageError, match="no-look") as caught:
        evalwh.run_eval(cfg, output_dir=out, shard=(2, 8), run_id="blind")
    assert caught.value.exit_code == 2
    evalwh.run_eval(cfg, output_dir=out, shard=(1, 8), run_id="seen")
    with pytest.raises(UsageError, match="no-look"):
        evalwh.run_eval(cfg, output_dir=out, shard=(2, 8), run_id="seen", no_look=True)
    evalwh.run_eval(cfg, output_dir=out, shard=(2, 8), run_id="blind", no_look=True)  # joins


def test_a_no_look_runs_exec_check_gets_no_answer_file_from_the_engine(tmp_path: Path) -> None:
    """The engine hands no-look on to each case's check: the check's folder holds no
    answer.txt and ANSWER is unset (the answer is in ANSWER_TEXT only), so the case passes;
    the same run without no-look gets the file, and the same check fails. A check that
    cannot judge (here: out of time) fails; its error is stored by an ordinary run only."""
    import evalwh

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock, mock: {default: "the answer"}}]
variants: [{id: v, messages: [{role: user, content: "q"}]}]
cases:
  - id: a
    check: 'test ! -e answer.txt && test -z "${ANSWER+x}" && test "$ANSWER_TEXT" = "the answer"'
  - id: b
    check: {run: sleep 5, timeout_s: 0.5}
scorecard: [{name: exact, type: exact, required: false}]
""",
    )

    def checked(no_look: bool) -> list[tuple[Any, ...]]:
        run = evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=no_look, no_cache=True)
        view = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
        rows = view.sql(
            "SELECT case_id, check_passed, check_error FROM cases "
            f"WHERE run_id = '{run.run_id}' ORDER BY case_id"
        )
        return [tuple(r.values()) for r in rows.to_pylist()]

    assert checked(no_look=True) == [("a", True, None), ("b", False, None)]
    assert checked(no_look=False) == [("a", False, None), ("b", False, "timed out after 0.5 s")]


def test_a_no_look_run_stores_no_case_label(tmp_path: Path) -> None:
    # a case's human_label is case data ("any value": it may quote the case); the labels
    # table of a no-look run holds none, while a normal run keeps it for calibration
    import evalwh

    label = canary(1, "label")
    cfg = write(
        tmp_path / "eval.yaml",
        f"""
models: [{{id: m, provider: mock}}]
variants: [{{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}]
cases: [{{id: a, vars: {{q: x}}, expected: x, human_label: {label}}}]
scorecard: [{{name: exact, type: exact}}]
""",
    )
    hidden = evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    shown = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        stored = con.execute(
            "SELECT run_id, kind, case_id, label FROM labels ORDER BY run_id"
        ).fetchall()
    assert stored == [(shown.run_id, "pointwise", "a", json.dumps(label))]
    assert hidden.run_id != shown.run_id


def test_a_no_look_run_asks_its_judge_again_instead_of_reading_the_cache(
    tmp_path: Path,
) -> None:
    # the judge's cached verdicts quote the cases of the runs that asked: a no-look run never
    # reads them (nor writes its own), a normal run reuses them
    import evalwh

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: mock}]
judges:
  - id: j
    rubric: Is the answer an answer?
    model: {id: jm, provider: mock, mock: {default: '{"score": 1, "rationale": "fine"}'}}
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: x}}, {id: b, vars: {q: y}}]
scorecard: [{name: graded, type: llm-judge, judge: j}]
""",
    )
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    hidden = evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    # requests: the two answers and the two verdicts, each asked of its provider
    asked = [r.stats["requests"] for r in (first, hidden, again)]
    assert asked == [4, 4, 0]
    assert hidden.totals["n_passed"] == 2


@pytest.mark.parametrize("option", ["no_cache", "no_look"])
def test_without_the_cache_a_prompt_repeated_in_the_run_is_sent_each_time(
    tmp_path: Path, option: str
) -> None:
    # --no-cache and no-look: every request is sent, even one an earlier case of the same
    # run rendered identically; with the cache the second is a hit (a mock's answer depends
    # on its case, so the command provider, here `cat`)
    import evalwh

    cfg = write(
        tmp_path / "eval.yaml",
        """
models: [{id: m, provider: command, command: [cat]}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
cases: [{id: a, vars: {q: same}}, {id: b, vars: {q: same}}]
scorecard: [{name: said, type: regex, pattern: "."}]
settings: {concurrency: 1}
""",
    )
    cached = evalwh.run_eval(cfg, output_dir=tmp_path / "cached")
    sent = evalwh.run_eval(cfg, output_dir=tmp_path / "sent", **{option: True})
    assert (cached.stats["requests"], cached.stats["cache_hits"]) == (1, 1)
    assert (sent.stats["requests"], sent.stats["cache_hits"]) == (2, 0)
