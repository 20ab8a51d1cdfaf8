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
    """Store the labels of ``file`` with run ``ref`` (replacing labels of the same pair)."""
    run_id = store.resolve(ref)
    labels = read_labels(Path(file), store, run_id)
    replaced = store.replace_labels(run_id, labels, by=by or local_user())
    return {"run_id": run_id, "file": str(file), "imported": len(labels), "replaced": replaced}


MAX_WHO = 100  # characters of a labeller's name


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
    who = by.strip()
    if not who or len(who) > MAX_WHO:
        raise ConfigError(
            f"the labeller's name must have 1 to {MAX_WHO} characters",
            fix="give a shorter name",
        )
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
