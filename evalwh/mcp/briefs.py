"""Token-frugal answers for agents (``evalwh mcp``): summaries first, drill-down on demand.

Pure shaping over what evalwh.api returns, plus the two rules an agent-facing server needs:
config paths stay inside a root folder, and runs stay under a cost cap (evalwh.engine.budget).
Nothing here imports the MCP SDK; evalwh/mcp/server.py only registers these as tools.

The shapes:

- summaries (``run_brief``, ``get_run(detail="summary")``, ``compare_brief``) carry the
  matrix, totals with their n and 95% interval, the gate verdict, the judge calibration flags
  (``headline_eligible`` and the ``UNCALIBRATED`` / ``FLIPPY`` reasons) and never an output;
- pages (``case_page``) list cases ``page_size`` at a time with ``total``, ``pages`` and
  ``next_page``; the ``failures`` detail names the failing criteria without outputs, the
  ``full`` detail adds each output cut to ``preview_chars``;
- one cell (``case_brief``) is the only answer with whole texts; a string longer than
  ``max_chars`` is cut and ends with a marker that gives its full length, and
  ``truncated`` maps each cut field to its full length.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.analysis.nolook import NOTICE, is_no_look, minimal
from evalwh.errors import CostRefusedError, UsageError

if TYPE_CHECKING:
    from evalwh.api import RunResult, WarehouseView
    from evalwh.config.model import EvalConfig
    from evalwh.config.settings import Settings

ENV_ROOT = "EVALWH_MCP_ROOT"
DETAILS = ("summary", "failures", "full")
PAGE_SIZE = 10
MAX_PAGE_SIZE = 50
MAX_CHARS = 2000  # one cell's texts (get_case_result, render_prompt)
PREVIEW_CHARS = 300  # an output in a `full` page
NOTE_CHARS = 300  # an error message in a summary or a page
QUERY_ROWS = 50
MAX_QUERY_ROWS = 500
QUERY_CELL_CHARS = 500
LIST_RUNS = 10
MAX_LIST_RUNS = 100
MOVERS = 10
SLICES = 10
MARKER = "…[truncated: {shown} of {total} chars]"


# -- plain JSON ---------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dates as ISO text, decimals as floats, NaN as null."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def num(value: Any, digits: int = 4) -> Any:
    """A number cut to ``digits`` significant digits (ints and None unchanged)."""
    if isinstance(value, Decimal):
        value = int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def parsed(value: Any) -> Any:
    """A JSON column (stored as text) as data; other values unchanged."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# -- truncation -----------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters plus a marker with its full length."""
    if len(text) <= limit:
        return text
    return text[:limit] + MARKER.format(shown=limit, total=len(text))


def clip_tree(value: Any, limit: int, path: str = "", cut: dict[str, int] | None = None) -> Any:
    """Every string in ``value`` cut to ``limit``; ``cut`` collects path -> full length."""
    if isinstance(value, str):
        if len(value) > limit and cut is not None:
            cut[path or "$"] = len(value)
        return clip(value, limit)
    if isinstance(value, Mapping):
        return {
            k: clip_tree(v, limit, f"{path}.{k}" if path else str(k), cut) for k, v in value.items()
        }
    if isinstance(value, list):
        return [clip_tree(v, limit, f"{path}[{i}]", cut) for i, v in enumerate(value)]
    return value


def redact_tree(value: Any) -> Any:
    """Every string in ``value`` through :func:`evalwh.config.secrets.redact`."""
    from evalwh.config.secrets import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_tree(v) for v in value]
    return value


def _limit(value: int | None, default: int, top: int, name: str) -> int:
    if value is None:
        return default
    if value < 1:
        raise UsageError(f"{name} must be at least 1, got {value}")
    return min(value, top)


# -- the root and the warehouse -------------------------------------------------------------


