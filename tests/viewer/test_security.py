"""The viewer's guard (evalwh/viewer/security.py) and what it serves: the token / Host /
same-origin checks on every write, reads on a network address, no SQL from a page, a strict
content security policy, only the listed static files, and the vendored, pinned htmx."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from evalwh.viewer.app import STATIC
from tests.viewer.serving import ORIGIN, TOKEN, client

HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"  # pragma: allowlist secret (htmx 2.0.11)


def test_pages_forbid_inline_script_and_framing(wh: dict[str, Any]) -> None:
    r = client(wh["view"]).get("/")
    csp = r.headers["content-security-policy"]
    assert (
        "script-src 'self';" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    assert "frame-ancestors 'none'" in csp and r.headers["x-content-type-options"] == "nosniff"


# -- security ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("token", "headers", "status"),
    [
        (False, {"Origin": ORIGIN}, 403),  # no token
        (True, {"Origin": "http://evil.example"}, 403),  # another origin
        (True, {"Origin": "http://127.0.0.1:8001"}, 403),  # another port is another origin
        (True, {"Referer": "http://evil.example/x"}, 403),
        (True, {}, 403),  # neither Origin nor Referer
        (True, {"Origin": "null"}, 403),  # a sandboxed frame or file:// page
        (True, {"Origin": ORIGIN}, 200),
        (True, {"Referer": ORIGIN + "/runs/x"}, 200),
    ],
)
def test_every_write_needs_the_token_and_the_same_origin(
    wh: dict[str, Any], token: bool, headers: dict[str, str], status: int
) -> None:
    c = client(wh["view"], token=token)
    r = c.post("/baselines/pin", json={"run": wh["a"], "name": "sec"}, headers=headers)
    assert r.status_code == status, r.text
    pinned = {b["name"] for b in wh["view"].baselines()}
    assert ("sec" in pinned) == (status == 200)
    if "sec" in pinned:
        wh["view"].remove_baseline("sec")


def test_the_token_header_works_instead_of_the_cookie(wh: dict[str, Any]) -> None:
    c = client(wh["view"], token=False)
    r = c.post(
        "/baselines/pin",
        json={"run": wh["a"], "name": "hdr"},
        headers={"Origin": ORIGIN, "X-Evalwh-Token": TOKEN},
    )
    assert r.status_code == 200
    wh["view"].remove_baseline("hdr")
    wrong = {"Origin": ORIGIN, "X-Evalwh-Token": TOKEN[:-1] + "x"}
    assert c.post("/baselines/pin", json={"run": wh["a"]}, headers=wrong).status_code == 403


def test_on_a_network_address_every_read_needs_the_token(wh: dict[str, Any]) -> None:
    c = client(wh["view"], host="0.0.0.0", token=False)
    assert c.get("/runs.json").status_code == 401
    assert c.get("/?token=wrong").status_code == 403
    r = c.get(f"/runs.json?token={TOKEN}&status=completed", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/runs.json?status=completed"
    assert (
        "httponly" in r.headers["set-cookie"].lower()
        and "samesite=strict" in r.headers["set-cookie"].lower()
    )
    assert c.get("/runs.json").status_code == 200  # the cookie from the redirect


def test_on_loopback_reads_need_no_token_but_a_loopback_host_name(wh: dict[str, Any]) -> None:
    c = client(wh["view"], token=False)
    assert c.get("/runs.json").status_code == 200
    assert c.get("/runs.json", headers={"Host": "localhost:8000"}).status_code == 200
    # a DNS name rebound to 127.0.0.1 by another site's page is refused
    assert c.get("/runs.json", headers={"Host": "evil.example:8000"}).status_code == 400


def test_no_page_takes_sql(wh: dict[str, Any]) -> None:
    c = client(wh["view"])
    runs = c.get("/runs.json?suite=x' OR '1'='1").json()["runs"]
    assert runs == []  # a parameter, never SQL text
    assert c.get("/sql?q=select 1").status_code == 404


def test_only_the_listed_static_files_are_served(wh: dict[str, Any]) -> None:
    c = client(wh["view"])
    assert c.get("/static/app.py").status_code == 404
    assert c.get("/static/..%2Fapp.py").status_code == 404


# -- the vendored htmx -----------------------------------------------------------------------
def test_htmx_is_vendored_pinned_with_its_licence_and_all_js_is_small() -> None:
    htmx = STATIC["htmx.min.js"][0]
    assert hashlib.sha256(htmx.read_bytes()).hexdigest() == HTMX_SHA256
    assert "Zero-Clause BSD" in (htmx.parent / "htmx.LICENSE").read_text(encoding="utf-8")
    js = sum(path.stat().st_size for path, media in STATIC.values() if media == "text/javascript")
    assert js < 100_000, js
