"""The MCP tools: each one a thin call into evalwh.mcp.tools (which calls evalwh.api).

Every answer is a tool result whose ``structuredContent`` is the data and whose text is the
same data as compact JSON. An evalwh error (bad config, unknown run, refused SQL, a path
outside the root, a refused cost) comes back as a tool result with ``isError: true`` and the
error as data (``{"error": ..., "message": ...}``; a cost refusal adds ``"refused": true``,
``reason``, ``estimate_usd``, ``cap_usd`` and ``ceiling_usd``); the server keeps serving.

This module deliberately has no ``from __future__ import annotations``: the SDK reads the
tool signatures (their types import lazily inside :func:`build_server`) to build schemas.
:func:`publish` then makes every input schema strict (evalwh.mcp.arguments: unknown arguments
are refused, ``additionalProperties: false``; only integers, numbers and booleans sent as
exact strings are taken, ``"5"`` as 5), gives every tool its ``outputSchema``
(evalwh.mcp.outputs) and every tool sets all four hints (``HINTS``).

Configs are loaded through :meth:`evalwh.mcp.agent.Agent.load` (evalwh.config.confinement): every file
inside the root, and python scorers, the command provider and exec checks only when the
server was started with ``--allow-code``, which the tool descriptions state.
"""

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from evalwh import __version__
from evalwh.errors import CostRefusedError, EvalwhError
from evalwh.mcp import shaping, tools
from evalwh.mcp.agent import Agent

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult

log = logging.getLogger("evalwh.mcp")

INSTRUCTIONS = """\
evalwh evaluates LLM prompts x models and keeps every result in a DuckDB warehouse.
Start small: list_runs, or run_eval on an eval.yaml (it returns a summary, never outputs).
Drill down on demand: get_run(detail='failures', page=N), then get_case_result for one cell.
compare_runs(a='baseline', b='latest') gives paired deltas with 95% intervals.
query runs one read-only SQL statement (views: cell_summary, case_results; tables: runs,
cases, scores). Judge win rates with headline_eligible=false are UNCALIBRATED: do not report
them as results. Runs are cost-capped; a refusal says the estimate and the cap."""


def dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def ok(data: Any) -> "CallToolResult":
    from mcp.types import CallToolResult, TextContent

    data = shaping.plain(data)
    return CallToolResult(
        content=[TextContent(type="text", text=dump(data))],
        structured_content=data if isinstance(data, dict) else {"result": data},
    )


def refused(exc: EvalwhError) -> "CallToolResult":
    """An error result whose data is the error: ``{"error": <class>, "message": ...}`` (a
    ConfigError adds file, where, line, column, fix; a cost refusal is CostCapError.to_dict)."""
    from mcp.types import CallToolResult, TextContent

    data = shaping.plain(exc.to_dict())
    if isinstance(exc, CostRefusedError):
        data["refused"] = True
    if "message" not in data and "reason" not in data:
        data["message"] = str(exc)
    return CallToolResult(
        content=[TextContent(type="text", text=dump(data))],
        structured_content=data,
        is_error=True,
    )


def answer(call: Callable[[], Any]) -> "CallToolResult":
    """The tool result of ``call()``; an evalwh error becomes an error result."""
    try:
        return ok(call())
    except EvalwhError as exc:
        log.info("refused: %s", exc)
        return refused(exc)


