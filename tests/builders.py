"""Builders that more than one area of the suite uses: configs, warehouses, runs.

A helper that one test module alone needs stays in that module; one that two areas need lives
here (or, when it is a pytest fixture, in tests/conftest.py), never copied."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
from collections.abc import Callable
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest

import evalwh
from evalwh import api
from evalwh.api import validate
from evalwh.config.model import Case, ModelSpec
from evalwh.engine.runner import CellResult
from evalwh.errors import EvalwhError
from evalwh.providers.base import Completion, Request
from evalwh.scoring.scorecard import CaseScore, CriterionScore
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.conftest import run_cli, write
from tests.fakes.servers import RecordedRequest


def git(folder: Path, *args: str) -> str:
    """Run git in ``folder`` with a fixed author and ``folder`` as HOME; its stdout, stripped."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": os.environ["PATH"],
        "HOME": str(folder),
    }
    done = subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


class Counting:
    """A provider that counts calls per (model id, case id) and does what ``behaviour`` says."""

    calls: ClassVar[list[tuple[str, str, int]]] = []
    behaviour: ClassVar[dict[str, Any]] = {}

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    async def complete(self, request: Request) -> Completion:
        self.calls.append((request.model.id, request.case.id, request.attempt))
        action = self.behaviour.get(request.case.id)
        if isinstance(action, BaseException):
            raise action
        return Completion(text=str(request.case.expected), input_tokens=3, output_tokens=1)

    async def aclose(self) -> None:
        return None


def stored(out: Path, sql: str) -> list[dict[str, Any]]:
    return evalwh.open_warehouse(out / "warehouse.duckdb").sql(sql).to_pylist()


def eval_config(
    tmp_path: Path, models: str, n_cases: int = 30, concurrency: int = 5, cases: str = ""
) -> Path:
    """eval.yaml in ``tmp_path``: the given ``models:`` block, one variant asking ``{{ q }}``,
    ``n_cases`` cases c0.. whose expected answer is their own q (or the given ``cases:``
    block), an exact-match scorecard and ``concurrency``."""
    cases = cases or "\n".join(
        f"  - {{id: c{i}, vars: {{q: '{i}'}}, expected: '{i}'}}" for i in range(n_cases)
    )
    return write(
        tmp_path / "eval.yaml",
        f"""\
settings: {{concurrency: {concurrency}}}
models:
{models}
variants:
  - id: v
    messages: [{{role: user, content: "{{{{ q }}}}"}}]
cases:
{cases}
scorecard:
  - {{name: exact, type: exact}}
""",
    )


# One mock model answering "hi" to three cases (c1, c2, other), scored by `contains: hi`.
ROWS_CONFIG = """\
name: rows
models:
  - {id: m, provider: mock, mock: {default: hi}}
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: one}}
  - {id: c2, vars: {q: two}}
  - {id: other, vars: {q: three}}
scorecard:
  - {name: has, type: contains, value: hi}
"""

CELL_MODEL = ModelSpec(id="m", provider="mock", model="small")


def cell_result(case: Case, *, passed: bool = True, error: str | None = None) -> CellResult:
    """One answered cell of ``case`` by CELL_MODEL (variant v, output "out"), scored by one
    exact-match criterion that passed or not."""
    crit = CriterionScore(
        "same", "exact", 1.0 if passed else 0.0, passed, 1.0, True, None, None, None
    )
    return CellResult(
        variant="v", model=CELL_MODEL, case=case, repeat=0,
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],  # type: ignore[arg-type]
        request_hash="h", output="out", error=error, error_kind=None, latency_ms=1.0,
        input_tokens=1, output_tokens=1, cost_usd=None, cached=False, attempts=1,
        scored=CaseScore([crit], 1.0 if passed else 0.0, passed),
    )  # fmt: skip


# The minimal valid config: one mock model, one variant asking {{ question }}, one case c1
# (question "hi", expected "hi"), one exact criterion. Tests make it invalid one edit at a time.
BASE = """\
models:
  - id: m
    provider: mock
variants:
  - id: v
    messages:
      - role: user
        content: "{{ question }}"
cases:
  - id: c1
    vars: {question: "hi"}
    expected: "hi"
scorecard:
  - name: ok
    type: exact
"""


