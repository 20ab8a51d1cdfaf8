"""A synthetic warehouse for the query benchmarks, built in SQL from range() (no engine run).

Two sizes: :data:`DEFAULT` (100 runs x 10,000 case rows x 10 criteria = 10 million score rows,
the `queries`, `viewer` and `startup` groups) and :data:`SCALE` (1,000 runs x 10,000 case rows
x 10 criteria = 100 million score rows, a year of CI history: the `warehouse` group); both add
two runs of 100,000 case rows (1 million score rows each) that pair up for compare. Each run
has two variants and two models (four cells) and ten criteria; case metadata has three
slicing keys (topic, difficulty, lang); one criterion is an llm-judge (judge_model,
raw_score); the second big run has pairwise verdicts and human labels (pairwise and
pointwise) for calibration. Runs start 8 h 45 min apart (1,000 runs span a year).

Rows are generated set-wise, a block of runs per INSERT, in run order (as real runs append
them, so the zone maps on run_key see what they see in use), with each row's run_key derived
by the same macro evalwh's writer uses (sql/macros/run_key.sql). The schema is evalwh's own:
the file is created through :func:`evalwh.warehouse.connect.write_connection`, so the
migrations make every table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

VERSION = "synth-v2"  # bump when the layout changes: the cached file is rebuilt
CRITERIA = (
    ("correct", "python"),
    ("exact", "exact"),
    ("mentions", "contains"),
    ("no-apology", "not-contains"),
    ("short", "regex"),
    ("json", "json-valid"),
    ("schema", "json-schema"),
    ("bleu", "bleu"),
    ("rouge", "rouge-l"),
    ("helpful", "llm-judge"),
)
RUN_SPACING_MIN = 525  # minutes between two runs' starts: 1,000 runs span 364 days
BLOCK_ROWS = 500_000  # case rows per INSERT (x 10 score rows)
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Layout:
    runs: int = 100
    cases_per_run: int = 10_000
    big_runs: int = 2
    big_cases: int = 100_000
    pairs: int = 20_000  # pairwise verdicts in the last big run
    pair_labels: int = 500
    point_labels: int = 2_000

    @property
    def key(self) -> str:
        return f"{VERSION}-{self.runs}x{self.cases_per_run}-{self.big_runs}x{self.big_cases}"

    @property
    def score_rows(self) -> int:
        return (self.runs * self.cases_per_run + self.big_runs * self.big_cases) * len(CRITERIA)


DEFAULT = Layout()
SCALE = Layout(runs=1_000)
QUICK = Layout(runs=3, cases_per_run=1_000, big_runs=2, big_cases=2_000, pairs=500)


def run_id(index: int) -> str:
    started = EPOCH + timedelta(minutes=RUN_SPACING_MIN * index)
    return f"{started:%Y-%m-%dT%H%M%S}-{index:04x}"


def big_run_ids(layout: Layout) -> list[str]:
    return [run_id(layout.runs + k) for k in range(layout.big_runs)]


# The runs of a block [lo, hi): their index, run_id (from the $ids list) and case rows.
_BLOCK = """
    blk AS (
        SELECT idx, $ids[idx + 1] AS rid,
               CASE WHEN idx < $runs THEN $small ELSE $big END AS n
        FROM range($lo, $hi) t(idx)
    ),
    rows AS (SELECT idx, rid, unnest(range(n)) AS i FROM blk)
