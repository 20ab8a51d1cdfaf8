"""Builders the named-query tests share: a migrated warehouse opened with duckdb, and inserters of
answers, scores, pairs, labels and runs rows, each with the few columns a query reads (the others
take fixed defaults). Plain functions, imported by the test modules of tests/sql/.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import duckdb
from statsmodels.stats.proportion import proportion_confint

from evalwh.warehouse import connect
from tests.builders import fill_run_keys


def _warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass  # migrated
    return duckdb.connect(str(path))


def _cache(con: duckdb.DuckDBPyConnection, entries: list[tuple[str, str, str]]) -> None:
    """Response-cache rows (request_hash, provider, model), output = the hash."""
    for key, provider, model in entries:
        con.execute(
            "INSERT INTO response_cache (request_hash, provider, model, output, created_at) "
            "VALUES (?, ?, ?, ?, now())",
            [key, provider, model, f"out-{key}"],
        )


def _pair_votes(
    con: duckdb.DuckDBPyConnection,
    case: str,
    votes: list[str],
    lang: str,
    comparison: str = "c",
    eligible: bool = True,
) -> None:
    """One pair per repeat of `case` (eligible unless told), the judge's verdict in each."""
    for repeat, verdict in enumerate(votes):
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) VALUES "
            "('r', ?, ?, ?, 'v', 'a', 'v', 'b', 'j', 'jm', ?, false, ?, true, true, ?, now())",
            [comparison, case, repeat, verdict, eligible, json.dumps({"lang": lang})],
        )


def _pairwise_label(
    con: duckdb.DuckDBPyConnection, case: str, prefer: str, comparison: str = "c"
) -> None:
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES ('r', 'pairwise', ?, ?, ?)",
        [comparison, case, prefer],
    )


def _answer(con: duckdb.DuckDBPyConnection, run: str, case: str, repeat: int, ok: bool) -> None:
    """One answer of cell v x m with one criterion 'k' that passed as ``ok``."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
        "request_hash, attempts, score, passed, created_at) "
        "VALUES (?, 'v', 'm', ?, ?, '{\"t\": \"x\"}', false, 'h', 1, ?, ?, now())",
        [run, case, repeat, float(ok), ok],
    )
    fill_run_keys(con)
    con.execute(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required) VALUES (?, 'v', 'm', ?, ?, 'k', 'exact', ?, ?, 1, true)",
        [run, case, repeat, float(ok), ok],
    )
    fill_run_keys(con)


def _runs(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str, str | None]]) -> None:
    """runs rows (run_id, suite, started_at, git_commit)."""
    for run_id, suite, started, commit in rows:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version, git_commit) "
            "VALUES (?, ?, 'completed', 'h', 'd', 1, ?::TIMESTAMPTZ, 't', ?)",
            [run_id, suite, started, commit],
        )


def _costed_answer(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    case: str,
    metadata: dict[str, str],
    ok: bool,
    cost: float,
    cached: bool,
    error: str | None,
) -> None:
    """One answer of cell v x m with its cost, whether it came from the cache, and its error."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
        "request_hash, attempts, passed, cost_usd, error, created_at) "
        "VALUES (?, 'v', 'm', ?, 0, ?, ?, 'h', 1, ?, ?, ?, now())",
        [run_id, case, json.dumps(metadata), cached, ok, cost, error],
    )
    fill_run_keys(con)


def _timed_answer(
    con: duckdb.DuckDBPyConnection,
    model: str,
    case: str,
    *,
    latency: float,
    queued: float | None,
    cached: bool = False,
) -> None:
    """One passing answer of cell v x ``model`` in run r: its latency (its own time) and the
    time it waited to be sent (queued_ms; NULL: no request was made)."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
        "attempts, passed, score, latency_ms, queued_ms, created_at) "
        "VALUES ('r', 'v', ?, ?, 0, ?, 'h', 1, true, 1.0, ?, ?, now())",
        [model, case, cached, latency, queued],
    )
    fill_run_keys(con)


def _case(
    con: duckdb.DuckDBPyConnection,
    run: str,
    case: str,
    *,
    repeat: int = 0,
    metadata: dict[str, Any] | None = None,
    error: str | None = None,
    output: str | None = "out",
) -> None:
    """One answer (or failed request) of cell v x m."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, output, error, "
        "cached, request_hash, attempts, score, passed, created_at) "
        "VALUES (?, 'v', 'm', ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
        [run, case, repeat, None if metadata is None else json.dumps(metadata), output, error],
    )
    fill_run_keys(con)


def _score(
    con: duckdb.DuckDBPyConnection, run: str, case: str, criterion: str, ok: bool, repeat: int = 0
) -> None:
    con.execute(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required) VALUES (?, 'v', 'm', ?, ?, ?, 'exact', ?, ?, 1, true)",
        [run, case, repeat, criterion, float(ok), ok],
    )
    fill_run_keys(con)