def expect_error(config: Path, *fragments: str) -> str:
    """The CLI refuses with exit 2, the message holds every fragment, and no run was written.

    The same config is checked in-process first (``validate``, what ``run`` checks before it
    calls anything): the CLI runs in a subprocess, out of mutation testing's sight."""
    with pytest.raises(EvalwhError) as info:
        validate(config)
    assert info.value.exit_code == 2, info.value
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in:\n{info.value}"
    result = run_cli("run", str(config), cwd=config.parent)
    assert result.returncode == 2, result.stdout + result.stderr
    message = result.stderr
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    assert "fix:" in message
    assert not (config.parent / ".evalwh").exists(), "a refused run must write nothing"
    return message


# Datasource configs: a mock model echoing the case's q, one variant, an exact criterion; the
# test adds its `cases:` (a `source:` entry).
DATASOURCE_HEAD = """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
"""

# The module the `sources` fixture (tests/conftest.py) imports as `mysources`: datasource
# classes a config names as "mysources:Counting" and so on.
DATASOURCE_MODULE = '''
STATE = {"calls": [], "done": [0]}


class Counting:
    """n rows in pages of `page`; records how many cells were done at each page asked."""

    def __init__(self, params, root):
        self.n, self.page = params["n"], params["page"]

    def pages(self, cursor):
        start = cursor or 0
        STATE["calls"].append((start, STATE["done"][0]))
        rows = [
            {"id": f"c{i}", "q": f"x{i}", "expected": f"x{i}" if i % 3 else "no", "lang": i % 2}
            for i in range(start, min(start + self.page, self.n))
        ]
        nxt = start + self.page
        return rows, (nxt if nxt < self.n else None)


class Broken:
    def __init__(self, params, root):
        pass

    def pages(self, cursor):
        if cursor is None:
            return [{"id": "a", "q": "SECRETROW"}], 1
        raise ValueError("cannot parse SECRETROW")


class NoPages:
    def __init__(self, params, root):
        pass


class Checked:
    """Two rows written as cases, each with an exec check: a snippet and a mapping."""

    def __init__(self, params, root):
        self.bad = (params or {}).get("bad")

    def pages(self, cursor):
        if self.bad:
            return [{"id": "bad", "vars": {"q": "x"}, "check": {"nope": 1}}], None
        return [
            {"id": "ok", "vars": {"q": "x"}, "check": 'test "$(cat "$ANSWER")" = x'},
            {"id": "no", "vars": {"q": "y"}, "check": {"run": "exit 3", "timeout_s": 5}},
        ], None
'''

# A judged run over a jsonl-glob datasource (rows in s/*.jsonl): the judge's prompt uses {{ topic }}.
DATASOURCE_JUDGED = """
models: [{id: m, provider: mock, mock: {default: "an answer"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
judges:
  - id: j
    model: {id: jm, provider: mock, mock: {default: '{"score": 1, "reason": "fine"}'}}
    messages: [{role: user, content: "on {{ topic }}: {{ output }}"}]
scorecard: [{name: good, type: llm-judge, judge: j}]
cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl'}}]
"""


# -- the peer tools' result files (tests/fixtures/peers/README.md): importer and CLI tests ------

PEERS = Path(__file__).resolve().parent / "fixtures" / "peers"
PROMPTFOO = PEERS / "promptfoo-results.json"


def inspect_log(kind: str) -> Path:
    """The inspect_ai log of the fixtures written as ``kind`` ("eval" or "json")."""
    return next(p for p in sorted(PEERS.glob(f"2026-*.{kind}")))