def mcp_root(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The folder agents may read configs from: ``EVALWH_MCP_ROOT``, else the working folder."""
    env = os.environ if env is None else env
    raw = env.get(ENV_ROOT)
    root = Path(raw).expanduser() if raw else (cwd or Path.cwd())
    if not root.is_absolute():
        root = (cwd or Path.cwd()) / root
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"{ENV_ROOT}={raw!r} is not a folder")
    return root


def confine(config_path: str | Path, root: Path) -> Path:
    """``config_path`` (relative paths start at ``root``) resolved, symlinks followed; a
    UsageError when it lands outside ``root``."""
    given = Path(config_path).expanduser()
    resolved = (given if given.is_absolute() else root / given).resolve()
    if resolved != root and root not in resolved.parents:
        raise UsageError(
            f"config_path '{config_path}' resolves to {resolved}, outside the server's root "
            f"{root} ({ENV_ROOT}); pass a config inside the root"
        )
    return resolved


@dataclass
class Agent:
    """What an agent-facing server knows: its root, its warehouse, its environment."""

    root: Path
    output_dir: Path | None = None
    allow_code: bool = False  # `evalwh mcp --allow-code`: python scorers, command, checks
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    cwd: Path = field(default_factory=Path.cwd)
    _warehouse: Path | None = None
    _settings: Settings | None = None

    @classmethod
    def from_env(cls, output_dir: str | Path | None = None, *, allow_code: bool = False) -> Agent:
        cwd = Path.cwd()
        return cls(
            root=mcp_root(os.environ, cwd),
            output_dir=Path(output_dir) if output_dir else None,
            allow_code=allow_code,
            cwd=cwd,
        )

    def load(self, config_path: str) -> EvalConfig:
        """The config at ``config_path``, confined to the root (evalwh.config.confinement): every
        file it names inside, no code-running feature unless ``allow_code``."""
        from evalwh.config.confinement import load_confined

        return load_confined(confine(config_path, self.root), self.root, allow_code=self.allow_code)

    @property
    def warehouse(self) -> Path:
        """The one warehouse this server reads and runs into: the one `evalwh list` would use
        in the working folder (-o, EVALWH_OUTPUT_DIR, ./eval.yaml's settings, .evalwh)."""
        if self._warehouse is None:
            from evalwh import api

            local = self.cwd / "eval.yaml"
            view = api.open_warehouse(
                config=local if local.is_file() else None, output_dir=self.output_dir
            )
            self._warehouse, self._settings = view.path, view.settings
        return self._warehouse

    def view(self) -> WarehouseView:
        """The warehouse, with the settings that bound its queries (mcp_query_timeout_s ...)."""
        from evalwh.api import WarehouseView

        return WarehouseView(self.warehouse, self._settings)

    def run_output_dir(self) -> Path | None:
        """What run_eval gets as output_dir so that its run lands in :attr:`warehouse`."""
        return self.warehouse.parent if self.warehouse.name == "warehouse.duckdb" else None


# -- run_eval -------------------------------------------------------------------------------


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
    settings = api.settings_for(cfg, output_dir=output_dir)
    cap = mcp_cost_cap(max_cost_usd, settings.max_cost_usd, agent.env)
    selection = {"models": tuple(models), "variants": tuple(variants), "cases": tuple(cases)}
    try:
        result = api.run_eval(
            cfg,
            label=label,
            no_cache=no_cache,
            max_cost=cap,
            output_dir=output_dir,
            progress=progress,
            **selection,
        )
    except CostCapError:
        raise
    except CostRefusedError as exc:
        # The core refused before any call; its error carries the estimate.
        over_cap({"cost_usd": exc.estimate_usd, "calls": exc.calls}, cap, agent.env)
        raise
    brief = run_brief(result, label=label, cap_usd=cap)
    if Path(result.warehouse) != agent.warehouse:
        brief["notes"].append(
            f"this run was stored in {result.warehouse}, not in the warehouse this server "
            f"reads ({agent.warehouse})"
        )
    return brief


# -- summaries ------------------------------------------------------------------------------


def cell_brief(row: Mapping[str, Any]) -> dict[str, Any]:
    """One (variant, model) cell of the matrix: pass rate with its n and 95% interval."""
    return {
        "variant": row["variant"],
        "model": row["model"],
        "n": row["n"],
        "passed": row["n_passed"],
        "pass_rate": num(row["pass_rate"]),
        "ci95": [num(row["pass_rate_lo"]), num(row["pass_rate_hi"])],
        "score": num(row["mean_score"]),
        "errors": row["n_errors"],
        "cost_usd": num(row.get("cost_usd")),
        "p50_ms": num(row.get("p50_latency_ms"), 3),
    }


def totals_brief(t: Mapping[str, Any]) -> dict[str, Any]:
    n, passed = int(t.get("n") or 0), int(t.get("n_passed") or 0)
    return {
        "n": n,
        "passed": passed,
        "failed": n - passed,
        "pass_rate": num(t.get("pass_rate")),
        "ci95": [num(t.get("pass_rate_lo")), num(t.get("pass_rate_hi"))],
        "score": num(t.get("mean_score")),
        "errors": t.get("n_errors"),
        "cached": t.get("n_cached"),
        "cost_usd": num(t.get("cost_usd")),
        "input_tokens": num(t.get("input_tokens")),
        "output_tokens": num(t.get("output_tokens")),
    }


def gate_brief(rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The verdict and the failing rules only."""
    failed = [
        {
            k: num(v)
            for k, v in r.items()
            if k in ("kind", "scope", "target", "metric", "op", "limit", "value", "n", "baseline")
        }
        for r in rules
        if not r["passed"]
    ]
    return {"passed": not failed, "rules": len(rules), "failed": failed}


def errors_brief(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "error": clip(str(e["error"]), NOTE_CHARS),
            "kind": e.get("error_kind"),
            "n": e["n"],
            "examples": list(e.get("examples") or [])[:3],
        }
        for e in errors
    ]


def judging_brief(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Judge calibration first, then the win rates, with the same flags as the CLI:
    ``headline_eligible`` is false and ``flags`` says why (``UNCALIBRATED: ...``,
    ``FLIPPY: ...``) when a win rate is not a headline."""
    if not data:
        return None
    comparisons = []
    for c in data.get("comparisons") or []:
        comparisons.append(
            {
                "comparison": c["comparison"],
                "judge": c["judge"],
                "candidate": c["candidate"],
                "baseline": c["baseline"],
                "kappa": num(c["kappa"]),
                "kappa_band": c.get("kappa_band"),
                "n_labels": c["n_labels"],
                "calibrated": c["calibrated"],
                "win_rate": num(c["win_rate"]),
                "ci95": [num(c["win_rate_lo"]), num(c["win_rate_hi"])],
                "n": c["n"],
                "candidate_wins": c["candidate_wins"],
                "baseline_wins": c["baseline_wins"],
                "ties": c["ties"],
                "flip_rate": num(c["flip_rate"]),
                "headline_eligible": bool(c["headline_eligible"]),
                "flags": list(c.get("flags") or []),
            }
        )
    pointwise = [
        {
            "criterion": p["criterion"],
            "kappa": num(p.get("kappa")),
            "agreement": num(p.get("agreement")),
            "n_labels": p.get("n_labels"),
        }
        for p in data.get("pointwise") or []
        if p.get("n_labels") or p.get("n_numeric")
    ]
    return {
        "calibration": plain(data.get("calibration")),
        "comparisons": comparisons,
        "pointwise": pointwise,
    }


def _flags(judging: Mapping[str, Any] | None) -> tuple[bool, list[str]]:
    if not judging:
        return True, []
    flags = [
        f"{c['comparison']}: {reason}" for c in judging["comparisons"] for reason in c["flags"]
    ]
    return all(c["headline_eligible"] for c in judging["comparisons"]), flags


def _next(run_id: str, failed: int) -> list[str]:
    steps = []
    if failed:
        steps.append(
            f"get_run(run='{run_id}', detail='failures') pages the {failed} failing case(s)"
        )
    steps.append(f"compare_runs(a='baseline', b='{run_id}') for the paired deltas")
    return steps


def run_brief(
    result: RunResult, *, label: str | None = None, cap_usd: float | None = None
) -> dict[str, Any]:
    """What run_eval answers: the summary of the new run, never an output."""
    judging = judging_brief(result.pairwise)
    eligible, flags = _flags(judging)
    totals = totals_brief(result.totals)
    return plain(
        {
            "run_id": result.run_id,
            "status": result.status,
            "stop_reason": result.stop_reason,
            "suite": result.suite,
            "label": label,
            "matrix": [cell_brief(r) for r in result.summary],
            "totals": totals,
            "failures": totals["failed"],
            "cost_usd": totals["cost_usd"],
            "estimate_usd": num((result.estimate or {}).get("cost_usd")),
            "cap_usd": cap_usd,
            "requests": result.stats.get("requests"),
            "cache_hits": result.stats.get("cache_hits"),
            "errors": errors_brief(result.errors),
            "gate": gate_brief(result.gate),
            "headline_eligible": eligible,
            "flags": flags,
            "judging": judging,
            "next": _next(result.run_id, totals["failed"]),
            "notes": [NOTICE] if result.no_look else [],
            "no_look": result.no_look,
        }
    )


def _run_head(run: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "label", "suite", "status", "started_at", "finished_at", "n_planned")
    return {**{k: run.get(k) for k in keys}, "no_look": is_no_look(run)}


def show_brief(data: Mapping[str, Any]) -> dict[str, Any]:
    """``get_run(detail="summary")``: WarehouseView.show without cases or outputs."""
    run = data["run"]
    judging = judging_brief(data.get("pairwise"))
    eligible, flags = _flags(judging)
    totals = totals_brief(data["totals"])
    return plain(
        {
            "run": _run_head(run),
            "matrix": [cell_brief(r) for r in data["summary"]],
            "totals": totals,
            "criteria": [
                {
                    "criterion": c["criterion"],
                    "scorer": c["scorer"],
                    "required": c["required"],
                    "n": c["n"],
                    "passed": c["n_passed"],
                    "pass_rate": num(c["pass_rate"]),
                    "ci95": [num(c["pass_rate_lo"]), num(c["pass_rate_hi"])],
                    "scorer_errors": c.get("n_errors"),
                }
                for c in data.get("criteria") or []
            ],
            "errors": errors_brief(data.get("errors") or []),
            "gate": gate_brief(data.get("gate") or []),
            "headline_eligible": eligible,
            "flags": flags,
            "judging": judging,
            "next": _next(run["run_id"], totals["failed"]),
            **({"notice": NOTICE} if is_no_look(run) else {}),
        }
    )


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


def _failed_criteria(criteria: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [
        {
            "criterion": c["criterion"],
            "score": num(c["score"]),
            "required": c["required"],
            **({"error": clip(str(c["error"]), NOTE_CHARS)} if c.get("error") else {}),
        }
        for c in criteria or []
        if not c["passed"]
    ]


def case_row(row: Mapping[str, Any], *, output_chars: int | None = None) -> dict[str, Any]:
    """One case in a page: its verdict and failing criteria; with ``output_chars`` also the
    output (cut) and the expected answer."""
    out: dict[str, Any] = {
        "variant": row["variant"],
        "model": row["model"],
        "case_id": row["case_id"],
        "repeat": row["repeat"],
        "passed": row["passed"],
        "score": num(row["score"]),
        "error": clip(str(row["error"]), NOTE_CHARS) if row.get("error") else None,
        "failed": _failed_criteria(row.get("criteria")),
    }
    if output_chars is not None:
        output = row.get("output")
        out["output"] = clip(output, output_chars) if isinstance(output, str) else output
        out["output_chars"] = len(output) if isinstance(output, str) else 0
        expected = parsed(row.get("expected"))
        out["expected"] = (
            clip(expected, output_chars)
            if isinstance(expected, str)
            else clip_tree(expected, output_chars)
        )
    return out


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
    size = _limit(page_size, PAGE_SIZE, MAX_PAGE_SIZE, "page_size")
    if page < 1:
        raise UsageError(f"page starts at 1, got {page}")
    run_id = view.resolve(run)
    table = view.query("case_list", run_id=run_id, only_failures=failures, case_id=None)
    no_look = is_no_look(view.run(run_id))
    if no_look:
        preview_chars = 0
    total = table.num_rows
    pages = max(1, -(-total // size))
    rows = table.slice((page - 1) * size, size).to_pylist() if page <= pages else []
    detail = "failures" if failures else "full"
    return plain(
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
    limit = _limit(max_chars, MAX_CHARS, 1_000_000, "max_chars")
    run_id = view.resolve(run)
    rows = view.query("case_list", run_id=run_id, only_failures=False, case_id=case_id).to_pylist()
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
    out = clip_tree(plain(data), limit, cut=cut)
    out["truncated"] = cut
    return out


# -- compare, runs, baselines ---------------------------------------------------------------


def _delta(row: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    if row.get(f"{metric}_delta") is None and row.get(f"{metric}_a") is None:
        return None
    return {
        "a": num(row.get(f"{metric}_a")),
        "b": num(row.get(f"{metric}_b")),
        "delta": num(row.get(f"{metric}_delta")),
        "ci95": [num(row.get(f"{metric}_lo")), num(row.get(f"{metric}_hi"))],
    }


def delta_brief(row: Mapping[str, Any], *, cost: bool = False) -> dict[str, Any]:
    """One compared row (run, cell, criterion or slice): B minus A with its 95% interval."""
    out: dict[str, Any] = {
        "target": row.get("target"),
        "n": row.get("n"),
        "verdict": row.get("verdict"),
        "pass_rate": _delta(row, "pass_rate"),
        "score": _delta(row, "score"),
        "fixed": row.get("n_fixed"),
        "broken": row.get("n_broken"),
    }
    if cost:
        out["cost_usd"] = _delta(row, "cost_usd")
    return out


def compare_brief(
    data: Mapping[str, Any],
    *,
    slices: int = SLICES,
    judging: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Comparison.to_dict() without the standard-error columns: deltas with intervals,
    the worst ``slices`` slices and the movers."""
    all_slices = list(data.get("slices") or [])
    movers = [
        {
            k: (clip(str(v), NOTE_CHARS) if k == "error_b" and v else num(v))
            for k, v in m.items()
            if k
            in (
                "movement",
                "case_id",
                "variant",
                "model",
                "repeat",
                "score_a",
                "score_b",
                "criteria_broken",
                "criteria_fixed",
                "error_b",
            )
        }
        for m in data.get("movers") or []
    ]
    out = {
        "a": _run_head(data["a"]),
        "b": _run_head(data["b"]),
        "overall": delta_brief(data["overall"], cost=True),
        "cells": [
            {"variant": r["variant"], "model": r["model"], **delta_brief(r, cost=True)}
            for r in data.get("cells") or []
        ],
        "criteria": [delta_brief(r) for r in data.get("criteria") or []],
        "slices": [delta_brief(r) for r in all_slices[:slices]],
        "slices_total": len(all_slices),
        "movers": movers,
        "notes": list(data.get("notes") or []),
        "no_look": bool(data.get("no_look")),
    }
    if judging:
        out["calibration"] = dict(judging)
    return plain(out)


def _snapshot_uses_judges(run: Mapping[str, Any]) -> bool:
    snapshot = parsed(run.get("config_snapshot"))
    return isinstance(snapshot, dict) and bool(snapshot.get("pairwise") or snapshot.get("judges"))


def judging_for(view: WarehouseView, run_id: str) -> dict[str, Any] | None:
    """The calibration flags of a stored run that used judges (None otherwise)."""
    if not _snapshot_uses_judges(view.run(run_id)):
        return None
    judging = judging_brief(view.judging(run_id))
    eligible, flags = _flags(judging)
    return {"headline_eligible": eligible, "flags": flags, "judging": judging}


def compare_runs(
    agent: Agent, a: str, b: str = "latest", *, movers: int | None = None
) -> dict[str, Any]:
    view = agent.view()
    result = view.compare(a, b, movers=_limit(movers, MOVERS, 100, "movers"))
    data = result.to_dict()
    calibration = {}
    for side in ("a", "b"):
        flags = judging_for(view, data[side]["run_id"])
        if flags is not None:
            calibration[side] = flags
    return compare_brief(data, judging=calibration or None)


def list_runs(agent: Agent, limit: int | None = None) -> dict[str, Any]:
    """The newest runs first, with the pinned baselines; ``more`` says whether older runs
    were left out."""
    size = _limit(limit, LIST_RUNS, MAX_LIST_RUNS, "limit")
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
    return plain(
        {
            "runs": runs,
            "more": len(rows) > size,
            "baselines": {p["name"]: p["run_id"] for p in pins},
        }
    )


def set_baseline(agent: Agent, run: str, name: str = "baseline") -> dict[str, Any]:
    row = agent.view().set_baseline(run, name)
    keys = ("name", "run_id", "label", "status", "previous_run_id")
    return plain({"name": name, **{k: row.get(k) for k in keys if k in row}})


def render_prompt(
    agent: Agent, config_path: str, variant: str, case_id: str, *, max_chars: int | None = None
) -> dict[str, Any]:
    """One variant's messages for one case (no model call), redacted (known secrets and key
    shapes become ***), then long texts cut with a marker."""
    from evalwh import api

    limit = _limit(max_chars, MAX_CHARS, 1_000_000, "max_chars")
    data = api.render_prompt(agent.load(config_path), variant, case_id)
    cut: dict[str, int] = {}
    out = clip_tree(redact_tree(plain(data)), limit, cut=cut)
    out["truncated"] = cut
    return out


def query(agent: Agent, sql: str, limit: int | None = None) -> dict[str, Any]:
    """One read-only query (evalwh.analysis.readonly): columns once, rows as lists, at most
    ``limit`` rows (``truncated`` says more were left), long texts cut."""
    size = _limit(limit, QUERY_ROWS, MAX_QUERY_ROWS, "limit")
    table, more = agent.view().read_sql(sql, limit=size, mcp=True)  # mcp_query_timeout_s
    columns = table.column_names
    values = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [
        [clip_tree(plain(v), QUERY_CELL_CHARS) for v in row] for row in zip(*values, strict=True)
    ]
    return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": more}
