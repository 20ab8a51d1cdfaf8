"""One function per MCP tool: parse and bound the client's arguments, call evalwh.api, shape the
answer with evalwh.mcp.briefs. evalwh/mcp/server.py registers these; nothing here imports the
MCP SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.analysis.nolook import NOTICE, is_no_look, minimal
from evalwh.config.secrets import redact_tree
from evalwh.errors import CostRefusedError, UsageError
from evalwh.mcp.agent import Agent, confine
from evalwh.mcp.briefs import case_row, compare_brief, judging_for, run_brief, show_brief
from evalwh.mcp.shaping import (
    DETAILS,
    LIST_RUNS,
    MAX_CHARS,
    MAX_LIST_RUNS,
    MAX_PAGE_SIZE,
    MAX_QUERY_ROWS,
    MOVERS,
    PAGE_SIZE,
    PREVIEW_CHARS,
    QUERY_CELL_CHARS,
    QUERY_ROWS,
    bounded,
    clip_tree,
    num,
    parsed,
    plain,
    plain_dict,
)

if TYPE_CHECKING:
    from evalwh.api import WarehouseView


class ProgressThrottle:
    """Decides which engine callbacks become progress notifications: the first, the last and
    one per ``1/steps`` of the matrix, so a run of any size sends at most ``steps + 2``."""

    def __init__(self, steps: int = 20) -> None:
        self.steps = steps
        self.last = -1

    UNKNOWN_EVERY = 1000  # a datasource run's size is unknown (total 0): every this many

    def due(self, done: int, total: int) -> bool:
        if total <= 0:
            return done == 1 or done % self.UNKNOWN_EVERY == 0
        bucket = (done * self.steps) // max(total, 1)
        if done in (1, total) or bucket != self.last:
            self.last = bucket
            return True
        return False


def _within_root(tool: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``tool(agent, config_path, ...)`` run with the root as a hard boundary: every file
    read for the config while it goes (scorers' schema files, datasources' folders, a
    prompt's attachments as it renders ...)
    must resolve inside ``agent.root`` (:func:`evalwh.config.confinement.confined_to`)."""
    import functools

    from evalwh.boundary import confined_to

    @functools.wraps(tool)
    def confined(agent: Agent, config_path: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with confined_to(agent.root, confine(config_path, agent.root)):
            return tool(agent, config_path, *args, **kwargs)

    return confined


@_within_root
def run_eval(
    agent: Agent,
    config_path: str,
    *,
    models: Sequence[str] = (),
    variants: Sequence[str] = (),
    cases: Sequence[str] = (),
    label: str | None = None,
    no_cache: bool = False,
    max_cost_usd: float | None = None,
    progress: Callable[[int, int, Any], None] | None = None,
) -> dict[str, Any]:
    """Run an eval for an agent: the path confined to the root, the cost capped (see
    evalwh.engine.budget), the answer a summary without outputs. Raises CostCapError (a
    CostRefusedError with the estimate, the cap and the ceiling) when refused."""
    from evalwh import api
    from evalwh.engine.budget import CostCapError, mcp_cost_cap, over_cap

    cfg = agent.load(config_path)
    output_dir = agent.run_output_dir()
    settings = api.settings_for(cfg, output_dir=output_dir, warehouse=agent.warehouse_flag)
    cap = mcp_cost_cap(max_cost_usd, settings.max_cost_usd, agent.env)
    try:
        result = api.run_eval(
            cfg,
            label=label,
            no_cache=no_cache,
            max_cost=cap,
            output_dir=output_dir,
            warehouse=agent.warehouse_flag,
            progress=progress,
            models=tuple(models),
            variants=tuple(variants),
            cases=tuple(cases),
        )
    except CostCapError:
        raise
    except CostRefusedError as exc:
        # The core refused before any call; its error carries the estimate.
        over_cap({"cost_usd": exc.estimate_usd, "calls": exc.calls}, cap, agent.env)
        raise
    brief = run_brief(result, label=label, cap_usd=cap)
    if result.warehouse != str(agent.warehouse):
        brief["notes"].append(
            f"this run was stored in {result.warehouse}, not in the warehouse this server "
            f"reads ({agent.warehouse})"
        )
    return brief


# -- summaries ------------------------------------------------------------------------------


def get_run(
    agent: Agent,
    run: str = "latest",
    detail: str = "summary",
    page: int = 1,
    page_size: int | None = None,
) -> dict[str, Any]:
    """A stored run: its summary, or a page of its failing cases, or a page of all cases."""
    if detail not in DETAILS:
        raise UsageError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    view = agent.view()
    if detail == "summary":
        return show_brief(view.show(run))
    return case_page(view, run, failures=detail == "failures", page=page, page_size=page_size)


def case_page(
    view: WarehouseView,
    run: str,
    *,
    failures: bool,
    page: int = 1,
    page_size: int | None = None,
    preview_chars: int = PREVIEW_CHARS,
) -> dict[str, Any]:
    """One page of a run's cases (failures first, then by case id), with ``total``,
    ``pages`` and ``next_page`` (null on the last page)."""
    size = bounded(page_size, PAGE_SIZE, MAX_PAGE_SIZE, "page_size")
    if page < 1:
        raise UsageError(f"page starts at 1, got {page}")
    run_id = view.resolve(run)
    table = view.query("case_list", run_id=run_id, only_failures=failures, case_id=None, limit=None)
    no_look = is_no_look(view.run(run_id))
    total = table.num_rows
    pages = max(1, -(-total // size))
    rows = table.slice((page - 1) * size, size).to_pylist() if page <= pages else []
    detail = "failures" if failures else "full"
    return plain_dict(
        {
            "run_id": run_id,
            "detail": detail,
            "page": page,
            "page_size": size,
            "total": total,
            "pages": pages,
            "next_page": page + 1 if page < pages else None,
            "cases": [
                case_row(r, output_chars=None if failures or no_look else preview_chars)
                for r in rows
            ],
            "next": "get_case_result(run, variant, model, case_id) shows one case in full",
            **({"no_look": True, "notice": NOTICE} if no_look else {}),
        }
    )


def case_brief(
    view: WarehouseView,
    run: str,
    variant: str,
    model: str,
    case_id: str,
    *,
    repeat: int = 0,
    max_chars: int | None = None,
) -> dict[str, Any]:
    """Everything about one cell (output, prompt, vars, scores with details); every text
    longer than ``max_chars`` cut with a marker, ``truncated`` maps it to its full length."""
    limit = bounded(max_chars, MAX_CHARS, 1_000_000, "max_chars")
    run_id = view.resolve(run)
    rows = view.query(
        "case_list", run_id=run_id, only_failures=False, case_id=case_id, limit=None
    ).to_pylist()
    if not rows:
        raise UsageError(f"run {run_id} has no case '{case_id}'")
    row = next(
        (
            r
            for r in rows
            if r["variant"] == variant and r["model"] == model and r["repeat"] == repeat
        ),
        None,
    )
    if row is None:
        cells = ", ".join(f"{r['variant']} × {r['model']} (repeat {r['repeat']})" for r in rows)
        raise UsageError(
            f"run {run_id} has no cell {variant} × {model} (repeat {repeat}) for case "
            f"'{case_id}' (it has: {cells})"
        )
    data = {
        "run_id": run_id,
        **{k: row[k] for k in ("variant", "model", "case_id", "repeat", "passed")},
        "score": row["score"],
        "error": row["error"],
        "output": row["output"],
        "expected": parsed(row["expected"]),
        "vars": parsed(row["vars"]),
        "metadata": parsed(row["metadata"]),
        "messages": parsed(row["messages"]),
        "criteria": [{**c, "details": parsed(c.get("details"))} for c in row.get("criteria") or []],
        **{
            k: row[k]
            for k in (
                "latency_ms",
                "queued_ms",
                "input_tokens",
                "output_tokens",
                "cost_usd",
                "cached",
                "attempts",
            )
        },
    }
    if is_no_look(view.run(run_id)):
        declined: dict[str, Any] = plain({**minimal(data), "no_look": True, "notice": NOTICE})
        return declined
    cut: dict[str, int] = {}
    out: dict[str, Any] = clip_tree(plain(data), limit, cut=cut)
    out["truncated"] = cut
    return out


# -- compare, runs, baselines ---------------------------------------------------------------


def compare_runs(
    agent: Agent, a: str, b: str = "latest", *, movers: int | None = None
) -> dict[str, Any]:
    view = agent.view()
    result = view.compare(a, b, movers=bounded(movers, MOVERS, 100, "movers"))
    data = result.to_dict()
    calibration = {}
    for side in ("a", "b"):
        flags = judging_for(view, data[side]["run_id"])
        if flags is not None:
            calibration[side] = flags
    return compare_brief(data, judging=calibration or None)


def write_report(
    agent: Agent, run: str = "latest", *, against: str | None = None, path: str | None = None
) -> dict[str, Any]:
    """Write the HTML page of a run (with ``against``: the compare page of ``run`` against
    that run) and say where: ``path`` (inside the root), else ``reports/`` beside the
    warehouse. The page itself is never returned: it is for a person to open."""
    view = agent.view()
    run_id = view.resolve(run)
    base_id = view.resolve(against) if against is not None else None
    if path is None:
        name = f"{run_id}.html" if base_id is None else f"compare-{base_id}-{run_id}.html"
        path = str(view.local_dir / "reports" / name)
    target = confine(path, agent.root)
    if target.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"path '{path}' must end in .html (the page is one HTML file)")
    if base_id is None:
        written = view.report(run_id, target)
    else:
        written = view.compare_report(base_id, run_id, target)
    assert isinstance(written, Path)
    return {
        "path": str(written),
        "run_id": run_id,
        "against": base_id,
        "bytes": written.stat().st_size,
    }


def list_runs(agent: Agent, limit: int | None = None) -> dict[str, Any]:
    """The newest runs first, with the pinned baselines; ``more`` says whether older runs
    were left out."""
    size = bounded(limit, LIST_RUNS, MAX_LIST_RUNS, "limit")
    view = agent.view()
    rows = view.runs(limit=size + 1)
    pins = view.baselines() if view.store.exists else []
    by_run: dict[str, list[str]] = {}
    for pin in pins:
        by_run.setdefault(pin["run_id"], []).append(pin["name"])
    runs = [
        {
            "run_id": r["run_id"],
            "label": r["label"],
            "suite": r["suite"],
            "status": r["status"],
            "started_at": r["started_at"],
            "n": r["n"],
            "passed": r["n_passed"],
            "pass_rate": num(r["pass_rate"]),
            "errors": r["n_errors"],
            "cost_usd": num(r["cost_usd"]),
            "baselines": by_run.get(r["run_id"], []),
            "no_look": bool(r.get("no_look")),
        }
        for r in rows[:size]
    ]
    return plain_dict(
        {
            "runs": runs,
            "more": len(rows) > size,
            "baselines": {p["name"]: p["run_id"] for p in pins},
        }
    )


def set_baseline(agent: Agent, run: str, name: str = "baseline") -> dict[str, Any]:
    row = agent.view().set_baseline(run, name)
    keys = ("name", "run_id", "label", "status", "previous_run_id")
    return plain_dict({"name": name, **{k: row.get(k) for k in keys if k in row}})


@_within_root
def render_prompt(
    agent: Agent, config_path: str, variant: str, case_id: str, *, max_chars: int | None = None
) -> dict[str, Any]:
    """One variant's messages for one case (no model call), redacted (known secrets and key
    shapes become ***), then long texts cut with a marker."""
    from evalwh import api

    limit = bounded(max_chars, MAX_CHARS, 1_000_000, "max_chars")
    data = api.render_prompt(agent.load(config_path), variant, case_id)
    cut: dict[str, int] = {}
    out: dict[str, Any] = clip_tree(redact_tree(plain(data)), limit, cut=cut)
    out["truncated"] = cut
    return out


def query(agent: Agent, sql: str, limit: int | None = None) -> dict[str, Any]:
    """One read-only query (evalwh.analysis.readonly): columns once, rows as lists, at most
    ``limit`` rows (``truncated`` says more were left), long texts cut."""
    size = bounded(limit, QUERY_ROWS, MAX_QUERY_ROWS, "limit")
    table, more = agent.view().read_sql(sql, limit=size, mcp=True)  # mcp_query_timeout_s
    columns = table.column_names
    values = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [
        [clip_tree(plain(v), QUERY_CELL_CHARS) for v in row] for row in zip(*values, strict=True)
    ]
    return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": more}
