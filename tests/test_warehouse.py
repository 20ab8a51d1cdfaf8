"""Migrations, the query registry, run references, exports: real DuckDB files."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import evalwh
from evalwh.errors import RunNotFoundError, WarehouseError
from evalwh.warehouse import connect, queries
from evalwh.warehouse.resources import resource_dir
from evalwh.warehouse.store import Warehouse

# Released migrations never change: add a new numbered file instead. When a migration ships,
# record its hash in this lock file.
LOCK = Path(__file__).parent / "migrations.lock.json"


# Numbers handed to branches still in flight (0006, 0007): the only gaps allowed. Remove a
# number once its migration lands; migrate() applies a late one to warehouses already past it.
RESERVED = {6, 7}


def test_migrations_are_numbered_uniquely_and_contiguously() -> None:
    files = sorted(p.name for p in resource_dir("migrations").glob("*.sql"))
    numbers = [int(re.match(r"(\d{4})_", f).group(1)) for f in files]  # type: ignore[union-attr]
    expected = [n for n in range(1, max(numbers) + 1) if n not in RESERVED or n in numbers]
    assert numbers == expected, files


def test_released_migrations_are_unchanged() -> None:
    locked = json.loads(LOCK.read_text())
    for name, digest in locked.items():
        text = (resource_dir("migrations") / name).read_bytes()
        assert hashlib.sha256(text).hexdigest() == digest, (
            f"{name} was edited after release: add a new migration"
        )


def test_migrate_records_versions_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path) as con:
        versions = con.execute(
            "SELECT version, name FROM schema_migrations ORDER BY version"
        ).fetchall()
    with connect.write_connection(path) as con:
        again = con.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert versions[0] == (1, "0001_init") and again == (len(versions),)


def test_a_migration_numbered_below_the_applied_ones_is_applied_late(tmp_path, monkeypatch):
    """A reserved number (RESERVED) lands after a higher one reached warehouses: it is applied
    then, once, not skipped because the warehouse is already past it."""
    path = tmp_path / "w.duckdb"
    real = connect.migrations()
    late = next(m for m in real if m[0] == 5)  # 0005_attachments: one ALTER, nothing needs it
    monkeypatch.setattr(connect, "migrations", lambda: [m for m in real if m != late])
    with connect.write_connection(path) as con:
        before = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    monkeypatch.setattr(connect, "migrations", lambda: real)
    with connect.write_connection(path) as con:
        after = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    with connect.write_connection(path) as con:
        again = con.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert late[0] not in before and max(before) > late[0]
    assert [v for (v,) in after] == [m[0] for m in real] and again == (len(real),)


def test_refuses_a_warehouse_newer_than_the_code(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path) as con:
        con.execute("INSERT INTO schema_migrations VALUES (999, '0999_future', now())")
    with pytest.raises(WarehouseError, match="ahead of this evalwh"), connect.read_connection(path):
        pass


def test_every_query_has_a_header_and_declared_params() -> None:
    registry = queries.registry()
    assert {"summary", "case_list", "runs", "run_totals", "criteria", "gate", "resolve_run"} <= set(
        registry
    )
    for q in registry.values():
        assert q.title and q.description


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two quickstart runs (one labelled) in one warehouse, shared by the read tests."""
    import shutil

    from tests.conftest import QUICKSTART

    root = tmp_path_factory.mktemp("stored")
    shutil.copytree(QUICKSTART, root / "qs", ignore=shutil.ignore_patterns(".evalwh"))
    out = root / "out"
    a = evalwh.run_eval(root / "qs" / "eval.yaml", output_dir=out, label="first")
    b = evalwh.run_eval(root / "qs" / "eval.yaml", output_dir=out)
    return out, [a.run_id, b.run_id]


