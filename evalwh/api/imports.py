"""Importing other tools' results (promptfoo, inspect_ai) into the warehouse as runs.

evalwh.import_results("promptfoo", ["results.json"], label="pf-nightly")
evalwh.import_results("inspect", ["logs/2026-11-30T14-01-19_task.eval"], case_id="{id}")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalwh.config.model import EvalConfig


def import_results(
    tool: str,
    paths: Sequence[str | Path],
    *,
    suite: str | None = None,
    label: str | None = None,
    case_id: str | None = None,
    variants: Sequence[str] = (),
    models: Sequence[str] = (),
    warehouse: str | Path | None = None,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Import each file as one run (importing a file again adds nothing); one dict per run
    (file, run_id, added, n_cases, n_scores, tool, version, n_redacted: the values
    whose key-shaped strings or secrets were stored as ``***``). ``variants`` / ``models`` are
    renames ``OLD=NEW`` (or one ``NEW`` for every name) that line cells up with other runs."""
    from evalwh.api.view import open_warehouse
    from evalwh.importers import ImportOptions, import_files
    from evalwh.importers.common import parse_renames

    options = ImportOptions(
        suite=suite,
        label=label,
        case_id=case_id,
        variants=parse_renames(variants, "variant"),
        models=parse_renames(models, "model"),
    )
    view = open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse)
    done = import_files(tool, [Path(p) for p in paths], view.path, options)
    return [r.to_dict() for r in done]
