"""Trajectory scorers: what a cell's tool calls were, not only its final answer (docs/tools.md).

A trajectory scorer's function takes ``(output, case, calls)``: ``calls`` is the list of the
tool calls the model made, in order, each ``{"name", "arguments", "turn", "args_valid",
"error", "result"}`` (``args_valid`` None for a call that never ran: the loop stopped at a
bound, or a single request whose answer called tools). The scorecard hands them over for a
function marked ``trajectory = True`` (evalwh.scoring.scorecard).

- ``tool-called`` (``tool``, optional ``args``: a subset the arguments must hold, optional
  ``args_schema``: a JSON Schema they must fit): at least one such call.
- ``tool-not-called`` (``tool``): no call of it.
- ``tool-order`` (``tools``, ``order: subsequence|exact``): the calls' names hold ``tools`` in
  that order (others between allowed), or are exactly ``tools``.
- ``max-tool-calls`` (``max``): at most that many calls.
- ``args-valid``: the share of the calls checked against their schema whose arguments fit (1
  when none was checked); passes at the criterion's ``threshold``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, Criterion
from evalwh.scoring.base import ScoreResult, option_error

Calls = list[dict[str, Any]]
TrajectoryFn = Callable[[str, Case, Calls | None], ScoreResult]


def _trajectory(fn: TrajectoryFn) -> TrajectoryFn:
    fn.trajectory = True  # type: ignore[attr-defined]  # the scorecard passes the calls
    return fn


def _tool(criterion: Criterion, file: str) -> str:
    tool = criterion.options.get("tool")
    if not isinstance(tool, str) or not tool:
        raise option_error(
            criterion, file, "tool", "needs `tool`: a tool's name", "write e.g. `tool: search`"
        )
    return tool


def _yes(ok: bool, **details: Any) -> ScoreResult:
    return ScoreResult(1.0 if ok else 0.0, passed=ok, details=details)


def _names(calls: Calls | None) -> list[str]:
    return [str(c.get("name")) for c in calls or ()]


def tool_called(criterion: Criterion, root: Path, file: str) -> TrajectoryFn:
    tool = _tool(criterion, file)
    wanted = criterion.options.get("args") or {}
    validator = None
    if criterion.options.get("args_schema") is not None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        schema = criterion.options["args_schema"]
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise option_error(
                criterion,
                file,
                "args_schema",
                f"not a valid JSON Schema: {exc.message}",
                "write a JSON Schema of the arguments",
            ) from None
        validator = Draft202012Validator(schema)

    def fits(call: dict[str, Any]) -> bool:
        args = call.get("arguments")
        if wanted and not (
            isinstance(args, dict) and all(k in args and args[k] == v for k, v in wanted.items())
        ):
            return False
        return validator is None or validator.is_valid(args)

    @_trajectory
    def score(output: str, case: Case, calls: Calls | None) -> ScoreResult:
        named = [c for c in calls or () if c.get("name") == tool]
        matching = [c for c in named if fits(c)]
        return _yes(bool(matching), calls=len(named), matching=len(matching))

    return score


def tool_not_called(criterion: Criterion, root: Path, file: str) -> TrajectoryFn:
    tool = _tool(criterion, file)

    @_trajectory
    def score(output: str, case: Case, calls: Calls | None) -> ScoreResult:
        n = _names(calls).count(tool)
        return _yes(n == 0, calls=n)

    return score


def tool_order(criterion: Criterion, root: Path, file: str) -> TrajectoryFn:
    tools = criterion.options.get("tools")
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) for t in tools):
        raise option_error(
            criterion,
            file,
            "tools",
            "needs `tools`: the tool names in the order they must be called",
            "write e.g. `tools: [search, fetch]`",
        )
    exact = criterion.options.get("order", "subsequence") == "exact"

    @_trajectory
    def score(output: str, case: Case, calls: Calls | None) -> ScoreResult:
        names = _names(calls)
        if exact:
            return _yes(names == tools, called=names)
        found = iter(names)
        return _yes(all(t in found for t in tools), called=names)  # consumes: in order

    return score


def max_tool_calls(criterion: Criterion, root: Path, file: str) -> TrajectoryFn:
    most = criterion.options.get("max")
    if isinstance(most, bool) or not isinstance(most, int) or most < 0:
        raise option_error(
            criterion,
            file,
            "max",
            f"`max` must be a whole number of calls, got {most!r}",
            "write e.g. `max: 5`",
        )

    @_trajectory
    def score(output: str, case: Case, calls: Calls | None) -> ScoreResult:
        n = len(calls or ())
        return _yes(n <= most, calls=n, max=most)

    return score


def args_valid(criterion: Criterion, root: Path, file: str) -> TrajectoryFn:
    @_trajectory
    def score(output: str, case: Case, calls: Calls | None) -> ScoreResult:
        checked = [c for c in calls or () if c.get("args_valid") is not None]
        valid = sum(1 for c in checked if c["args_valid"])
        share = valid / len(checked) if checked else 1.0
        return ScoreResult(share, details={"checked": len(checked), "valid": valid})

    return score
