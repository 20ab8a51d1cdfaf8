"""`evalwh labels import`: human pairwise labels from a file (the report's "Download labels",
or any YAML with a ``labels:`` list in the eval-config form) stored with a stored run.

The entries are checked exactly as the config loader checks ``labels:`` (the case must be
one the run judged, the comparison must be unambiguous), then replace that run's labels of
the same comparison and case. sql/pairwise.sql and the report count them from then on; no
answer or judge is asked again::

    evalwh labels import labels-2026-11-30T150317.531-2716.yaml latest
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from evalwh.errors import ConfigError

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

PREFER = ("A", "B", "tie")


def read_labels(path: Path, store: Warehouse, run_id: str) -> list[Any]:
    """The labels of ``path`` as the loader's ``Label`` objects, checked against the run."""
    from evalwh.config.loader import _labels
    from evalwh.config.yamlpos import format_path, load_yaml, locate

    data, node = load_yaml(path)
    file = str(path)

    def where_line(p: list[str | int]) -> dict[str, Any]:
        line, column = locate(node, p)
        return {"file": file, "where": format_path(p), "line": line, "column": column}

    if not isinstance(data, dict) or not isinstance(data.get("labels"), list):
        raise ConfigError(
            "no `labels:` list",
            file=file,
            fix="give a mapping with a `labels:` list, as the report's 'Download labels' writes",
        )
    for i, raw in enumerate(data["labels"]):
        if not isinstance(raw, dict) or "case" not in raw or raw.get("prefer") not in PREFER:
            raise ConfigError(
                "a label needs `case:` and `prefer:` (A, B or tie)",
                **where_line(["labels", i]),
                fix='write it as {case: "q01", comparison: "name", prefer: A}',
            )
    pairs = store.query("pair_list", run_id=run_id).to_pylist()
    comparisons = {
        p["comparison"]: SimpleNamespace(
            name=p["comparison"],
            baseline=SimpleNamespace(model=p["baseline_model"], variant=p["baseline_variant"]),
            candidate=SimpleNamespace(model=p["candidate_model"], variant=p["candidate_variant"]),
        )
        for p in pairs
    }
    if not comparisons:
        raise ConfigError(
            f"run {run_id} has no judged pairs to label",
            file=file,
            fix="import into a run made with `pairwise:` comparisons",
        )
    chosen: list[Any] = list(comparisons.values())  # shaped like config Comparisons
    return _labels(data, chosen, {p["case_id"] for p in pairs}, where_line)


def import_labels(store: Warehouse, ref: str, file: str | Path) -> dict[str, Any]:
    """Store the labels of ``file`` with run ``ref`` (replacing labels of the same pair)."""
    run_id = store.resolve(ref)
    labels = read_labels(Path(file), store, run_id)
    replaced = store.replace_labels(run_id, labels)
    return {"run_id": run_id, "file": str(file), "imported": len(labels), "replaced": replaced}
