"""Who may read and write through the viewer.

- The server binds 127.0.0.1 unless told otherwise; any other host needs a token (generated
  and printed in the URL, like a notebook server's, or given with ``--token``).
- Reads on a non-loopback bind, and every write anywhere, need the token: from the cookie
  the ``?token=`` URL sets, or an ``X-Evalwh-Token`` header.
- Every write must also be same-origin: its ``Origin`` (else ``Referer``) names this server.
  A request with neither is refused, so a form on another site cannot post here (CSRF).
- On a loopback bind the ``Host`` header must name the loopback address, so a page on another
  site cannot reach the server through a DNS name rebound to 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

COOKIE = "evalwh_token"
HEADER = "x-evalwh-token"
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class Guard:
    """The checks of one server: its bind address, port and token."""

    host: str
    port: int
    token: str
    reads_need_token: bool = field(init=False)

    def __post_init__(self) -> None:
        self.reads_need_token = not is_loopback(self.host)

    @property
    def cookie(self) -> str:
        return f"{COOKIE}_{self.port}"  # two viewers on one machine keep their own

    def host_allowed(self, host_header: str | None) -> bool:
        """On a loopback bind only loopback names reach the server (DNS rebinding)."""
        if self.reads_need_token:  # bound to a network address: the token guards it
            return True
        if not host_header:
            return False
        name = urlsplit(f"//{host_header}").hostname or ""
        return is_loopback(name)

    def token_ok(self, given: str | None) -> bool:
        return bool(given) and secrets.compare_digest(str(given), self.token)

    def same_origin(self, origin: str | None, referer: str | None, host_header: str | None) -> bool:
        """The write comes from a page of this server: Origin (else Referer) names the Host."""
        source = origin if origin and origin != "null" else referer
        if not source or not host_header:
            return False
        parts = urlsplit(source)
        return parts.scheme in ("http", "https") and parts.netloc == host_header
