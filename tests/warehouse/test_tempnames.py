"""Temporary names of files written whole and then renamed into place
(evalwh/warehouse/tempnames.py): ``.<final name>.tmp-<pid>-<6 hex>``, for an attachment
being copied (beside the final file) and an export being written (in the exports' ``.tmp/``
folder); the next export removes a killed writer's leftovers by that pattern, and leaves the
files of a live one alone."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import evalwh
from evalwh import api
from evalwh.warehouse import artifacts
from evalwh.warehouse.artifacts import ArtifactStore
from tests.conftest import dead_pid, write
from tests.warehouse.test_artifacts import sha
from tests.warehouse.test_store import LABELLED_RUN


def test_a_copy_in_progress_is_a_hidden_temp_file_named_for_its_target_and_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run killed mid-copy leaves behind: ``.<name>.tmp-<pid>-<6 hex>``, which
    ``count`` skips."""
    seen: list[str] = []
    real = os.replace

    def spy(src: Path, dst: Path) -> None:
        seen.append(Path(src).name)
        real(src, dst)

    monkeypatch.setattr(artifacts.os, "replace", spy)
    source = tmp_path / "a.txt"
    source.write_bytes(b"abc")
    digest = sha(b"abc")
    ArtifactStore(tmp_path / "wh").put(digest, [source])
    assert len(seen) == 1
    assert re.fullmatch(rf"\.{digest[2:]}\.tmp-{os.getpid()}-[0-9a-f]{{6}}", seen[0])


def test_an_exports_temporary_files_are_named_as_the_next_export_cleans_them_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed export leaves `.tmp/.<table>.<run id>.parquet.tmp-<pid>-<6 hex>` behind, which
    the next export removes (by that pattern): the names written and the names cleaned up
    must agree, and no temporary file is ever inside a table's folder (Polars refuses a
    folder holding anything but Parquet files)."""
    import re
    from fnmatch import fnmatch

    from evalwh.warehouse import exportfiles

    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    moved, real = [], os.replace
    monkeypatch.setattr(
        exportfiles.os, "replace", lambda a, b: (moved.append((Path(a), Path(b))), real(a, b))
    )
    root = store.export_run(result.run_id, tmp_path / "exports")
    assert [final.name for _, final in moved] == [
        "cases.parquet",
        "scores.parquet",
        "turns.parquet",
    ]
    for temp, final in moved:
        table = final.stem
        assert temp.parent == root / ".tmp"
        assert final.parent == root / table / f"run_id={result.run_id}"
        name = re.escape(f".{table}.{result.run_id}.parquet")
        assert re.fullmatch(rf"{name}\.tmp-{os.getpid()}-[0-9a-f]{{6}}", temp.name)
        assert fnmatch(temp.name, ".*.parquet.tmp-*")  # the cleanup's glob
    assert list((root / ".tmp").iterdir()) == []


def test_an_export_leaves_the_temporary_files_of_a_live_export_alone(tmp_path: Path) -> None:
    """Two exports of one run at once: the second removes a killed export's leftovers, but
    not the files the first is still writing (their process is alive), which it would
    otherwise pull from under the first one's rename."""
    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    staging = tmp_path / "exports" / ".tmp"
    staging.mkdir(parents=True)
    run = result.run_id
    live = staging / f".cases.{run}.parquet.tmp-{os.getpid()}-abcdef"  # this process writes it
    killed = staging / f".scores.{run}.parquet.tmp-{dead_pid()}-abcdef"
    unnamed = staging / f".cases.{run}.parquet.tmp-unknown"  # no process id: nobody writes it
    for path in (live, killed, unnamed):
        path.write_bytes(b"half a file")
    assert store.export_run(result.run_id, tmp_path / "exports") == tmp_path / "exports"
    assert live.read_bytes() == b"half a file"
    assert not killed.exists() and not unnamed.exists()
    assert list(staging.iterdir()) == [live]
