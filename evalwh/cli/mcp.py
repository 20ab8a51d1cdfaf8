"""`evalwh mcp`: serve evalwh to agents over stdio (needs the extra `evalwh[mcp]`)."""

from __future__ import annotations

from typing import Annotated

import typer

from evalwh.cli.state import STATE, with_globals

INSTALL_HINT = (
    "`evalwh mcp` needs the MCP SDK: install evalwh[mcp] "
    "(pip install 'evalwh[mcp]', or uvx --from 'evalwh[mcp]' evalwh mcp)"
)


@with_globals
def mcp(
    allow_code: Annotated[
        bool,
        typer.Option(
            "--allow-code",
            help="Let agents run configs with python scorers, the command provider and exec "
            "checks (refused by default).",
        ),
    ] = False,
) -> None:
    """Serve the evalwh tools to an MCP client over stdio (needs evalwh[mcp]).

    Configs, and every file they name, must lie inside EVALWH_MCP_ROOT (default: the working
    folder); features that run code are refused unless --allow-code is given. Runs are
    capped at EVALWH_MCP_MAX_COST (default $1.00), requests above
    EVALWH_MCP_MAX_COST_CEILING (default $5.00) are refused. See docs/mcp.md.
    """
    from evalwh.errors import UsageError

    try:
        import mcp.server.mcpserver  # noqa: F401  (the SDK, not this command)
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    from evalwh.mcp.server import serve

    serve(**STATE.where(), allow_code=allow_code)