"""  # unnest keeps the order of its lists: the rows come out in run order, unsorted


# The cell of case row i of run idx (half the rows per variant), shared by its case and score rows.
_CELL = """
            rid AS run_id,
            run_key(rid) AS run_key,
            CASE WHEN i % 2 = 0 THEN 'terse' ELSE 'reasoned' END AS variant,
            CASE WHEN (i // 2) % 4 = 0 THEN 'mock-small' ELSE 'mock-large' END AS model,
            'case-' || lpad((i // 2)::VARCHAR, 7, '0') AS case_id,
            0 AS repeat"""


def _insert_runs(con, layout: Layout, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    con.execute(
        """
        INSERT INTO runs (run_id, label, suite, status, config_path, config_hash, dataset_hash,
                          git_commit, config_snapshot, filters, n_planned, started_at,
                          finished_at, heartbeat_at, host, pid, totals, evalwh_version)
        SELECT $ids[idx + 1], 'run-' || idx, 'synthetic', 'completed', 'eval.yaml', 'cfg', 'data',
               NULL, '{"name": "synthetic", "thresholds": {"min_pass_rate": 0.5}}',
               '{"repeat": 1}', CASE WHEN idx < $runs THEN $small ELSE $big END,
               TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($spacing * idx),
               TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($spacing * idx) + INTERVAL 50 SECOND,
               TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($spacing * idx) + INTERVAL 50 SECOND,
               'bench', 1, '{"requests": 0}', 'synthetic'
        FROM range($total) t(idx)
        ORDER BY idx
        """,
        {
            "ids": ids,
            "runs": layout.runs,
            "small": layout.cases_per_run,
            "big": layout.big_cases,
            "spacing": RUN_SPACING_MIN,
            "total": len(ids),
        },
    )


def _insert_block(con, layout: Layout, ids: list[str], lo: int, hi: int) -> None:  # type: ignore[no-untyped-def]
    """The case and score rows of runs [lo, hi), in run order. Half the rows per variant; a
    run-dependent pass probability so runs differ."""
    params = {
        "ids": ids,
        "lo": lo,
        "hi": hi,
        "runs": layout.runs,
        "small": layout.cases_per_run,
        "big": layout.big_cases,
        "spacing": RUN_SPACING_MIN,
    }
    con.execute(
        f"""
        INSERT INTO cases BY NAME  -- by name: later migrations add columns
        WITH {_BLOCK}
        SELECT
            {_CELL},
            ('{{"question": "What is ' || (i // 2) || ' plus ' || (i // 2) || '?"}}')::JSON AS vars,
            ('"' || (i // 2) * 2 || '"')::JSON AS expected,
            ('{{"topic": "' || ['geography', 'math', 'history', 'science', 'art'][1 + (i // 2) % 5]
             || '", "difficulty": "' || ['easy', 'medium', 'hard'][1 + (i // 2) % 3]
             || '", "lang": "' || ['en', 'fr', 'de', 'es', 'ja', 'pt', 'it'][1 + (i // 2) % 7]
             || '"}}')::JSON AS metadata,
            NULL AS human_label,
            ('[{{"role": "system", "content": [{{"type": "text", "text": "Answer briefly."}}]}}, '
             || '{{"role": "user", "content": [{{"type": "text", "text": "What is ' || (i // 2)
             || ' plus ' || (i // 2) || '?"}}]}}]')::JSON AS messages,
            CASE WHEN err THEN NULL ELSE 'Answer: ' || ((i // 2) * 2 + (u < 0.2)::INTEGER) END AS output,
            CASE WHEN err THEN 'HTTP 529: overloaded' END AS error,
            CASE WHEN err THEN 'server' END AS error_kind,
            CASE WHEN err THEN NULL ELSE 20 + 200 * u END AS latency_ms,
            CASE WHEN err THEN NULL ELSE 24 END AS input_tokens,
            CASE WHEN err THEN NULL ELSE 6 + (i % 7) END AS output_tokens,
            CASE WHEN err THEN NULL ELSE 0.00002 + u / 10000 END AS cost_usd,
            false AS cached,
            md5(rid || i) || md5(i || rid) AS request_hash,
            1 AS attempts,
            CASE WHEN err THEN 0.0 ELSE 1.0 - u END AS score,
            NOT err AND u >= 0.2 AS passed,
            TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($spacing * idx) + to_milliseconds(i)
                AS created_at
        FROM (
            SELECT idx, rid, i,
                   (hash(i, idx) % 1000) / 1000.0 AS u,
                   hash(i, idx, 'e') % 50 = 0 AS err
            FROM rows
        )
        """,
        params,
    )
    con.execute(
        f"""
        INSERT INTO scores BY NAME
        WITH {_BLOCK},
        -- ten score rows per case row, generated in order (row j: case row j // 10, criterion
        -- j % 10), so that the rows land in run order with no sort
        score_rows AS (
            SELECT idx, rid, j // {len(CRITERIA)} AS i, $names[1 + j % {len(CRITERIA)}] AS name,
                   $scorers[1 + j % {len(CRITERIA)}] AS scorer
            FROM (SELECT idx, rid, unnest(range(n * {len(CRITERIA)})) AS j FROM blk)
        )
        SELECT
            {_CELL},
            name AS criterion, scorer,
            CASE WHEN scorer = 'llm-judge' THEN (1 + hash(i // 2, idx) % 5 - 1) / 4.0
                 ELSE (hash(i // 2, name, idx) % 100) / 100.0 END AS score,
            (hash(i // 2, name, idx) % 100) >= 20 AS passed,
            1.0 AS weight,
            name IN ('correct', 'exact') AS required,
            CASE WHEN scorer = 'contains' THEN '{{"found": ["2"], "missing": []}}'
                 WHEN scorer = 'regex' THEN '{{"match": "Answer: 2"}}' END::JSON AS details,
            CASE WHEN scorer = 'llm-judge' THEN 'The answer is correct and brief.' END AS rationale,
            NULL AS error,
            CASE WHEN scorer = 'llm-judge' THEN 'judge-model' END AS judge_model,
            CASE WHEN scorer = 'llm-judge' THEN 1 + hash(i // 2, idx) % 5 END AS raw_score,
            CASE WHEN scorer = 'llm-judge' THEN 0.00001 END AS cost_usd
        FROM score_rows
        """,
        {
            **{k: v for k, v in params.items() if k != "spacing"},
            "names": [n for n, _ in CRITERIA],
            "scorers": [s for _, s in CRITERIA],
        },
    )


def _insert_judging(con, rid: str, layout: Layout) -> None:  # type: ignore[no-untyped-def]
    con.execute(
        """
        INSERT INTO pairs
        SELECT $rid, 'terse-vs-reasoned', 'case-' || lpad(i::VARCHAR, 7, '0'), 0,
               'terse', 'mock-large', 'reasoned', 'mock-large', 'judge', 'judge-model',
               v_ab, v_ba, CASE WHEN v_ab = v_ba THEN v_ab ELSE 'tie' END, v_ab <> v_ba,
               i % 10 <> 0, CASE WHEN i % 10 = 0 THEN 'baseline failed a required criterion' END,
               true, true, 'A is better.', 'B is better.', NULL,
               ('{"topic": "' || ['geography', 'math', 'history', 'science', 'art'][1 + i % 5]
                || '", "difficulty": "' || ['easy', 'medium', 'hard'][1 + i % 3] || '"}')::JSON,
               0.00002, TIMESTAMPTZ '2026-02-01 00:00:00+00'
        FROM (
            SELECT range AS i,
                   ['baseline', 'candidate', 'tie'][(1 + hash(range, 'ab') % 3)::BIGINT] AS v_ab,
                   ['baseline', 'candidate', 'tie'][(1 + hash(range, 'ba') % 3)::BIGINT] AS v_ba
            FROM range($n)
        )
        """,
        {"rid": rid, "n": layout.pairs},
    )
    con.execute(
        """
        INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note)
        SELECT $rid, 'pairwise', 'terse-vs-reasoned', 'case-' || lpad(i::VARCHAR, 7, '0'),
               ['baseline', 'candidate', 'tie'][(1 + hash(i, 'label') % 3)::BIGINT], NULL, NULL
        FROM range($n) t(i)
        """,
        {"rid": rid, "n": layout.pair_labels},
    )
    con.execute(
        """
        INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note)
        SELECT $rid, 'pointwise', NULL, 'case-' || lpad(i::VARCHAR, 7, '0'), NULL,
               CASE WHEN i % 2 = 0 THEN (hash(i, 'p') % 2 = 0)::VARCHAR
                    ELSE (1 + hash(i, 'q') % 5)::VARCHAR END::JSON, NULL
        FROM range($n) t(i)
        """,
        {"rid": rid, "n": layout.point_labels},
    )


def blocks(layout: Layout) -> list[tuple[int, int]]:
    """The runs [lo, hi) of each INSERT: about BLOCK_ROWS case rows, a big run alone."""
    out: list[tuple[int, int]] = []
    per = max(1, BLOCK_ROWS // layout.cases_per_run)
    for lo in range(0, layout.runs, per):
        out.append((lo, min(layout.runs, lo + per)))
    out += [(layout.runs + k, layout.runs + k + 1) for k in range(layout.big_runs)]
    return out


def build(path: Path, layout: Layout, *, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Create the warehouse at ``path`` (replacing a partial one) and return it."""
    from evalwh.warehouse.connect import write_connection
    from evalwh.warehouse.queries import macros

    tmp = path.with_suffix(".building")
    for stale in (tmp, Path(str(tmp) + ".wal")):
        stale.unlink(missing_ok=True)
    started = time.perf_counter()
    ids = [run_id(i) for i in range(layout.runs + layout.big_runs)]
    with write_connection(tmp) as con:
        con.execute("SET enable_progress_bar = false")
        con.execute(macros())
        _insert_runs(con, layout, ids)
        for lo, hi in blocks(layout):
            con.execute("BEGIN TRANSACTION")
            _insert_block(con, layout, ids, lo, hi)
            con.execute("COMMIT")
            log(f"  synthetic warehouse: {hi} runs ({time.perf_counter() - started:.0f} s)")
        _insert_judging(con, big_run_ids(layout)[-1], layout)
        con.execute("CHECKPOINT")
    tmp.rename(path)
    log(f"  synthetic warehouse built in {time.perf_counter() - started:.0f} s: {path}")
    return path


def ensure(folder: Path, layout: Layout, *, log=print) -> Path:  # type: ignore[no-untyped-def]
    """The cached synthetic warehouse for ``layout`` (built on first use)."""
    path = folder / f"{layout.key}.duckdb"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        size = layout.key.removeprefix(f"{VERSION}-")
        for old in folder.glob(f"synth-*-{size}.duckdb"):  # an older version of this layout
            old.unlink()
        build(path, layout, log=log)
    else:  # a warehouse cached by an older evalwh: upgrade it as `evalwh migrate` would
        from evalwh.warehouse.connect import migrate_file

        migrate_file(path)
    return path