def test_summary_matches_a_hand_count(stored: tuple[Path, list[str]]) -> None:
    out, (run_a, _) = stored
    wh = Warehouse(out / "warehouse.duckdb")
    summary = {(r["variant"], r["model"]): r for r in wh.query("summary", run_id=run_a).to_pylist()}
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        counts = con.execute(
            "SELECT variant, model, count(*), sum(passed::int) FROM cases WHERE run_id = ? GROUP BY ALL",
            [run_a],
        ).fetchall()
    for variant, model, n, passed in counts:
        row = summary[(variant, model)]
        assert (row["n"], row["n_passed"]) == (n, passed)
        p = passed / n
        z = 1.959963984540054
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
        assert row["pass_rate_lo"] == pytest.approx(centre - half)
        assert row["pass_rate_hi"] == pytest.approx(centre + half)


def test_wilson_interval_against_a_reference_value() -> None:
    # Wilson 95% interval for 3 of 12, computed by hand from Wilson (1927): 0.08894 .. 0.53231.
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE cases AS SELECT 'r' AS run_id, 'v' AS variant, 'm' AS model, "
        "'c' || i AS case_id, i < 3 AS passed, "
        "NULL::VARCHAR AS error, false AS cached, 1.0 AS score, 10.0 AS latency_ms, 1 AS input_tokens, "
        "1 AS output_tokens, 0.0 AS cost_usd FROM range(12) t(i)"
    )
    row = queries.run_query(con, "summary", run_id="r").to_pylist()[0]
    assert row["pass_rate_lo"] == pytest.approx(0.08894, abs=1e-5)
    assert row["pass_rate_hi"] == pytest.approx(0.53231, abs=1e-5)


def test_run_references(stored: tuple[Path, list[str]]) -> None:
    out, (run_a, run_b) = stored
    wh = Warehouse(out / "warehouse.duckdb")
    assert wh.resolve(run_a) == run_a
    assert wh.resolve("latest") == run_b
    assert wh.resolve("first") == run_a
    assert wh.resolve(run_b[:-2]) == run_b
    with pytest.raises(RunNotFoundError, match="no run matches"):
        wh.resolve("zzz")
    with pytest.raises(RunNotFoundError, match="prefix of several runs"):
        wh.resolve("20")


def test_parquet_export_is_hive_partitioned_with_schema_version(
    stored: tuple[Path, list[str]],
) -> None:
    import polars as pl

    out, (run_a, run_b) = stored
    cases = pl.scan_parquet(
        str(out / "exports" / "*" / "cases.parquet"),
        hive_partitioning=True,
        try_parse_hive_dates=False,
    ).collect()
    assert set(cases["run_id"].unique()) == {run_a, run_b}
    assert cases.height == 96
    scores = pl.scan_parquet(
        str(out / "exports" / "*" / "scores.parquet"),
        hive_partitioning=True,
        try_parse_hive_dates=False,
    ).collect()
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        (n_scores,) = con.execute("SELECT count(*) FROM scores").fetchone()  # type: ignore[misc]
    assert scores.height == n_scores
    meta = pq.read_metadata(out / "exports" / f"run_id={run_a}" / "cases.parquet").metadata
    assert meta[b"schema_version"] == b"1"


def test_documented_views(stored: tuple[Path, list[str]]) -> None:
    out, (run_a, _) = stored
    wh = evalwh.open_warehouse(out / "warehouse.duckdb")
    cells = wh.sql(
        f"SELECT * FROM cell_summary WHERE run_id = '{run_a}' ORDER BY variant, model"
    ).to_pylist()
    summary = wh.summary(run_a).to_dicts()
    assert [(c["variant"], c["model"], c["n"], c["n_passed"]) for c in cells] == [
        (s["variant"], s["model"], s["n"], s["n_passed"]) for s in summary
    ]
    labelled = wh.sql("SELECT DISTINCT label FROM case_results WHERE label IS NOT NULL").to_pylist()
    assert labelled == [{"label": "first"}]


def test_reading_a_missing_warehouse_creates_nothing(tmp_path: Path) -> None:
    wh = evalwh.open_warehouse(tmp_path / "none" / "w.duckdb")
    assert wh.runs() == []
    assert not (tmp_path / "none").exists()


