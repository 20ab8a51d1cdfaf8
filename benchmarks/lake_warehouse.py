"""The 100M-score-row warehouse on a lake (``--only lake --lake-parts warehouse``): the
`warehouse` group's questions asked of a DuckLake copy of its synthetic warehouse.

**The copy** is made once and cached under ``<results>/lake-warehouse/<layout>/``: the
catalog as a saved PostgreSQL data folder (``pgdata/``, a few MB) and the data as Parquet in
a local folder (``data/``, DuckLake's ``DATA_PATH``), with ``copy.json`` saying how it was
made, how long it took and its size. Every later run starts PostgreSQL on a copy of
``pgdata/`` and reads ``data/`` in place; nothing is rebuilt. A local folder, not moto, holds
the data because moto keeps objects in the memory of its own process (the lake group's writer
figures use it): a 100M-row copy would be rebuilt by every benchmark run, and every read of a
Parquet file would go through moto's Python HTTP server, which measures moto. The folder is
DuckLake's own second storage (``lake.data_path`` may be a shared folder, docs/scale-out.md):
the same catalog, file pruning and Parquet reader, without the HTTP requests. What real S3
adds per query is its request latency times the files a query opens (the profiles count
them).

The copy is ``evalwh lake push`` (``evalwh.api.lake.push``): one transaction, every run's
rows by ``INSERT ... SELECT`` from the file attached read-only, which keeps the file's row
order (run order: synth.py writes runs in order), so DuckLake's per-file and Parquet's
per-row-group ``run_key`` min/max stay ordered. ``copy.json`` records each table's files and
whether their ``run_key`` ranges overlap.

**The questions** are warehouse_figures' (imported, not copied): each timed through evalwh
(``Warehouse`` on the lake target: the process attaches the lake once, then a cursor per
query) and as bare DuckDB (the statements evalwh sent, replayed on one connection with the
lake attached), median of ``repeats``, warm; ``EXPLAIN ANALYZE`` of every bare statement under
``profiles/lake-warehouse-*.txt``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "evalwh_warehouse"  # the catalog's PostgreSQL database in the saved cluster


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _use(pg: Any, data: Path, config_dir: Path) -> Any:
    """Point this process's evalwh at the lake (user config + credentials); its target."""
    from evalwh.api.run import settings_for
    from tests.fakes.lake import PG_PASSWORD, PG_USER

    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.yaml").write_text(
        f'warehouse: "ducklake:postgres:dbname={DATABASE} host=127.0.0.1 port={pg.port} '
        f'user={PG_USER}"\nlake:\n  data_path: {data.as_posix()}/\n',
        encoding="utf-8",
    )
    for key in [k for k in os.environ if k.startswith("EVALWH_")]:
        del os.environ[key]
    os.environ.update({"EVALWH_CONFIG_DIR": str(config_dir), "EVALWH_PG_PASSWORD": PG_PASSWORD})
    return settings_for(None).warehouse


# the run_key ranges of each table's data files, in the order DuckLake wrote them
FILE_RANGES = """
SELECT t.table_name AS "table", f.data_file_id AS file, f.record_count AS rows,
       CAST(s.min_value AS BIGINT) AS lo, CAST(s.max_value AS BIGINT) AS hi
FROM __ducklake_metadata_lake.ducklake_data_file f
JOIN __ducklake_metadata_lake.ducklake_table t
  ON t.table_id = f.table_id AND t.end_snapshot IS NULL
JOIN __ducklake_metadata_lake.ducklake_column c
  ON c.table_id = t.table_id AND c.column_name = 'run_key' AND c.end_snapshot IS NULL
JOIN __ducklake_metadata_lake.ducklake_file_column_stats s
  ON s.data_file_id = f.data_file_id AND s.column_id = c.column_id
WHERE f.end_snapshot IS NULL
ORDER BY t.table_name, f.data_file_id
"""


def file_ranges(con: Any) -> dict[str, dict[str, Any]]:
    """Per keyed table: its data files, rows, and whether any file's run_key range starts
    below the previous file's largest key (which would defeat file pruning by run)."""
    out: dict[str, dict[str, Any]] = {}
    for table, file, rows, lo, hi in con.execute(FILE_RANGES).fetchall():
        entry = out.setdefault(table, {"files": 0, "rows": 0, "overlaps": 0, "_hi": None})
        if entry["_hi"] is not None and lo < entry["_hi"]:
            entry["overlaps"] += 1
        entry["files"] += 1
        entry["rows"] += rows
        entry["_hi"] = hi if entry["_hi"] is None else max(entry["_hi"], hi)
        entry.setdefault("first_file", file)
    for entry in out.values():
        del entry["_hi"]
    return out


