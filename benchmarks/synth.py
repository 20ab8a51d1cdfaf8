"""A synthetic warehouse for the query benchmarks, built in SQL from range() (no engine run).

Layout (the full size): 100 runs x 10,000 case rows x 10 criteria = 10 million score rows,
plus two runs of 100,000 case rows (1 million score rows each) that pair up for compare.
Rows are inserted run by run, as real runs append them. Case metadata has three slicing keys
(topic, difficulty, lang); one criterion is an llm-judge (judge_model, raw_score); the second
big run has pairwise verdicts and human labels (pairwise and pointwise) for calibration.

The schema is evalwh's own: the file is created through
:func:`evalwh.warehouse.connect.write_connection`, so the migrations make every table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

VERSION = "synth-v1"  # bump when the layout changes: the cached file is rebuilt
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


QUICK = Layout(runs=3, cases_per_run=1_000, big_runs=2, big_cases=2_000, pairs=500)


def run_id(index: int) -> str:
    day, rest = divmod(index, 24 * 60)
    return f"2026-01-{1 + day:02d}T{rest // 60:02d}{rest % 60:02d}00-{index:04x}"


def big_run_ids(layout: Layout) -> list[str]:
    return [run_id(layout.runs + k) for k in range(layout.big_runs)]


def _insert_run(con, index: int, n: int) -> None:  # type: ignore[no-untyped-def]
    rid = run_id(index)
    con.execute(
        """
        INSERT INTO runs (run_id, label, suite, status, config_path, config_hash, dataset_hash,
                          git_commit, config_snapshot, filters, n_planned, started_at,
                          finished_at, heartbeat_at, host, pid, totals, evalwh_version)
        VALUES ($rid, $label, 'synthetic', 'completed', 'eval.yaml', 'cfg', 'data', NULL,
                '{"name": "synthetic", "thresholds": {"min_pass_rate": 0.5}}', '{"repeat": 1}',
                $n, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($i::BIGINT),
                TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($i::BIGINT) + INTERVAL 50 SECOND,
                TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($i::BIGINT) + INTERVAL 50 SECOND,
                'bench', 1, '{"requests": 0}', 'synthetic')
        """,
        {"rid": rid, "label": f"run-{index}", "n": n, "i": index},
    )
    # Half the rows per variant; a run-dependent pass probability so runs differ.
    con.execute(
        """
        INSERT INTO cases
        SELECT
            $rid AS run_id,
            CASE WHEN i % 2 = 0 THEN 'terse' ELSE 'reasoned' END AS variant,
            CASE WHEN (i // 2) % 4 = 0 THEN 'mock-small' ELSE 'mock-large' END AS model,
            'case-' || lpad((i // 2)::VARCHAR, 7, '0') AS case_id,
            0 AS repeat,
            ('{"question": "What is ' || (i // 2) || ' plus ' || (i // 2) || '?"}')::JSON AS vars,
            ('"' || (i // 2) * 2 || '"')::JSON AS expected,
            ('{"topic": "' || ['geography', 'math', 'history', 'science', 'art'][1 + (i // 2) % 5]
             || '", "difficulty": "' || ['easy', 'medium', 'hard'][1 + (i // 2) % 3]
             || '", "lang": "' || ['en', 'fr', 'de', 'es', 'ja', 'pt', 'it'][1 + (i // 2) % 7]
             || '"}')::JSON AS metadata,
            NULL AS human_label,
            ('[{"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]}, '
             || '{"role": "user", "content": [{"type": "text", "text": "What is ' || (i // 2)
             || ' plus ' || (i // 2) || '?"}]}]')::JSON AS messages,
            CASE WHEN err THEN NULL ELSE 'Answer: ' || ((i // 2) * 2 + (u < 0.2)::INTEGER) END AS output,
            CASE WHEN err THEN 'HTTP 529: overloaded' END AS error,
            CASE WHEN err THEN 'server' END AS error_kind,
            CASE WHEN err THEN NULL ELSE 20 + 200 * u END AS latency_ms,
            CASE WHEN err THEN NULL ELSE 24 END AS input_tokens,
            CASE WHEN err THEN NULL ELSE 6 + (i % 7) END AS output_tokens,
            CASE WHEN err THEN NULL ELSE 0.00002 + u / 10000 END AS cost_usd,
            false AS cached,
            md5($rid || i) || md5(i || $rid) AS request_hash,
            1 AS attempts,
            CASE WHEN err THEN 0.0 ELSE 1.0 - u END AS score,
            NOT err AND u >= 0.2 AS passed,
            TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_minutes($idx::BIGINT) + to_milliseconds(i) AS created_at,
            NULL AS judge_cost_usd, NULL AS check_passed, NULL AS check_exit_code,
            NULL AS check_output, NULL AS check_error, NULL AS attachments
        FROM (
            SELECT range AS i,
                   (hash(range, $idx) % 1000) / 1000.0 AS u,
                   hash(range, $idx, 'e') % 50 = 0 AS err
            FROM range($n)
        )
        """,
        {"rid": rid, "n": n, "idx": index},
    )
    con.execute(
        """
        INSERT INTO scores
        SELECT
            c.run_id, c.variant, c.model, c.case_id, c.repeat,
            k.name AS criterion, k.scorer,
            CASE WHEN k.scorer = 'llm-judge' THEN (1 + hash(c.case_id, $idx) % 5 - 1) / 4.0
                 ELSE (hash(c.case_id, k.name, $idx) % 100) / 100.0 END AS score,
            (hash(c.case_id, k.name, $idx) % 100) >= 20 AS passed,
            1.0 AS weight,
            k.name IN ('correct', 'exact') AS required,
            CASE WHEN k.scorer = 'contains' THEN '{"found": ["2"], "missing": []}'
                 WHEN k.scorer = 'regex' THEN '{"match": "Answer: 2"}' END::JSON AS details,
            CASE WHEN k.scorer = 'llm-judge' THEN 'The answer is correct and brief.' END AS rationale,
            NULL AS error,
            CASE WHEN k.scorer = 'llm-judge' THEN 'judge-model' END AS judge_model,
            CASE WHEN k.scorer = 'llm-judge' THEN 1 + hash(c.case_id, $idx) % 5 END AS raw_score,
            CASE WHEN k.scorer = 'llm-judge' THEN 0.00001 END AS cost_usd
        FROM cases c
        CROSS JOIN (SELECT unnest($names) AS name, unnest($scorers) AS scorer) k
        WHERE c.run_id = $rid
        """,
        {
            "rid": rid,
            "idx": index,
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
        INSERT INTO labels
        SELECT $rid, 'pairwise', 'terse-vs-reasoned', 'case-' || lpad(i::VARCHAR, 7, '0'),
               ['baseline', 'candidate', 'tie'][(1 + hash(i, 'label') % 3)::BIGINT], NULL, NULL
        FROM range($n) t(i)
        """,
        {"rid": rid, "n": layout.pair_labels},
    )
    con.execute(
        """
        INSERT INTO labels
        SELECT $rid, 'pointwise', NULL, 'case-' || lpad(i::VARCHAR, 7, '0'), NULL,
               CASE WHEN i % 2 = 0 THEN (hash(i, 'p') % 2 = 0)::VARCHAR
                    ELSE (1 + hash(i, 'q') % 5)::VARCHAR END::JSON, NULL
        FROM range($n) t(i)
        """,
        {"rid": rid, "n": layout.point_labels},
    )


def build(path: Path, layout: Layout, *, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Create the warehouse at ``path`` (replacing a partial one) and return it."""
    from evalwh.warehouse.connect import write_connection

    tmp = path.with_suffix(".building")
    for stale in (tmp, Path(str(tmp) + ".wal")):
        stale.unlink(missing_ok=True)
    started = time.perf_counter()
    with write_connection(tmp) as con:
        con.execute("SET enable_progress_bar = false")
        for index in range(layout.runs + layout.big_runs):
            n = layout.cases_per_run if index < layout.runs else layout.big_cases
            con.execute("BEGIN TRANSACTION")
            _insert_run(con, index, n)
            con.execute("COMMIT")
            if index % 20 == 19:
                log(
                    f"  synthetic warehouse: {index + 1} runs ({time.perf_counter() - started:.0f} s)"
                )
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
        for old in folder.glob("synth-*.duckdb"):
            if old != path and layout != QUICK:
                old.unlink()
        build(path, layout, log=log)
    return path
