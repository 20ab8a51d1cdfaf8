"""Run B against run A: paired deltas per run, cell, criterion and slice, and the movers.

The statistics live in ``sql/compare.sql`` (deltas) and ``sql/compare_cases.sql`` (movers),
tool use in ``sql/compare_tools.sql`` (per tool, and the cells whose calls changed; only when
a run has tool loops); this module resolves the references, picks the slice keys and the
cluster key, and shapes the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalwh.analysis.nolook import NOTICE, is_no_look, minimal_table
from evalwh.analysis.runinfo import brief_of, cluster_key, snapshot_of
from evalwh.analysis.slices import check_keys, metadata_keys
from evalwh.errors import UsageError
from evalwh.warehouse.reading import one_connection

if TYPE_CHECKING:
    import pyarrow as pa

    from evalwh.warehouse.store import Warehouse

SCOPES = ("run", "cell", "criterion", "slice")
FEW_CLUSTERS = 10  # below this the cluster-robust SE is itself too noisy to trust
MOVERS = 20  # moved cases listed by default, worst first


@dataclass
class Comparison:
    """Run ``b`` minus run ``a``. ``deltas`` is sql/compare.sql's table, ``movers`` the
    moved cases (sql/compare_cases.sql), both Arrow."""

    a: dict[str, Any]
    b: dict[str, Any]
    cluster: str | None
    keys: list[str]
    deltas: pa.Table
    movers: pa.Table
    notes: list[str] = field(default_factory=list)
    no_look: bool = False  # a side is a no-look run: movers carry no outputs
    # tool use per tool and the cells whose calls changed (docs/tools.md): empty when
    # neither run has a tool loop, or a side is a no-look run (it stores no transcript)
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_cells: list[dict[str, Any]] = field(default_factory=list)

    def rows(self, scope: str) -> list[dict[str, Any]]:
        import pyarrow.compute as pc

        rows: list[dict[str, Any]] = self.deltas.filter(
            pc.equal(self.deltas["scope"], scope)
        ).to_pylist()
        return rows

    @property
    def overall(self) -> dict[str, Any]:
        rows = self.rows("run")
        return rows[0] if rows else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "cluster": self.cluster,
            "slice_keys": self.keys,
            "overall": self.overall,
            "cells": self.rows("cell"),
            "criteria": self.rows("criterion"),
            "slices": self.rows("slice"),
            "movers": self.movers.to_pylist(),
            "notes": self.notes,
            "no_look": self.no_look,
            "tools": self.tools,
            "tool_cells": self.tool_cells,
        }


def check_cluster(
    store: Warehouse, run_ids: Sequence[str], key: str | None, *, strict: bool
) -> list[str]:
    """Notes about a cluster key that no case carries (a UsageError when ``strict``)."""
    if not key or key == "case_id" or key in metadata_keys(store, run_ids):
        return []
    message = (
        f"cluster key {key!r} is in no case's metadata (use a metadata key, or 'case_id' "
        "to cluster the cells of a case)"
    )
    if strict:
        raise UsageError(message)
    return [message + "; every case is its own cluster"]


def deltas(
    store: Warehouse,
    run_a: str,
    run_b: str,
    *,
    cluster: str | None = None,
    keys: Sequence[str] = (),
    combine: bool = False,
    scopes: Sequence[str] = SCOPES,
) -> pa.Table:
    """``sql/compare.sql`` for resolved run ids (B minus A), the ``scopes`` named only."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise UsageError(f"unknown compare scope(s) {unknown}: use {', '.join(SCOPES)}")
    return store.query(
        "compare",
        run_a=run_a,
        run_b=run_b,
        cluster=cluster,
        keys=list(keys),
        combine=combine,
        scopes=list(scopes),
    )


#: what each scope of sql/compare_tools.sql leaves empty
_TOOL_ONLY = ("tool",)
_CELL_ONLY = ("case_id", "repeat", "passed_a", "passed_b", "tools_a", "tools_b")


def tool_use(
    store: Warehouse,
    run_a: str,
    run_b: str,
    limit: int | None,
    no_look: bool,
    notes: list[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tool calls per tool and at most ``limit`` cells whose calls changed
    (sql/compare_tools.sql); nothing when neither run has a tool loop. A no-look side stored no
    transcript: its zero calls would read as a change, so none is shown."""
    rows: list[dict[str, Any]] = store.query(
        "compare_tools", run_a=run_a, run_b=run_b, limit=limit
    ).to_pylist()
    if rows and no_look:
        notes.append("a no-look run stores no tool-loop transcript: tool use is not compared")
        return [], []

    def shaped(scope: str, drop: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in r.items() if k != "scope" and k not in drop}
            for r in rows
            if r["scope"] == scope
        ]

    return shaped("tool", _CELL_ONLY), shaped("cell", _TOOL_ONLY)


@one_connection
def compare(
    store: Warehouse,
    ref_a: str,
    ref_b: str = "latest",
    *,
    by: Sequence[str] = (),
    cluster: str | None = None,
    movers: int | None = MOVERS,
    scopes: Sequence[str] = SCOPES,
    tools: bool = True,
) -> Comparison:
    """Compare run ``ref_b`` with run ``ref_a`` (B minus A).

    ``by`` names metadata keys combined into one slice dimension; when empty, every metadata
    key is its own dimension. ``cluster`` overrides the runs' ``analysis.cluster``.
    ``scopes`` names the deltas computed (the viewer's page asks for run and cell first and
    for criteria and slices in requests of their own); the run scope feeds the notes.
    ``tools`` False leaves tool use out (:func:`tool_use` reads it on its own).
    """
    if movers is not None and movers < 0:
        raise UsageError("--movers must be 0 or more")
    run_a, run_b = store.resolve(ref_a), store.resolve(ref_b)
    row_a, row_b = store.run_row(run_a), store.run_row(run_b)
    key = cluster or cluster_key(snapshot_of(row_b)) or cluster_key(snapshot_of(row_a))
    notes = check_cluster(store, [run_a, run_b], key, strict=cluster is not None)
    if by:
        check_keys(store, [run_a, run_b], by)
        keys, combine = list(by), True
    else:
        keys, combine = metadata_keys(store, [run_a, run_b]), False
    table = deltas(store, run_a, run_b, cluster=key, keys=keys, combine=combine, scopes=scopes)
    moved = store.query("compare_cases", run_a=run_a, run_b=run_b, limit=movers)
    no_look = is_no_look(row_a) or is_no_look(row_b)
    if no_look:  # one side stored no outputs: neither side's are shown
        moved = minimal_table(moved)
        notes.append(NOTICE)
    result = Comparison(
        brief_of(row_a), brief_of(row_b), key, keys, table, moved, notes, no_look=no_look
    )
    if tools:
        result.tools, result.tool_cells = tool_use(store, run_a, run_b, movers, no_look, notes)
    overall = result.overall
    if run_a == run_b:
        notes.append("both references name the same run: every delta is 0")
    if "run" not in scopes:  # the notes below read the run scope's row
        return result
    if not overall.get("n"):
        notes.append("the runs share no (variant, model, case_id, repeat): nothing to pair")
    elif key and (overall.get("n_clusters") or 0) < FEW_CLUSTERS:
        notes.append(
            f"only {overall.get('n_clusters')} cluster(s) of {key!r}: cluster-robust standard "
            f"errors need more (say {FEW_CLUSTERS}+) to be trusted"
        )
    return result
