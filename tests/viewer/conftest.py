"""The viewer tests' warehouse: two runs of the pairwise example with script-bearing text
planted in case q03."""

from __future__ import annotations

from typing import Any

import pytest

from evalwh import api
from tests.report_runs import pairwise_copy


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs of the pairwise example with script-bearing text planted in case q03."""
    root = tmp_path_factory.mktemp("viewer")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        config = pairwise_copy(root, hostile=True)
        first = api.run_eval(config, output_dir=root / ".evalwh")
        second = api.run_eval(config, output_dir=root / ".evalwh", label="second")
    view = api.open_warehouse(root / ".evalwh" / "warehouse.duckdb")
    return {"view": view, "a": first.run_id, "b": second.run_id, "root": root}
