"""Helpers of the viewer tests: a free port, `evalwh serve` in a subprocess, and an eval on
mock models slow enough to watch (a live run); the viewer app in a TestClient with the
token (``client``) and a same-origin write (``post``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from evalwh.viewer.app import create_app
from evalwh.viewer.security import Guard
from tests.conftest import QUICKSTART

TOKEN = "test-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]

    def client(self, *, token: bool = True) -> httpx.Client:
        """A client of the server; ``token`` sets the cookie the printed URL would set."""
        client = httpx.Client(base_url=self.url, timeout=30)
        if token:
            client.get(f"/?token={TOKEN}")
        return client


@contextmanager
def serving(output_dir: Path, *extra: str) -> Iterator[Server]:
    """`evalwh -o OUTPUT_DIR serve` on a free loopback port until the block ends."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalwh.cli.main",
            "-o",
            str(output_dir),
            "serve",
            "--port",
            str(port),
            "--token",
            TOKEN,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:  # until it answers or exits (pytest-timeout bounds a hang)
            try:
                httpx.get(url + "/runs.json", timeout=2)
                break
            except httpx.TransportError:
                if process.poll() is not None:
                    raise AssertionError(
                        f"the server did not start: {process.communicate()}"
                    ) from None
                time.sleep(0.1)
        yield Server(url, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def slow_quickstart(folder: Path, *, latency_ms: int = 300, concurrency: int = 1) -> Path:
    """The quickstart with every answer taking ``latency_ms`` and few at a time: 48 answers
    over a few seconds, flushed about once a second."""
    target = folder / "slow"
    shutil.copytree(QUICKSTART, target, ignore=shutil.ignore_patterns(".evalwh", "__pycache__"))
    config = target / "eval.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["settings"]["concurrency"] = concurrency
    for model in data["models"]:
        model["mock"]["latency_ms"] = latency_ms
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return config


def start_run(config: Path, output_dir: Path) -> subprocess.Popen[str]:
    """`evalwh run` in its own process (it exits 1 when a threshold fails: not an error here)."""
    return subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "-o", str(output_dir), "-q", "run", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


ORIGIN = "http://127.0.0.1:8000"


def client(view: Any, host: str = "127.0.0.1", *, token: bool = True) -> Any:
    from fastapi.testclient import TestClient

    c = TestClient(create_app(view, Guard(host, 8000, TOKEN), labeller="tester"), base_url=ORIGIN)
    if token:
        c.cookies.set("evalwh_token_8000", TOKEN)
    return c


def post(c: Any, url: str, data: dict[str, Any], **headers: str) -> Any:
    return c.post(url, json=data, headers={"Origin": ORIGIN, **headers})


@contextmanager
def uvicorn_serving(app: Any, limits: Any) -> Iterator[tuple[str, int]]:
    """``app`` under uvicorn in a thread, with the config `evalwh serve` builds
    (``limits.uvicorn_config``), on a free loopback port until the block ends."""
    import threading

    import uvicorn

    from evalwh.viewer.limits import uvicorn_config

    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:  # pytest-timeout bounds a hang
            if not thread.is_alive():
                raise AssertionError("the server did not start")
            time.sleep(0.01)
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def read_all(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (the socket's timeout bounds it)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def gated_eval(folder: Path, n_cases: int) -> tuple[Path, Path]:
    """An eval of ``n_cases`` cases (c0000, c0001, ...) on one mock model whose scorer holds
    every answer until a gate file exists: the run shows as live and stores nothing until the
    test creates the gate (config, gate). Counting, not timing: nothing depends on speed."""
    target = folder / "gated"
    target.mkdir()
    gate = target / "open"
    rows = ["id,question,expected"] + [f"c{i:04d},What is {i} + 0?,{i}" for i in range(n_cases)]
    (target / "cases.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (target / "gate.py").write_text(
        "import time\nfrom pathlib import Path\n\n"
        f"GATE = Path({str(gate)!r})\n\n\n"
        "def held(output, case):\n"
        "    while not GATE.exists():\n"
        "        time.sleep(0.05)\n"
        "    return True\n",
        encoding="utf-8",
    )
    config = target / "eval.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "gated",
                "settings": {"concurrency": 16},
                "models": [
                    {"id": "mock", "provider": "mock", "mock": {"default": "{{ expected }}"}}
                ],
                "variants": [
                    {"id": "plain", "messages": [{"role": "user", "content": "{{ question }}"}]}
                ],
                "cases": [{"file": "cases.csv"}],
                "scorecard": [
                    {
                        "name": "held",
                        "type": "python",
                        "function": "gate.py:held",
                        "timeout_s": 600,
                    },
                    {"name": "right", "type": "contains"},
                ],
            },
            sort_keys=False,
        ),
        encoding="utf-8",
    )
    return config, gate
