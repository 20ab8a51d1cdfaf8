"""``evalwh mcp``: a stdio MCP server over evalwh's core API (the optional extra ``evalwh[mcp]``).

The server (``server.py``) only registers tools, with the arguments ``arguments.py`` accepts
(strict, plus exact strings for integers, numbers and booleans) and the output schemas of
``outputs.py``. Each tool is one function in ``tools.py``
that bounds its arguments, calls evalwh.api and shapes the answer with ``briefs.py`` (the
summaries) and ``shaping.py`` (plain JSON, cut texts, redaction); ``agent.py`` confines the
client to its root. The cost guard lives in evalwh.engine.budget. Importing this package
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