def rows(wh: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on the warehouse file ``wh``, read-only."""

    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


# The quickstart's rule that makes mock-small answer a terse prompt wrong 30 % of the time: a
# test raises the rate in a copy (`.replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.8"))`)
# to plant a regression.
TERSE_RULE = '          rate: 0.3\n          reply: "The answer is {{ expected }}."'


# -- warehouses filled row by row, reference statistics, judge configs ---------------
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


STEP = 0.01  # "one step past the limit": far above any float tolerance


# Run G, one criterion 'k1' mirroring the verdict plus 'k2' (score 0.5, passing half the time):
#   cell v × m1: c1 pass 1.0 | c2 pass 0.5 | c3 fail 0.5 | c4 error (fail, 0.0)
#   cell v × m2: c1 pass 1.0 | c2 pass 1.0 | c3 pass 1.0 | c4 pass 1.0
# run: pass rate 6/8 = 0.75, mean score 6/8 = 0.75, error rate 1/8 = 0.125,
#      cost 8 x 0.0625 = 0.5 (cached rows are free: none here)
# cell v × m1: pass rate 0.5, score 0.5, error rate 0.25, cost 0.25
# criterion k1: pass rate 0.75, score 0.75; k2: pass rate 0.5, score 0.5
ROWS = [
    ("m1", "c1", True, 1.0, None),
    ("m1", "c2", True, 0.5, None),
    ("m1", "c3", False, 0.5, None),
    ("m1", "c4", False, 0.0, "HTTP 500"),
    ("m2", "c1", True, 1.0, None),
    ("m2", "c2", True, 1.0, None),
    ("m2", "c3", True, 1.0, None),
    ("m2", "c4", True, 1.0, None),
]


def add_run(con: Any, run_id: str, rows: list[tuple[str, str, bool, float, str | None]]) -> None:
    con.execute(
        "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
        "n_planned, started_at, evalwh_version) VALUES (?, ?, 's', 'completed', 'h', 'd', ?, ?, 't')",
        [run_id, run_id, len(rows), NOW],
    )
    for i, (model, case_id, passed, score, error) in enumerate(rows):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, error, "
            "latency_ms, cost_usd, cached, request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', ?, ?, 0, '{}', ?, 100, 0.0625, false, 'x', 1, ?, ?, ?)",
            [run_id, model, case_id, error, score, passed, NOW],
        )
        fill_run_keys(con)
        for criterion, c_passed, c_score in (("k1", passed, score), ("k2", i % 2 == 0, 0.5)):
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', ?, ?, 0, ?, 'x', ?, ?, 1, true)",
                [run_id, model, case_id, criterion, c_score, c_passed],
            )
            fill_run_keys(con)


def add_dict_run(con: Any, run_id: str, rows: list[dict[str, Any]], *, suite: str = "s") -> None:
    """Insert a run and its case rows (one criterion 'k1' mirroring the verdict, 'k2' always
    passing) into a migrated warehouse."""
    con.execute(
        "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
        "n_planned, started_at, evalwh_version) VALUES (?, ?, ?, 'completed', 'h', 'd', ?, ?, 't')",
        [run_id, run_id, suite, len(rows), NOW],
    )
    full = [
        {
            "variant": "v",
            "model": "m1",
            "repeat": 0,
            "cost_usd": 0.001,
            "latency_ms": 100.0,
            "error": None,
            "metadata": {},
            **r,
        }
        for r in rows
    ]
    if not full:
        return
    keys = ("variant", "model", "case_id", "repeat")
    # one statement per table: a statement per row costs milliseconds each in a DuckDB file
    con.executemany(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, error, "
        "latency_ms, cost_usd, cached, request_hash, attempts, score, passed, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, false, 'x', 1, ?, ?, ?)",
        [
            [run_id, *(row[k] for k in keys), json.dumps(row["metadata"]), row["error"],
             row["latency_ms"], row["cost_usd"], row["score"], row["passed"], NOW]
            for row in full
        ],
    )  # fmt: skip
    fill_run_keys(con)
    con.executemany(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required) VALUES (?, ?, ?, ?, ?, ?, 'x', ?, ?, 1, true)",
        [
            [run_id, *(row[k] for k in keys), criterion, score, passed]
            for row in full
            for criterion, passed, score in (("k1", row["passed"], row["score"]), ("k2", True, 1.0))
        ],
    )
    fill_run_keys(con)


Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = p + Z * Z / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - half) / (1 + Z * Z / n), (centre + half) / (1 + Z * Z / n)


def cluster_se(d: list[float], groups: list[str]) -> float:
    """CR1: sqrt(G/(G-1) * sum_g (sum_{i in g} (d_i - mean))^2) / n."""
    mean, n = statistics.mean(d), len(d)
    sums: dict[str, float] = {}
    for value, g in zip(d, groups, strict=True):
        sums[g] = sums.get(g, 0.0) + value - mean
    big_g = len(sums)
    return math.sqrt(big_g / (big_g - 1) * sum(s * s for s in sums.values())) / n


def warehouse_with(tmp_path: Path, runs: dict[str, list[dict[str, Any]]]) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        con.execute("BEGIN")  # one commit for all the rows, not one per row
        for run_id, rows in runs.items():
            add_dict_run(con, run_id, rows)
        con.execute("COMMIT")
    return Warehouse(path)


def rows_of(passes: dict[str, list[int]], **extra: Any) -> list[dict[str, Any]]:
    """Case rows: ``passes[case]`` is the pass (1) / fail (0) of each repeat."""
    return [
        {"case_id": case, "repeat": r, "passed": bool(p), "score": float(p), **extra}
        for case, ps in passes.items()
        for r, p in enumerate(ps)
    ]


def gate_rules(metric: str, op: str, limit: float) -> str:
    return json.dumps(
        [{"scope": "run", "target": "run", "metric": metric, "op": op, "limit": limit}]
    )


GARBAGE_JUDGE_CONFIG = """\
models:
  - {id: m, provider: mock}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - {id: a, vars: {q: one}, expected: one, human_label: pass}
  - {id: b, vars: {q: two}, expected: two, human_label: fail}
judges:
  - id: j
    model:
      id: j
      provider: mock
      mock:
        rules:
          - when: {case: b}
            reply: "Honestly I am not sure what to say."
        default: '{"score": 1}'
scorecard:
  - {name: exact, type: exact}
  - {name: judged, type: llm-judge, judge: j}
"""


ORDINAL = [  # case, human label, judge score, topic
    ("a", 1, 1, "x"),
    ("b", 2, 3, "x"),
    ("c", 3, 3, "x"),
    ("d", 4, 2, "y"),
    ("e", 5, 5, "y"),
    ("f", 3, 5, "y"),
]


def ordinal_config(tmp_path: Path, extra: str = "") -> Path:
    cases = "\n".join(
        f"  - {{id: {c}, vars: {{q: {c}}}, expected: {c}, human_label: {h}, metadata: {{topic: {t}}}}}"
        for c, h, _, t in ORDINAL
    )
    rules = "\n".join(
        f"          - when: {{case: {c}}}\n            reply: '{{\"score\": {j}}}'"
        for c, _, j, _ in ORDINAL
    )
    return write(
        tmp_path / "eval.yaml",
        f"""\
models:
  - {{id: m, provider: mock}}
variants:
  - id: v
    messages: [{{role: user, content: "{{{{ q }}}}"}}]
cases:
{cases}
judges:
  - id: j
    scale: {{min: 1, max: 5}}
    model:
      id: j
      provider: mock
      mock:
        rules:
{rules}
scorecard:
  - {{name: judged, type: llm-judge, judge: j}}
{extra}""",
    )


def quadratic_kappa(pairs: list[tuple[int, int]]) -> float:
    """Weighted kappa computed the textbook way: weights (i-j)^2, expected from marginals."""
    cats = sorted({v for p in pairs for v in p})
    n = len(pairs)
    observed = sum((h - j) ** 2 for h, j in pairs) / n
    ph = {c: sum(1 for h, _ in pairs if h == c) / n for c in cats}
    pj = {c: sum(1 for _, j in pairs if j == c) / n for c in cats}
    expected = sum(ph[a] * pj[b] * (a - b) ** 2 for a in cats for b in cats)
    return 1 - observed / expected


def only_row(path: Path, sql: str) -> dict[str, Any]:
    """The one row ``sql`` selects from the warehouse at ``path``, by column name."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    finally:
        con.close()
    assert len(rows) == 1
    return dict(zip(names, rows[0], strict=True))


def lake_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EVALWH_LAKE", json.dumps({"data_path": str(tmp_path / "data")}))
    return api.open_warehouse(f"ducklake:{tmp_path / 'meta.ducklake'}").store


def lose_the_first_commit(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next transaction loses a race with another writer at its commit; the ones after
    it commit. Returns the list of tries, one entry per transaction begun."""
    from evalwh.warehouse import connect

    real, tries = connect.transaction, []

    @contextmanager
    def loses_once(con: Any) -> Any:
        tries.append(1)
        if len(tries) == 1:
            raise duckdb.TransactionException("Transaction conflict: another writer committed")
        with real(con):
            yield

    monkeypatch.setattr(connect, "transaction", loses_once)
    return tries


# ---- an eval of N echo cases (the fake servers echo the last user text) ----------------------


SCORECARD = """
scorecard:
  - {name: echo, type: contains}
"""


def _cases(folder: Path, n: int) -> None:
    rows = (
        json.dumps({"id": f"c{i:04d}", "vars": {"q": f"question {i}"}, "expected": f"question {i}"})
        for i in range(n)
    )
    write(folder / "cases.jsonl", "\n".join(rows) + "\n")


def eval_for(
    folder: Path, model_block: str, n: int, concurrency: int = 32, extra: str = ""
) -> Path:
    _cases(folder, n)
    return write(
        folder / "eval.yaml",
        f"""\
settings: {{concurrency: {concurrency}, batch_size: 50}}
models:
{model_block}
variants:
  - id: v
    messages:
      - {{role: system, content: "Echo the question."}}
      - {{role: user, content: "{{{{ q }}}}"}}
cases:
  - file: cases.jsonl
{SCORECARD}{extra}""",
    )


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed): connection refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def needs_anthropic_key(folder: Path) -> Path:
    """``folder/eval.yaml``: one Anthropic model (``claude``, at line 2 column 5) and one case,
    so its run needs ANTHROPIC_API_KEY."""
    return write(
        folder / "eval.yaml",
        "models:\n"
        "  - {id: claude, provider: anthropic, model: claude-sonnet-4-5}\n"
        "variants:\n"
        "  - {id: v, messages: [{role: user, content: hi}]}\n"
        "cases:\n"
        "  - {id: c1, expected: hi}\n"
        "scorecard:\n"
        "  - {name: exact, type: exact}\n",
    )


def case_of(req: RecordedRequest) -> str:
    if not isinstance(req.body, dict):  # a request cut short by the SIGKILL
        return ""
    messages = req.body.get("messages", [])
    last = messages[-1]["content"]
    text = last if isinstance(last, str) else "".join(p.get("text", "") for p in last)
    return text


# ---- an eval asking for JSON by schema (structured outputs) -----------------------------------


PLACE_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def place_config(folder: Path, model: str, output: str = "", scorecard_extra: str = "") -> Path:
    return write(
        folder / "eval.yaml",
        f"""\
models:
  - {model}
variants:
  - id: v
    messages: [{{role: user, content: "Where is {{{{ q }}}}?"}}]
{output}
cases:
  - {{id: c1, vars: {{q: the Louvre}}}}
  - {{id: c2, vars: {{q: Big Ben}}}}
scorecard:
  - {{name: shape, type: json-schema, schema: {json.dumps(PLACE_SCHEMA)}{scorecard_extra}}}
""",
    )


PLACE_OUTPUT = f"""\
    output_schema:
      schema: {json.dumps(PLACE_SCHEMA)}
      name: place
"""


def place_scores(out: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT case_id, passed, details ->> 'mode' FROM scores ORDER BY case_id"
        ).fetchall()
    finally:
        con.close()


def materialised(value: Any) -> Any:
    """A validated TypedDict as plain data (pydantic validates an Iterable field lazily)."""
    if isinstance(value, dict):
        return {k: materialised(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    return [materialised(v) for v in value]


def batch_config(tmp_path: Path, n_cases: int = 5, script: str = "", extra: str = "") -> Path:
    """eval_config with one mock model m asking in batches (batch: true), its jobs kept in
    ``tmp_path/jobs``, answering every case right, ``script`` its ``mock.batch``."""
    models = (
        f"  - {{id: m, provider: mock, batch: true, batch_dir: '{tmp_path / 'jobs'}', "
        f"mock: {{default: '{{{{ expected }}}}', batch: {{{script}}}}}{extra}}}"
    )
    return eval_config(tmp_path, models, n_cases=n_cases)


def stop_at_first_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The first wait between polls is a Ctrl-C (after every job was submitted)."""
    import asyncio
    import signal

    from evalwh.engine import batch

    waits: list[float] = []
    stopped: list[bool] = []
    real_stop = batch.BatchFeed.stop

    def stop(feed: batch.BatchFeed) -> None:
        stopped.append(True)
        real_stop(feed)

    async def interrupted(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:
            os.kill(os.getpid(), signal.SIGINT)
            while not stopped:  # until the run's handler has taken the signal
                await asyncio.sleep(0)

    monkeypatch.setattr(batch.BatchFeed, "stop", stop)
    monkeypatch.setattr(batch, "pause", interrupted)
    return waits


async def no_pause(seconds: float) -> None:
    return None


def killed_when(
    args: list[str], cwd: Path, ready: Callable[[], bool], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`evalwh ARGS` in a subprocess (polls every 0.05 s unless ``env`` says otherwise),
    SIGKILLed once ``ready()`` holds (checked every 50 ms; the command must not end first)."""
    import signal
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", *args],
        cwd=cwd,
        env={**os.environ, "EVALWH_BATCH_POLL_S": "0.05", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not ready():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def fill_run_keys(con: Any) -> None:
    """Give the case and score rows a test inserted by hand (without ``run_key``) the key
    evalwh's writer derives from their run_id (evalwh.warehouse.runkeys.insert_rows): the
    named queries find a run's rows by it."""
    from evalwh.warehouse.queries import macros
    from evalwh.warehouse.runkeys import KEYED_TABLES

    con.execute(macros())
    for table in sorted(KEYED_TABLES):
        con.execute(f"UPDATE {table} SET run_key = run_key(run_id) WHERE run_key IS NULL")
