"""`evalwh labels import`: human labels from a file (the report's "Download labels", or any
YAML with a ``labels:`` list in the eval-config form) stored with a stored run.

Pairwise entries (``prefer:``) and pointwise entries (``label:`` for an llm-judge
criterion) are checked exactly as the config loader checks ``labels:`` (the case must be one
the run judged, the comparison or criterion must be unambiguous, a score must lie on the
judge's scale), then replace that run's labels of the same comparison or criterion and case.
sql/pairwise.sql, sql/calibration_pointwise.sql and the report count them from then on; no
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
    """The labels of ``path`` as the loader's ``Label`` and ``PointLabel`` objects, checked
    against the run."""
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
        pointwise = isinstance(raw, dict) and "label" in raw and "prefer" not in raw
        if (
            not isinstance(raw, dict)
            or "case" not in raw
            or (not pointwise and raw.get("prefer") not in PREFER)
        ):
            raise ConfigError(
                "a label needs `case:` and `prefer:` (A, B or tie) or `label:`",
                **where_line(["labels", i]),
                fix='write it as {case: "q01", comparison: "name", prefer: A} or '
                '{case: "q01", criterion: "name", label: pass}',
            )
    entries = data["labels"]
    out: list[Any] = []
    if any("prefer" in raw for raw in entries):
        out += _pairwise(data, store, run_id, file, where_line)
    if any("prefer" not in raw for raw in entries):
        out += _pointwise(data, store, run_id, file, where_line)
    return out


def _pointwise(
    data: dict[str, Any], store: Warehouse, run_id: str, file: str, where_line: Any
) -> list[Any]:
    from evalwh.analysis.runinfo import snapshot_of
    from evalwh.config.loader import _point_labels

    items = store.query("point_list", run_id=run_id).to_pylist()
    criteria = judge_scales(snapshot_of(store.run_row(run_id)), {i["criterion"] for i in items})
    if not criteria:
        raise ConfigError(
            f"run {run_id} has no llm-judge answers to label",
            file=file,
            fix="import into a run whose scorecard has an llm-judge criterion",
        )
    return _point_labels(data, criteria, {i["case_id"] for i in items}, where_line)


def judge_scales(config: dict[str, Any], names: set[str]) -> dict[str, tuple[float, float]]:
    """The judge's scale of each llm-judge criterion in ``names``, from a run's config
    snapshot (a judge without ``scale:`` grades 0..1, i.e. pass or fail)."""
    scales = {j.get("id"): j.get("scale") or {} for j in config.get("judges") or []}
    out = {}
    for c in config.get("scorecard") or []:
        if c.get("name") in names:
            scale = scales.get(c.get("judge")) or {}
            out[str(c["name"])] = (float(scale.get("min", 0)), float(scale.get("max", 1)))
    return out


def _pairwise(
    data: dict[str, Any], store: Warehouse, run_id: str, file: str, where_line: Any
) -> list[Any]:
    from evalwh.config.loader import _labels

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
    """Store the labels of ``file`` with run ``ref`` (replacing labels of the same pair, or
    of the same criterion and case)."""
    run_id = store.resolve(ref)
    labels = read_labels(Path(file), store, run_id)
    replaced = store.replace_labels(run_id, labels)
    return {"run_id": run_id, "file": str(file), "imported": len(labels), "replaced": replaced}
