"""Start the viewer: check the bind address, make the token, print the URL, run uvicorn.

Like a notebook server, the printed URL carries the token (``?token=...``); opening it sets
a cookie, and the pages work from then on. On 127.0.0.1 reads need no token (writes still
do); on any other address every request does.
"""

from __future__ import annotations

import sys
import threading
import webbrowser
from typing import TYPE_CHECKING

from evalwh.viewer.limits import Limits, uvicorn_config
from evalwh.viewer.security import Guard, is_loopback, new_token

if TYPE_CHECKING:
    from evalwh.api.view import WarehouseView


def url_of(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(
    view: WarehouseView,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    open_browser: bool = False,
) -> None:
    """Serve ``view``'s warehouse until interrupted, within :class:`Limits`' defaults."""
    import uvicorn

    from evalwh.reports.labels import local_user
    from evalwh.viewer.app import create_app

    guard = Guard(host, port, token or new_token())
    limits = Limits()
    app = create_app(view, guard, labeller=local_user(), limits=limits)
    url = url_of(host, port, guard.token)
    where = (
        "this machine only" if is_loopback(host) else "the network: every request needs the token"
    )
    print(f"evalwh serve: {view.path} on {where}\n  {url}", file=sys.stderr, flush=True)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, [url]).start()
    uvicorn.Server(uvicorn_config(app, host, port, limits)).run()
