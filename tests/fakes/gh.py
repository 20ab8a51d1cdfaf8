"""A stand-in for the GitHub CLI's ``gh api`` (https://cli.github.com/manual/gh_api) that the CI
recipe tests put on PATH as ``gh``: it appends its arguments to ``$FAKE_GH_LOG`` (a JSON line a
call) and sends the request to the fake forge at ``$FAKE_GH_API`` (tests/fakes/forge.py) with
``Authorization: token $GH_TOKEN``, as gh sends it to api.github.com.

What it takes, as gh does: ``api ENDPOINT``, ``-X/--method`` (GET, or POST once a field is
given), ``-F/--field key=value`` (``@file``: the file's text), ``-f/--raw-field key=value``,
``--paginate`` (one page here) and ``--jq/-q EXPR`` (through jq, strings printed raw). A reply
that is not 2xx prints ``gh: <message> (HTTP <status>)`` on stderr and exits 1. Any other gh
command exits 4 saying it is not faked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path


def main(argv: list[str]) -> int:
    with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    if not argv or argv[0] != "api":
        print(f"fake gh: `gh {' '.join(argv[:2])}` is not faked", file=sys.stderr)
        return 4
    method, fields, jq, endpoint = None, {}, None, None
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-X", "--method"):
            method = next(args)
        elif arg in ("-F", "--field", "-f", "--raw-field"):
            key, _, value = next(args).partition("=")
            if arg in ("-F", "--field") and value.startswith("@"):
                value = Path(value[1:]).read_text(encoding="utf-8")
            fields[key] = value
        elif arg in ("-q", "--jq"):
            jq = next(args)
        elif arg == "--paginate":
            pass
        elif endpoint is None:
            endpoint = arg
        else:
            print(f"fake gh: unexpected argument {arg!r}", file=sys.stderr)
            return 4
    assert endpoint is not None
    method = method or ("POST" if fields else "GET")
    request = urllib.request.Request(
        os.environ["FAKE_GH_API"] + "/" + endpoint.lstrip("/"),
        data=json.dumps(fields).encode() if fields else None,
        method=method,
        headers={
            "Authorization": f"token {os.environ.get('GH_TOKEN', '')}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request) as reply:
            text = reply.read().decode()
    except urllib.error.HTTPError as exc:
        message = json.loads(exc.read() or b"{}").get("message", "")
        print(f"gh: {message} (HTTP {exc.code})", file=sys.stderr)
        return 1
    if jq is None:
        sys.stdout.write(text)
        return 0
    return subprocess.run(["jq", "-r", jq], input=text, text=True, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