def test_a_shared_connection_serves_every_open_until_its_block_ends(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "w.duckdb"
    with connect.shared_connection(path):
        with connect.write_connection(path) as first, connect.read_connection(path) as second:
            assert first is second  # one connection, migrated once
            first.execute("CREATE TABLE t AS SELECT 1 AS x")
        with connect.shared_connection(path), connect.read_connection(path) as nested:
            assert nested is first  # a nested block uses the outer one's
        seen: list[object] = []

        def other_thread() -> None:  # a cursor of it: no second open of the file
            with connect.read_connection(path) as con:
                seen.append(con.execute("SELECT x FROM t").fetchone())
                seen.append(con is first)

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert seen == [(1,), False]
        # the block's end waits for a cursor still in use in another thread
        holding, release = threading.Event(), threading.Event()

        def slow_reader() -> None:
            with connect.read_connection(path) as con:
                holding.set()
                release.wait(5)
                seen.append(con.execute("SELECT x + 1 FROM t").fetchone())

        late = threading.Thread(target=slow_reader)
        late.start()
        holding.wait(5)
        threading.Timer(0.05, release.set).start()  # fires while the block is ending
    late.join()
    assert seen[-1] == (2,)
    assert not connect._SHARED
    with connect.read_connection(path) as con:  # closed: the file opens read-only again
        assert con is not first and con.execute("SELECT x FROM t").fetchone() == (1,)


def test_a_run_opens_the_warehouse_four_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Create the run, one flush, mark it exporting, then one shared connection for the export,
    the final status and the summary, error and threshold queries (they took six)."""
    config = tmp_path / "eval.yaml"
    config.write_text(
        "name: t\nmodels:\n  - {id: m, provider: mock}\n"
        "variants:\n  - id: v\n    messages: [{role: user, content: 'Q {{ q }}'}]\n"
        "cases:\n  - {id: c1, vars: {q: one}, expected: one}\n"
        "scorecard:\n  - {name: ok, type: contains}\n"
        "thresholds: {min_pass_rate: 0.5}\n",
        encoding="utf-8",
    )
    opened: list[bool] = []
    real = duckdb.connect

    def counting(*args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
        opened.append(bool(kwargs.get("read_only")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(connect.duckdb, "connect", counting)
    result = evalwh.run_eval(config, output_dir=tmp_path / "out")
    assert result.status == "completed" and result.exports and result.gate
    assert opened == [False, False, False, False]
    opened.clear()
    again = evalwh.run_eval(config, output_dir=tmp_path / "out")  # + the cache lookup
    assert again.stats["cache_hits"] == 1 and opened == [True, False, False, False, False]


# --- flat memory: the unkeyed response cache, the streamed export, bounded post-run queries --


def _one_run(tmp_path: Path, n: int = 5) -> tuple[Path, str]:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        "models: [{id: m, provider: mock}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases: [" + ", ".join(f"{{id: c{i}, vars: {{q: x{i}}}}}" for i in range(n)) + "]\n"
        "scorecard: [{name: has, type: contains, value: x}]\n"
        "settings: {cache: false}\n",
        encoding="utf-8",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    return tmp_path / "out" / "warehouse.duckdb", result.run_id


def _cached(db: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT request_hash, output FROM response_cache "
            "WHERE request_hash IN ('h1', 'h2') ORDER BY ALL"
        ).fetchall()


def _cache_keys(db: Path) -> tuple[int, ...] | None:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'response_cache' "
            "AND constraint_type = 'PRIMARY KEY'"
        ).fetchone()


@pytest.mark.parametrize("where", ["warehouse", "cache file"])
def test_the_response_cache_keeps_one_row_per_hash_without_a_key(
    tmp_path: Path, where: str
) -> None:
    """Migration 0009 dropped the key (DuckDB rewrote its whole index on every flush); the
    writer keeps the hash unique, in the warehouse and in a separate cache file alike:
    duplicates in a batch collapse, an answer already stored wins, a refresh replaces it."""
    from datetime import datetime, timezone

    from evalwh.warehouse.writer import RunWriter

    db, run_id = _one_run(tmp_path)
    cache = db if where == "warehouse" else tmp_path / "cache" / "cache.duckdb"
    kwargs = {} if where == "warehouse" else {"cache_path": cache}
    now = datetime.now(timezone.utc)

    def answer(writer: RunWriter, key: str, output: str) -> None:
        writer.add_cache([key, "mock", "m", output, 1, 1, 1.0, now, run_id])

    writer = RunWriter(db, run_id, **kwargs)  # type: ignore[arg-type]
    answer(writer, "h1", "first")
    answer(writer, "h1", "first")  # the same request twice in one batch
    answer(writer, "h2", "other")
    writer.flush(writer.take_batch())
    answer(writer, "h1", "second")  # another run fetched it too: the stored one stays
    writer.flush(writer.take_batch())
    assert _cached(cache) == [("h1", "first"), ("h2", "other")]
    refresh = RunWriter(db, run_id, refresh_cache=True, **kwargs)  # type: ignore[arg-type]
    answer(refresh, "h1", "fresh")
    answer(refresh, "h1", "fresh")
    refresh.flush(refresh.take_batch())
    assert _cached(cache) == [("h1", "fresh"), ("h2", "other")]
    assert _cache_keys(cache) == (0,)


@pytest.mark.parametrize("where", ["warehouse", "cache file"])
def test_the_pairwise_judges_answers_are_cached_and_refreshed_like_the_cells_answers(
    tmp_path: Path, where: str
) -> None:
    """The pairwise judge's replies reach the response cache with the verdicts: a stored
    answer wins; under --no-cache (refresh) the fresh answer replaces it, as for the cells
    (it once stayed the old one, so the next cached run reused the answer the user had asked
    to refresh)."""
    from datetime import datetime, timezone

    from evalwh.warehouse.writer import RunWriter

    db, run_id = _one_run(tmp_path, n=1)
    cache = db if where == "warehouse" else tmp_path / "cache" / "cache.duckdb"
    kwargs = {} if where == "warehouse" else {"cache_path": cache}
    now = datetime.now(timezone.utc)

    def judge_pairs(refresh: bool, output: str) -> None:
        writer = RunWriter(db, run_id, refresh_cache=refresh, **kwargs)  # type: ignore[arg-type]
        writer.add_cache(["h1", "mock", "judge", output, 1, 1, 1.0, now, run_id])
        writer.write_pairs([], ["a-vs-b"])

    judge_pairs(False, "first")
    assert _cached(cache) == [("h1", "first")]
    judge_pairs(False, "second")  # another run asked the same: the stored answer stays
    assert _cached(cache) == [("h1", "first")]
    judge_pairs(True, "fresh")
    assert _cached(cache) == [("h1", "fresh")]


def test_migration_0009_keeps_the_cached_answers_and_drops_the_key(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(connect.SCHEMA_MIGRATIONS_DDL)
        for version, name, sql in connect.migrations():
            if version < 9:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
        con.execute(
            "INSERT INTO response_cache VALUES ('h1', 'mock', 'm', 'kept', 3, 4, 5.5, now(), 'r1')"
        )
    assert _cache_keys(db) == (1,)
    assert connect.migrate_file(db) == (8, connect.latest_version())
    assert _cache_keys(db) == (0,)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT request_hash, provider, model, output, input_tokens, output_tokens, "
            "latency_ms, run_id FROM response_cache"
        ).fetchall()
    assert rows == [("h1", "mock", "m", "kept", 3, 4, 5.5, "r1")]


def test_post_run_queries_run_within_their_limit_and_again_within_the_warehouse_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's own queries after its cells start within POST_RUN_MEMORY_LIMIT (they group by
    case: within 2 GB they grew with the run); one that cannot fit runs again within the
    warehouse's limit instead of failing, and the limit is restored after each."""
    import evalwh.warehouse.store as store

    db, run_id = _one_run(tmp_path)
    limits: list[str] = []
    real = store.run_query

    def watched(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> object:
        (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",)
        limits.append(limit)
        if limit == "976.5 KiB":  # 1 MB: held to it, this query cannot fit
            raise duckdb.OutOfMemoryException("held to 1 MB")
        return real(con, name, **params)

    monkeypatch.setattr(store, "run_query", watched)
    assert Warehouse(db, memory_limit="100MB").query("run_totals", run_id=run_id).num_rows == 1
    assert Warehouse(db).query("run_totals", run_id=run_id).num_rows == 1
    assert limits[0] == "95.3 MiB" and limits[1] != "95.3 MiB"  # 100 MB = 95.3 MiB
    whole = limits[1]
    limits.clear()
    bounded = Warehouse(db, memory_limit="1MB")
    with connect.shared_connection(db):  # as a run's closing steps read it
        assert bounded.query("run_totals", run_id=run_id).num_rows == 1
        assert Warehouse(db).query("run_totals", run_id=run_id).num_rows == 1
    assert limits == ["976.5 KiB", whole, whole]  # refused, again within the whole; restored


def test_the_export_streams_in_bounded_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalwh.warehouse.store as store

    monkeypatch.setattr(store, "EXPORT_ROW_GROUP", 2048)  # DuckDB's smallest: one vector
    _, run_id = _one_run(tmp_path, 5000)
    folder = tmp_path / "out" / "exports" / f"run_id={run_id}"
    cases = pq.ParquetFile(folder / "cases.parquet")
    for file in (cases, pq.ParquetFile(folder / "scores.parquet")):
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
        # DuckDB closes a group once it holds the limit, so a group may overshoot by the last
        # chunk it took (under one vector, 2,048 rows); without the limit: one group
        assert len(sizes) >= 2 and max(sizes) < 2 * 2048, sizes
    assert cases.metadata.num_rows == 5000


def test_the_engine_waits_for_the_writer_once_a_batch_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays bounded by one batch waiting plus the one being written: while a slow
    flush runs, the engine stops answering once `batch_size` cases are pending (a million-case
    run peaked at 364 MB when four batches could wait, 282 MB with one)."""
    from evalwh.warehouse import writer as w

    monkeypatch.setenv(w.FLUSH_PAUSE_ENV, "0.05")  # every flush holds the file 50 ms
    seen: list[int] = []
    real = w.RunWriter.add_case

    def add_case(self: w.RunWriter, row: object) -> None:
        real(self, row)  # type: ignore[arg-type]
        seen.append(self.pending)

    monkeypatch.setattr(w.RunWriter, "add_case", add_case)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        "models: [{id: m, provider: mock}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases: [" + ", ".join(f"{{id: c{i}, vars: {{q: x{i}}}}}" for i in range(300)) + "]\n"
        "scorecard: [{name: has, type: contains, value: x}]\n"
        "settings: {cache: false, batch_size: 10, concurrency: 4}\n",
        encoding="utf-8",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n"] == 300
    # a worker checks after storing its answer, so the others' answers in flight may land too
    assert max(seen) <= 10 + 4, max(seen)
    assert max(seen) >= 10  # the engine did race ahead of the slow writer up to the bound


def test_a_second_connection_from_the_thread_holding_the_write_one_is_refused_not_awaited(
    tmp_path: Path,
) -> None:
    """A write connection attaches the file, which one connection of a process may do at a
    time: a second open from the same thread would wait for itself forever (wait_s=None)."""
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        for read_only in (True, False):
            with pytest.raises(WarehouseError, match="holds a write connection"):
                connect.open_connection(path, read_only=read_only, wait_s=None)
    with connect.read_connection(path, wait_s=None) as con:  # released with the block
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
