"""Tests that kill mutants of a sharded run's join check (evalwh/warehouse/shards.py) that
mutmut found alive (issue 21): what a shard is told when the run id it was given belongs to
a run it cannot join. Each test names the behaviour it pins."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalwh.errors import UsageError
from evalwh.warehouse.shards import _check_join


def _found(**fields: Any) -> dict[str, Any]:
    base = {
        "filters": json.dumps({"shards": 4}),
        "config_hash": "c1",
        "dataset_hash": "d1",
        "no_look": False,
        "status": "running",
    }
    return {**base, **fields}


ROW = {"run_id": "r-7", "config_hash": "c1", "dataset_hash": "d1", "no_look": False}


def _refusal(found: dict[str, Any], row: dict[str, Any] = ROW, shards: int = 4) -> str:
    with pytest.raises(UsageError) as info:
        _check_join(found, row, shards)
    return str(info.value)


def test_a_matching_running_or_interrupted_run_is_joined() -> None:
    for status in ("running", "interrupted"):
        _check_join(_found(status=status), ROW, 4)  # no error


def test_a_run_with_no_filters_at_all_is_not_a_sharded_run() -> None:
    # a plain run's filters column is empty: the shard is told so, by run id, not a TypeError
    for filters in (None, ""):
        assert _refusal(_found(filters=filters)) == (
            "run r-7 exists and is not a run of 4 shards (it has no shards): give every shard "
            "the same N, or another --run-id"
        )
    assert "(it has 3 shards)" in _refusal(_found(filters=json.dumps({"shards": 3})))


def test_another_config_dataset_privacy_or_a_finished_run_is_refused_by_run_id() -> None:
    assert _refusal(_found(config_hash="c2")) == (
        "run r-7 was started from another config (config_hash differs): every shard must run "
        "the same eval.yaml and cases"
    )
    assert _refusal(_found(dataset_hash="d2")).startswith(
        "run r-7 was started from another dataset (dataset_hash differs)"
    )
    assert _refusal(_found(no_look=True)) == (
        "run r-7 was started as a no-look run and this shard is not: give every shard the "
        "same privacy.no_look (and --no-look)"
    )
    assert _refusal(_found(), {**ROW, "no_look": True}) == (
        "run r-7 was not started as a no-look run and this shard is: give every shard the "
        "same privacy.no_look (and --no-look)"
    )
    assert _refusal(_found(status="completed")) == (
        "run r-7 is already completed: a finished run takes no more shards (start a new run "
        "with another --run-id)"
    )
