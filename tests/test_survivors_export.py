"""A run's Parquet export (evalwh.warehouse.store.Warehouse.export_run) into a folder whose
name holds a quote, over the temporary file a killed export left behind; and the timestamps
the warehouse stamps, which are UTC whatever the machine's zone.

Written from mutants that survived the mutation run (docs/testing.md). Exports are described
in docs/storage.md.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import polars as pl

import evalwh
from evalwh.warehouse.store import Warehouse, utcnow
from tests.conftest import dead_pid
from tests.test_survivors_run_row import CONFIG


def test_an_export_into_a_quoted_folder_replaces_a_killed_exports_leftovers(
    tmp_path: Path,
) -> None:
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "it's here"  # a quote in the path: the COPY target is escaped
    run = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=out)
    target = Path(run.exports)
    assert sorted(pl.read_parquet(target / "cases.parquet")["case_id"]) == ["c1", "c2", "other"]
    assert pl.read_parquet(target / "scores.parquet").height == 3
    leftover = target / f".cases.parquet.tmp-{dead_pid()}-abcdef"  # a killed export's file
    leftover.write_bytes(b"half a file")
    again = Warehouse(out / "warehouse.duckdb").export_run(run.run_id, out / "exports")
    assert again == target
    assert not leftover.exists()
    assert sorted(p.name for p in target.iterdir()) == ["cases.parquet", "scores.parquet"]


def test_timestamps_are_utc_whatever_the_machines_zone() -> None:
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "IST-5:30"  # a POSIX zone string: +05:30, no tz database needed
    time.tzset()
    try:
        assert utcnow().utcoffset() == timedelta(0)
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()
