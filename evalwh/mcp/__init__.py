"""``evalwh mcp``: a stdio MCP server over evalwh's core API (the optional extra ``evalwh[mcp]``).

The server only registers tools; what they answer is shaped in evalwh.mcp.briefs and the cost
guard lives in evalwh.engine.budget, so nothing here is logic of its own. Importing this package
does not import the MCP SDK: evalwh.mcp.server does, inside ``build_server``.
"""

from __future__ import annotations

TOOLS = (
    "run_eval",
    "get_run",
    "get_case_result",
    "compare_runs",
    "list_runs",
    "set_baseline",
    "render_prompt",
    "query",
    "write_report",
)

__all__ = ["TOOLS"]
