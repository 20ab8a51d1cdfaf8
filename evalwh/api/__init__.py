"""The public Python API. The CLI, the MCP server and the viewer call these functions only.

import evalwh
result = evalwh.run_eval("examples/quickstart/eval.yaml", label="try-1")
wh = evalwh.open_warehouse()          # the default .evalwh/warehouse.duckdb
wh.summary("latest")                  # Polars DataFrame
evalwh.frames.cases("latest")         # the same answers as a frame, JSON columns typed
"""

from __future__ import annotations

from evalwh.api import frames as frames
from evalwh.api.calibrate import calibrate as calibrate
from evalwh.api.frames import connect
from evalwh.api.imports import import_results as import_results
from evalwh.api.prices import prices as prices
from evalwh.api.run import (
    DryRun,
    RunResult,
    init_project,
    render_prompt,
    run_eval,
    settings_for,
    validate,
)
from evalwh.api.run import ProgressCallback as ProgressCallback
from evalwh.api.run import default_config_path as default_config_path
from evalwh.api.view import WarehouseView, migrate_warehouse, open_warehouse
from evalwh.api.view import cache_clear as cache_clear
from evalwh.api.view import cache_info as cache_info
from evalwh.config.loader import load_config

__all__ = [
    "DryRun",
    "RunResult",
    "WarehouseView",
    "connect",
    "init_project",
    "load_config",
    "migrate_warehouse",
    "open_warehouse",
    "render_prompt",
    "run_eval",
    "settings_for",
    "validate",
]