def _judged(
    con: duckdb.DuckDBPyConnection,
    comparison: str,
    case: str,
    verdict: str,
    *,
    repeat: int = 0,
    eligible: bool = True,
    flipped: bool = False,
    baseline_ok: bool = True,
    candidate_ok: bool = True,
    cost: float | None = None,
) -> None:
    """One judged pair of run r: baseline v x a against candidate v x b."""
    con.execute(
        "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
        "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
        "flipped, eligible, baseline_ok, candidate_ok, cost_usd, created_at) VALUES "
        "('r', ?, ?, ?, 'v', 'a', 'v', 'b', 'j', 'jm', ?, ?, ?, ?, ?, ?, now())",
        [comparison, case, repeat, verdict, flipped, eligible, baseline_ok, candidate_ok, cost],
    )


_Z = 1.959963984540054  # the 97.5 % normal quantile every Wilson interval in sql/ uses


def _wilson(p: float, n: int) -> tuple[float, float]:
    centre, spread = p + _Z * _Z / (2 * n), _Z * math.sqrt(p * (1 - p) / n + _Z * _Z / (4 * n * n))
    return (centre - spread) / (1 + _Z * _Z / n), (centre + spread) / (1 + _Z * _Z / n)


def _row(con: duckdb.DuckDBPyConnection, run: str, **values: Any) -> None:
    """One cases row: run_id and the given columns over defaults of a passed, uncached answer."""
    row: dict[str, Any] = {
        "run_id": run,
        "variant": "v",
        "model": "m",
        "case_id": "c1",
        "repeat": 0,
        "cached": False,
        "request_hash": "h",
        "attempts": 1,
        "score": 1.0,
        "passed": True,
        "created_at": "2026-01-01 00:00:00+00",
        **values,
    }
    con.execute(
        f"INSERT INTO cases ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )
    fill_run_keys(con)


def statsmodels_wilson(count: float, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(count, n, alpha=0.05, method="wilson")
    return max(0.0, float(lo)), min(1.0, float(hi))


def case_rate_interval(means: list[float]) -> tuple[float | None, float | None]:
    """The 95% interval of a pass rate over cases with these pass fractions, as the named queries
    give it: Wilson when every fraction is 0 or 1, else the CLT interval mean -/+ t(0.975, n - 1)
    * sd / sqrt(n) with scipy's t quantile, clamped to [0, 1]; (None, None) for one fractional
    case."""
    from scipy.stats import t as student_t

    n, mean = len(means), sum(means) / len(means)
    if all(m in (0, 1) for m in means):
        lo, hi = _wilson(mean, n)
        return max(0.0, lo), min(1.0, hi)
    if n < 2:
        return None, None
    half = float(student_t.ppf(0.975, n - 1)) * statistics.stdev(means) / math.sqrt(n)
    return max(0.0, mean - half), min(1.0, mean + half)


# (run, case, tool, error, args_valid) of each tool call, in order per cell
TOOL_CALLS = [
    # c1: A searched once, fine; B searched with bad arguments, then fine: 1 new failure
    ("a", "c1", "search", None, True),
    ("b", "c1", "search", "invalid arguments for search: ...", False),
    ("b", "c1", "search", None, True),
    # c2: the same in both runs: search then fetch, fetch failing in the tool both times
    ("a", "c2", "search", None, True),
    ("a", "c2", "fetch", "fetch failed: boom", True),
    ("b", "c2", "search", None, True),
    ("b", "c2", "fetch", "fetch failed: boom", True),
    # c3: A fetched and failed; B called no tool: a fixed failure
    ("a", "c3", "fetch", "fetch failed: boom", True),
    # c4: only run B has it (not paired): never counted
    ("b", "c4", "search", "search failed: boom", True),
]


def _two_tool_runs(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """Runs a and b of cell v x m, cases c1..c3 in both and c4 in b only, with the tool calls
    of TOOL_CALLS (worked out in its comments); c1 passes in a only."""
    con = _warehouse(tmp_path)
    cells = {("a", "c1"), ("a", "c2"), ("a", "c3"), ("b", "c1"), ("b", "c2"), ("b", "c3")}
    cells.add(("b", "c4"))
    for run, case in sorted(cells):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, false, 'h', 1, ?, ?, now())",
            [run, case, float(case != "c1" or run == "a"), case != "c1" or run == "a"],
        )
    for seq, (run, case, tool, error, valid) in enumerate(TOOL_CALLS):
        for role in ("assistant", "tool"):  # an answer's row (never counted), then the call's
            con.execute(
                "INSERT INTO turns (run_id, variant, model, case_id, repeat, seq, turn, role, "
                "tool_name, error, args_valid, created_at) "
                "VALUES (?, 'v', 'm', ?, 0, ?, 0, ?, ?, ?, ?, now())",
                [run, case, 2 * seq + (role == "tool"), role]
                + ([tool, error, valid] if role == "tool" else [None, None, None]),
            )
    fill_run_keys(con)
    return con
