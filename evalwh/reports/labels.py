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

import contextlib
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
    cells = store.cells(run_id)
    sides = (sorted({c[0] for c in cells}), sorted({c[1] for c in cells}))
    return _point_labels(data, criteria, {i["case_id"] for i in items}, where_line, sides, cells)


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


def local_user() -> str:
    """Who labels on this machine (the login name; ``unknown`` when there is none)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        return "unknown"


def import_labels(
    store: Warehouse, ref: str, file: str | Path, *, by: str | None = None
) -> dict[str, Any]:
    """Store the labels of ``file`` with run ``ref`` as given by ``by`` (default: the login
    name), replacing labels of the same pair, or of the same criterion and case."""
    run_id = store.resolve(ref)
    labels = read_labels(Path(file), store, run_id)
    replaced = store.replace_labels(run_id, labels, by=by or local_user())
    return {"run_id": run_id, "file": str(file), "imported": len(labels), "replaced": replaced}


MAX_WHO = 100  # characters of a labeller's name


def _who(by: str) -> str:
    who = by.strip()
    if not who or len(who) > MAX_WHO:
        raise ConfigError(
            f"the labeller's name must have 1 to {MAX_WHO} characters",
            fix="give a shorter name",
        )
    return who


def store_point_label(
    store: Warehouse, run_id: str, form: dict[str, str], by: str
) -> dict[str, Any]:
    """One label of one judged answer from the viewer's Label answers tab (``criterion``,
    ``case``, ``variant``, ``model``, ``repeat``, ``label``: pass, fail or a score), checked
    as `evalwh labels import` checks a file's entry and stored by the same write path
    (replacing that answer's earlier label)."""
    who = _who(by)
    value: Any = form.get("label", "")
    with contextlib.suppress(ValueError):  # _point_labels names a bad value
        value = float(value) if value not in ("pass", "fail") else value
    repeat: Any = form.get("repeat", "0")
    repeat = int(repeat) if str(repeat).isdigit() else repeat
    entry: dict[str, Any] = {k: form[k] for k in ("criterion", "variant", "model") if k in form}
    entry.update({"case": form.get("case", ""), "repeat": repeat, "label": value})
    (label,) = _pointwise({"labels": [entry]}, store, run_id, "the viewer", lambda p: {})
    replaced = store.replace_labels(run_id, [label], by=who)
    return {
        "run_id": run_id,
        "criterion": label.criterion,
        "case": label.case_id,
        "variant": label.variant,
        "model": label.model,
        "repeat": label.repeat,
        "label": label.label,
        "by": who,
        "replaced": replaced,
    }


def store_label(
    store: Warehouse, run_id: str, comparison: str, case_id: str, prefer: str, by: str
) -> dict[str, Any]:
    """One pairwise label from the viewer, checked against the run's judged pairs, stored by
    the same write path as `evalwh labels import` (replacing that pair's earlier label).
    ``prefer`` is the stored side: ``baseline``, ``candidate`` or ``tie``."""
    if prefer not in ("baseline", "candidate", "tie"):
        raise ConfigError(
            f"prefer must be baseline, candidate or tie, not {prefer[:40]!r}",
            fix="send the side the labeller preferred",
        )
    who = _who(by)
    pairs = store.query("pair_list", run_id=run_id).to_pylist()
    if not any(p["comparison"] == comparison and p["case_id"] == case_id for p in pairs):
        raise ConfigError(
            f"run {run_id} judged no pair of case {case_id[:80]!r} in comparison "
            f"{comparison[:80]!r}",
            fix="label a pair the run's Label tab shows",
        )
    label = SimpleNamespace(comparison=comparison, case_id=case_id, prefer=prefer, note=None)
    replaced = store.replace_labels(run_id, [label], by=who)
    return {
        "run_id": run_id,
        "comparison": comparison,
        "case": case_id,
        "prefer": prefer,
        "by": who,
        "replaced": replaced,
    }
