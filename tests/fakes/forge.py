"""A fake code forge on 127.0.0.1: the pull-request comment routes of the GitHub REST API and
the merge-request note routes of the GitLab REST API, enough for docs/ci.md's recipes to find
their marked comment and update it (or create it when there is none).

GitHub (https://docs.github.com/en/rest/issues/comments):
``GET /repos/{owner}/{repo}/issues/{number}/comments`` (a JSON array of {id, body, ...}),
``POST`` there with JSON {"body"} (201, the comment), and
``PATCH /repos/{owner}/{repo}/issues/comments/{id}`` with JSON {"body"} (200, the comment);
authorised by ``Authorization: Bearer TOKEN`` (or ``token TOKEN``).

GitLab (https://docs.gitlab.com/api/notes/#merge-requests):
``GET /api/v4/projects/{id}/merge_requests/{iid}/notes`` (a JSON array of {id, body, ...}),
``POST`` there with ``body`` (form-encoded or JSON; 201, the note) and
``PUT /api/v4/projects/{id}/merge_requests/{iid}/notes/{note_id}`` (200, the note);
authorised by ``PRIVATE-TOKEN: TOKEN``.

A wrong or missing token gets 401, an unknown route 404. ``forge.comments`` holds the
comments per thread (``("github", "o/r", 7)`` or ``("gitlab", "42", 3)``), ``forge.requests``
every (method, path) in order.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GITHUB_THREAD = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
GITHUB_COMMENT = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
GITLAB_THREAD = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes$")
GITLAB_NOTE = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$")


class FakeForge:
    """The server; a context manager that starts it on a free port and stops it."""

    def __init__(self, token: str = "forge-token") -> None:
        self.token = token
        self.comments: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str]] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, thread: tuple[str, str, int], body: str) -> dict[str, Any]:
        """A comment posted by someone else (or by an earlier pipeline)."""
        with self._lock:
            self._next_id += 1
            comment = {"id": self._next_id, "body": body}
            self.comments.setdefault(thread, []).append(comment)
            return comment

    def __enter__(self) -> FakeForge:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(forge: FakeForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, data: object) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _body(self) -> str:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            if "json" in (self.headers.get("Content-Type") or ""):
                return str(json.loads(raw)["body"])
            return parse_qs(raw, keep_blank_values=True)["body"][0]

        def _authorised(self, path: str) -> bool:
            if path.startswith("/api/v4/"):
                return self.headers.get("PRIVATE-TOKEN") == forge.token
            given = self.headers.get("Authorization") or ""
            return given in (f"Bearer {forge.token}", f"token {forge.token}")

        def _route(self, method: str) -> None:
            path = urlsplit(self.path).path
            forge.requests.append((method, path))
            if not self._authorised(path):
                self._send(401, {"message": "401 Unauthorized"})
                return
            thread = GITHUB_THREAD.match(path) or GITLAB_THREAD.match(path)
            if thread:
                key = (
                    "github" if path.startswith("/repos/") else "gitlab",
                    thread[1],
                    int(thread[2]),
                )
                if method == "GET":
                    self._send(200, forge.comments.get(key, []))
                elif method == "POST":
                    self._send(201, forge.add(key, self._body()))
                else:
                    self._send(404, {"message": "404 Not Found"})
                return
            one = GITHUB_COMMENT.match(path) or GITLAB_NOTE.match(path)
            allowed = "PATCH" if path.startswith("/repos/") else "PUT"
            if one and method == allowed:
                wanted = int(one.groups()[-1])
                for comments in forge.comments.values():
                    for comment in comments:
                        if comment["id"] == wanted:
                            comment["body"] = self._body()
                            self._send(200, comment)
                            return
            self._send(404, {"message": "404 Not Found"})

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PATCH(self) -> None:
            self._route("PATCH")

        def do_PUT(self) -> None:
            self._route("PUT")

    return Handler
