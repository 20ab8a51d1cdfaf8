"""Fixtures the warehouse tests share: a DuckLake whose catalog is a local DuckDB file (no
server), the lake's clock faked, and a warehouse file holding one finished run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import evalwh
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.lake import LakeTarget
from tests.conftest import write


@pytest.fixture
def lake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """lake's clock and sleep, faked: time passes only by the sleeps, which are recorded;
    the jitter is fixed at 0.75 (random() = 0.25)."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        now[0] += seconds

    monkeypatch.setattr(lakemod.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(lakemod.time, "sleep", sleep)
    monkeypatch.setattr(lakemod.random, "random", lambda: 0.25)
    return slept


@pytest.fixture
def file_lake(tmp_path: Path) -> Iterator[LakeTarget]:
    target = lakemod.parse_target(
        f"ducklake:{tmp_path / 'meta.ducklake'}",
        None,  # no data path: DuckLake keeps the files beside the catalog
        base=tmp_path,
        where="w",
        # a PostgreSQL password in the environment means nothing to a file catalog
        secret={"EVALWH_PG_PASSWORD": "pg-secret"}.get,  # pragma: allowlist secret
    )
    yield target
    lakemod.release(target)


@pytest.fixture(scope="module")
def file_catalog_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LakeTarget]:
    """A DuckLake with its catalog in a local DuckDB file, created by its first writer and
    shared by a module's tests (each uses its own run ids)."""
    folder = tmp_path_factory.mktemp("lake")
    target = lakemod.parse_target(
        f"ducklake:{folder / 'meta.ducklake'}",
        {"data_path": "lake-data"},
        base=folder,
        where="test",
    )
    yield target
    lakemod.release(target)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A warehouse file holding one finished run of two cells (made once; tests copy it)."""
    folder = tmp_path_factory.mktemp("finished")
    cfg = write(
        folder / "eval.yaml",
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: hi}]}\n"
        "cases:\n  - {id: c1, expected: x}\n  - {id: c2, expected: y}\n"
        "scorecard:\n  - {name: r, type: contains, value: x}\n",
    )
    result = evalwh.run_eval(cfg, output_dir=folder / "o")
    return folder / "o" / "warehouse.duckdb", result.run_id


@pytest.fixture
def finished_copy(finished: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """This test's own copy of that warehouse file."""
    db = tmp_path / "o" / "warehouse.duckdb"
    db.parent.mkdir()
    shutil.copyfile(finished[0], db)
    return db, finished[1]
