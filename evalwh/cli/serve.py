"""`evalwh serve`: the web viewer over the warehouse (docs/viewer.md). Parses, checks the
``viewer`` extra is installed, and calls :func:`evalwh.viewer.server.serve`."""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from evalwh.cli.analysis import _warehouse
from evalwh.cli.state import with_globals
from evalwh.errors import UsageError

EXTRA = "install the viewer extra: pip install 'evalwh[viewer]' (or uv run --extra viewer ...)"


@with_globals
def serve(
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, metavar="PORT", help="Port to listen on.")
    ] = 8000,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            help="Address to bind. Anything but loopback makes every request need the token.",
        ),
    ] = "127.0.0.1",
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the printed URL in a browser.")
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="EVALWH_VIEWER_TOKEN",
            help="The access token (default: a new random one, printed in the URL).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Browse the warehouse in a web browser: runs, compare, slices, a case's history,
    calibration, baselines and labelling; a running eval's page fills in live."""
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"`evalwh serve` needs {', '.join(missing)}: {EXTRA}")
    if token is not None and len(token) < 16:
        raise UsageError(
            "--token must have at least 16 characters (a guessable token guards nothing)"
        )
    from evalwh.viewer.server import serve as run_server

    run_server(_warehouse(), host=host, port=port, token=token, open_browser=open_browser)