def lake_copy(results: Path, source: Path, key: str, log: Any) -> tuple[Any, Path, dict[str, Any]]:
    """PostgreSQL serving the cached lake copy of ``source`` (made first when missing), the
    data folder, and ``copy.json``."""
    from tests.fakes.lake import PG_USER, start_postgres

    cache = results / "lake-warehouse" / key
    data, saved, meta = cache / "data", cache / "pgdata", cache / "copy.json"
    if meta.exists():
        return start_postgres(saved), data, json.loads(meta.read_text())
    from evalwh.api import lake as lake_api
    from evalwh.warehouse import lake as lakemod
    from evalwh.warehouse.connect import memory_limit

    for leftover in (data, saved):  # an interrupted earlier copy
        shutil.rmtree(leftover, ignore_errors=True)
    data.mkdir(parents=True)
    pg = start_postgres()
    try:
        created = pg.run(
            str(pg.bin / "createdb"), "-h", "127.0.0.1", "-p", str(pg.port), "-U", PG_USER,
            DATABASE,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        target = _use(pg, data, cache / "config")
        log(f"lake warehouse: pushing {source} into a lake (one transaction)")
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), time.process_time()
        pushed = lake_api.push(local=source)
        push_s, push_cpu = time.perf_counter() - started, time.process_time() - cpu
        con = lakemod.connect(target, read_only=True, memory_limit=memory_limit())
        try:
            files = file_ranges(con)
        finally:
            con.close()
        info = {
            "method": "evalwh lake push (evalwh.api.lake.push, one transaction)",
            "source": str(source),
            "runs": len(pushed.copied),
            "rows": pushed.rows,
            "push_s": push_s,
            "push_cpu_s": push_cpu,
            "load_at_start": load,
            "load_at_end": os.getloadavg()[0],
            "data_bytes": _folder_bytes(data),
            "files": files,
            "made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        lakemod.release(target)
    except BaseException:
        pg.stop()
        raise
    pg.save(saved)
    info["pgdata_bytes"] = _folder_bytes(saved)
    meta.write_text(json.dumps(info, indent=1))
    log(f"lake warehouse: copied in {push_s:.1f} s, cached under {cache}")
    return start_postgres(saved), data, info


def measure_lake_warehouse(
    work: Path, results: str, quick: bool, repeats: int, profiles: str | None
) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))  # tests.fakes.lake: the loopback PostgreSQL
    import synth
    import warehouse_figures as wf

    from evalwh.warehouse import lake as lakemod
    from evalwh.warehouse.connect import memory_limit
    from evalwh.warehouse.store import Warehouse

    layout = synth.QUICK if quick else synth.SCALE
    folder = Path(results) / "warehouse"
    source = folder / f"{layout.key}.duckdb"
    if not source.exists():  # never opened for writing when it exists (others read it)
        synth.ensure(folder, layout, log=wf._log)
    started = time.perf_counter()
    pg, data, info = lake_copy(Path(results), source, layout.key, wf._log)
    ready_s = time.perf_counter() - started
    try:
        target = _use(pg, data, work / "lake-warehouse-config")
        store = Warehouse(target)
        jobs = wf.questions(store, layout)
        attach = time.perf_counter()
        sent = wf.record(jobs)  # the first query attaches the lake (once per process)
        first_s = time.perf_counter() - attach
        timings = {name: wf._time(job, repeats) for name, job in jobs.items()}
        out_dir = Path(profiles) if profiles else None
        con = lakemod.connect(target, read_only=True, memory_limit=memory_limit())
        try:
            statements, bare, by_run_id = wf.replay_bare(
                con, sent, repeats, out_dir, "lake-warehouse"
            )
            counts = {
                t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
                for t in ("runs", "cases", "scores")
            }
            files = file_ranges(con)
        finally:
            con.close()
        return {
            "layout": layout.key,
            "copy": info,
            "ready_s": ready_s,
            "first_questions_s": first_s,
            "rows": counts,
            "files": files,
            "statements": statements,
            "timings_s": timings,
            "bare_s": bare,
            "by_run_id_s": by_run_id,
        }
    finally:
        pg.stop()