def build_server(agent: Agent) -> "MCPServer[Any]":
    """The MCP server with every evalwh tool registered (nothing is started)."""
    import anyio
    import anyio.from_thread
    import anyio.lowlevel
    import anyio.to_thread
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import CallToolResult
    from pydantic import Field

    server: MCPServer[Any] = MCPServer(
        "evalwh",
        title="evalwh",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    reads = hints("reads")

    Run = Annotated[
        str,
        Field(description="A run id, a unique prefix, a label, 'latest' or a baseline name."),
    ]
    ConfigPath = Annotated[
        str,
        Field(
            description="An eval.yaml (or its folder) inside the server's root; relative paths "
            "start at the root."
        ),
    ]

    @server.tool(annotations=hints("runs"))
    async def run_eval(
        config_path: ConfigPath,
        ctx: Context,
        models: Annotated[
            list[str] | None, Field(description="Only these model ids (wildcards allowed).")
        ] = None,
        variants: Annotated[list[str] | None, Field(description="Only these variant ids.")] = None,
        cases: Annotated[list[str] | None, Field(description="Only these case ids.")] = None,
        label: Annotated[str | None, Field(description="A name to find this run by.")] = None,
        no_cache: Annotated[
            bool, Field(description="Bypass the response cache (and refresh it).")
        ] = False,
        max_cost_usd: Annotated[
            float | None,
            Field(
                description="The cost cap in USD (at most EVALWH_MCP_MAX_COST_CEILING, else "
                "refused). Default: the smaller of the config's max_cost_usd and "
                "EVALWH_MCP_MAX_COST."
            ),
        ] = None,
    ) -> CallToolResult:
        """Run an eval (blocking) and store every result; report progress as cells finish.

        Returns the summary: run_id, the matrix (pass rate with n and 95% interval per
        variant x model), totals, the failure count, cost, estimate and cap, the gate verdict
        and the judge calibration flags (headline_eligible, flags). Never model outputs: page
        them with get_run and get_case_result. Refuses, spending nothing, when the estimate
        is over the cap."""
        token = anyio.lowlevel.current_token()
        throttle = tools.ProgressThrottle()
        errors = [0]

        def progress(done: int, total: int, result: Any) -> None:
            errors[0] += getattr(result, "error", None) is not None
            if not throttle.due(done, total):
                return
            shown = f"{done}/{total}" if total > 0 else str(done)  # 0: a datasource's size
            message = f"{shown} cells" + (f", {errors[0]} error(s)" if errors[0] else "")
            try:
                anyio.from_thread.run(
                    ctx.report_progress, done, total or None, message, token=token
                )
            except Exception:  # a lost notification never stops a run
                log.debug("progress notification failed", exc_info=True)

        def work() -> CallToolResult:
            return answer(
                lambda: tools.run_eval(
                    agent,
                    config_path,
                    models=models or (),
                    variants=variants or (),
                    cases=cases or (),
                    label=label,
                    no_cache=no_cache,
                    max_cost_usd=max_cost_usd,
                    progress=progress,
                )
            )

        return await anyio.to_thread.run_sync(work)

    @server.tool(annotations=reads)
    def get_run(
        run: Run = "latest",
        detail: Annotated[
            Literal["summary", "failures", "full"],
            Field(
                description="summary: the matrix, totals, criteria, gate and flags; failures: a "
                "page of failing cases (no outputs); full: a page of all cases with outputs cut."
            ),
        ] = "summary",
        page: Annotated[int, Field(ge=1, description="Page number (failures, full).")] = 1,
        page_size: Annotated[
            int | None, Field(ge=1, le=shaping.MAX_PAGE_SIZE, description="Cases per page.")
        ] = None,
    ) -> CallToolResult:
        """A stored run: its summary, or one page of its cases. Pages carry total, pages and
        next_page (null on the last page)."""
        return answer(lambda: tools.get_run(agent, run, detail, page, page_size))

    @server.tool(annotations=reads)
    def get_case_result(
        run: Run,
        variant: str,
        model: str,
        case_id: str,
        repeat: Annotated[int, Field(ge=0, description="The repeat index (0 unless sampled).")] = 0,
        max_chars: Annotated[
            int | None,
            Field(ge=1, description=f"Cut texts longer than this (default {shaping.MAX_CHARS})."),
        ] = None,
    ) -> CallToolResult:
        """One cell in full: output, rendered prompt, vars, expected, every criterion with its
        details. A text longer than max_chars ends with '…[truncated: N of M chars]' and
        truncated maps each cut field to its full length."""
        return answer(
            lambda: tools.case_brief(
                agent.view(), run, variant, model, case_id, repeat=repeat, max_chars=max_chars
            )
        )

    @server.tool(annotations=reads)
    def compare_runs(
        a: Annotated[str, Field(description="The run to compare against (e.g. 'baseline').")],
        b: Annotated[str, Field(description="The run to judge.")] = "latest",
        movers: Annotated[
            int | None, Field(ge=0, le=100, description="How many moved cases to list.")
        ] = None,
    ) -> CallToolResult:
        """Run b minus run a, paired on (variant, model, case_id, repeat): pass-rate and score
        deltas with 95% intervals overall, per cell, criterion and the worst slices, and the
        cases that moved."""
        return answer(lambda: tools.compare_runs(agent, a, b, movers=movers))

    @server.tool(annotations=hints("replaces"))
    def write_report(
        run: Run = "latest",
        against: Annotated[
            str | None,
            Field(description="Write the compare page of run against this run instead."),
        ] = None,
        path: Annotated[
            str | None,
            Field(
                description="Where to write the .html file, inside the server's root "
                "(default: reports/<run id>.html beside the warehouse)."
            ),
        ] = None,
    ) -> CallToolResult:
        """Write a run's self-contained HTML report (or, with against, the compare page) for a
        person to open, and return its path and size; the page itself is not returned."""
        return answer(lambda: tools.write_report(agent, run, against=against, path=path))

    @server.tool(annotations=reads)
    def list_runs(
        limit: Annotated[
            int | None, Field(ge=1, le=shaping.MAX_LIST_RUNS, description="How many runs.")
        ] = None,
    ) -> CallToolResult:
        """The newest runs first (pass rate with n, errors, cost) and the pinned baselines;
        more=true when older runs were left out."""
        return answer(lambda: tools.list_runs(agent, limit))

    @server.tool(annotations=hints("replaces"))
    def set_baseline(
        run: Run,
        name: Annotated[str, Field(description="The baseline's name.")] = "baseline",
    ) -> CallToolResult:
        """Pin a run as the baseline (or another name); the name then works as a run
        reference, e.g. compare_runs(a='baseline')."""
        return answer(lambda: tools.set_baseline(agent, run, name))

    @server.tool(annotations=reads)
    def render_prompt(
        config_path: ConfigPath,
        variant: str,
        case_id: str,
        max_chars: Annotated[
            int | None,
            Field(ge=1, description=f"Cut texts longer than this (default {shaping.MAX_CHARS})."),
        ] = None,
    ) -> CallToolResult:
        """The messages one variant renders for one case, exactly as a run would send them.
        No model is called and nothing is written."""
        return answer(
            lambda: tools.render_prompt(agent, config_path, variant, case_id, max_chars=max_chars)
        )

    @server.tool(annotations=reads)
    def query(
        sql: Annotated[
            str,
            Field(
                description="One read-only statement: SELECT, WITH, FROM, VALUES, DESCRIBE, "
                "SHOW or SUMMARIZE. Writes, ATTACH, COPY, SET and file access are refused. "
                "Bounded: 10 s (setting mcp_query_timeout_s) and 1GB of memory "
                "(query_memory_limit); a query over the bound is interrupted."
            ),
        ],
        limit: Annotated[
            int | None,
            Field(
                ge=1,
                le=shaping.MAX_QUERY_ROWS,
                description=f"At most this many rows (default {shaping.QUERY_ROWS}).",
            ),
        ] = None,
    ) -> CallToolResult:
        """Read-only SQL over the warehouse: columns once, rows as lists, truncated=true when
        more rows were left (add LIMIT/OFFSET or aggregate)."""
        return answer(lambda: tools.query(agent, sql, limit))

    code = (
        "This server was started with --allow-code: python scorers, the command provider and "
        "exec checks run."
        if agent.allow_code
        else "Python scorers, the command provider and exec checks are refused: this server "
        "was not started with --allow-code."
    )
    for tool in server._tool_manager.list_tools():  # the SDK has no public way to edit one
        if tool.name in CONFIG_TOOLS:
            tool.description = f"{tool.description.rstrip()}\n\nEvery file the config names must lie inside the server's root. {code}"
    publish(server)
    return server


CONFIG_TOOLS = ("run_eval", "render_prompt")


HINTS = {
    # reads the warehouse or the root's files; changes nothing; talks to no one
    "reads": {"read_only": True, "destructive": False, "idempotent": True, "open_world": False},
    # run_eval: adds a run (never changes one), calls model providers and spends money; each
    # call makes a new run
    "runs": {"read_only": False, "destructive": False, "idempotent": False, "open_world": True},
    # set_baseline replaces the pin of the same name; write_report overwrites the .html file
    # at its path; the same call twice leaves the same state
    "replaces": {"read_only": False, "destructive": True, "idempotent": True, "open_world": False},
}


def hints(kind: str) -> Any:
    """The ``annotations`` of a tool of this kind (a key of HINTS), all four hints set."""
    from mcp.types import ToolAnnotations

    given = HINTS[kind]
    return ToolAnnotations(
        read_only_hint=given["read_only"],
        destructive_hint=given["destructive"],
        idempotent_hint=given["idempotent"],
        open_world_hint=given["open_world"],
    )


def publish(server: "MCPServer[Any]") -> None:
    """Every tool takes its arguments as evalwh.mcp.arguments says (its argument model forbids
    extras, validates strictly and takes exact strings for integers, numbers and booleans;
    its input schema says ``additionalProperties: false``) and publishes its
    ``outputSchema`` (evalwh.mcp.outputs)."""
    from evalwh.mcp.arguments import strict_model
    from evalwh.mcp.outputs import OUTPUT_SCHEMAS

    for tool in server._tool_manager.list_tools():
        strict = strict_model(tool.fn_metadata.arg_model)
        tool.fn_metadata.arg_model = strict  # type: ignore[assignment]
        tool.parameters = strict.model_json_schema(by_alias=True)
        tool.fn_metadata.output_schema = OUTPUT_SCHEMAS[tool.name]


def serve(
    output_dir: str | Path | None = None,
    *,
    warehouse: str | None = None,
    allow_code: bool = False,
) -> None:
    """Serve the tools over stdio until the client closes the connection.

    The server works in its root (EVALWH_MCP_ROOT, default: the working folder), as if
    started there: relative settings such as the default ``.evalwh`` resolve against it, so a
    client that starts servers in an arbitrary folder still finds the project's warehouse.
    ``output_dir`` (``-o``) and a ``warehouse`` file (``--warehouse``) are resolved against
    the folder the command was started in; a ``ducklake:`` target is kept as it is.
    """
    import os

    if output_dir is not None:
        output_dir = Path(output_dir).expanduser().resolve()
    if warehouse is not None and not warehouse.startswith("ducklake:"):
        warehouse = str(Path(warehouse).expanduser().resolve())
    agent = Agent.from_env(output_dir, warehouse=warehouse, allow_code=allow_code)
    os.chdir(agent.root)
    agent.cwd = agent.root
    build_server(agent).run("stdio")
