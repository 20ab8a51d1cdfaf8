"""Real servers on loopback for DuckLake tests: PostgreSQL (the catalog) and moto (S3).

PostgreSQL comes from Debian's ``postgresql`` package (``.ci/run`` installs it): ``initdb``
into a temp folder and ``pg_ctl -w`` on a free port with ``listen_addresses=127.0.0.1``, as
the ``postgres`` user when we are root (PostgreSQL refuses root), with password
authentication so the ``EVALWH_PG_PASSWORD`` path is exercised. moto's S3 server runs as a
subprocess on another free port. Both are started once per test session and stopped after.

When PostgreSQL is missing the tests that need it skip with the reason, unless
``EVALWH_REQUIRE_SYSTEM_PARTS=1`` (CI), where they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_USER = "evalwh"
PG_PASSWORD = "pg-test-password-7c1e"
AWS_KEY = "AKIDLAKETEST"
AWS_SECRET = "lake-test-secret-key-9f3b"
REQUIRE = os.environ.get("EVALWH_REQUIRE_SYSTEM_PARTS") == "1"
_names = itertools.count(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def missing(reason: str) -> None:
    """Skip, or fail where the system parts are required (CI)."""
    if REQUIRE:
        pytest.fail(f"{reason} (EVALWH_REQUIRE_SYSTEM_PARTS=1)")
    pytest.skip(reason)


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Postgres:
    bin: Path
    folder: Path
    port: int
    as_user: list[str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PGPASSWORD": PG_PASSWORD}
        return subprocess.run(
            [*self.as_user, *args], capture_output=True, text=True, env=env, check=False
        )

    def create_database(self) -> str:
        name = f"lake_{os.getpid()}_{next(_names)}"
        done = self.run(
            str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER, name
        )
        assert done.returncode == 0, done.stderr
        return name

    def stop(self) -> None:
        self.run(
            str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop"
        )
        shutil.rmtree(self.folder, ignore_errors=True)

    def save(self, dest: Path) -> None:
        """Shut down cleanly and copy the cluster's data folder to ``dest`` (owners and modes
        kept), for :func:`start_postgres` to start a copy of it later; then stop."""
        done = self.run(str(self.bin / "pg_ctl"), "-w", "-D", str(self.folder / "data"), "stop")
        assert done.returncode == 0, done.stderr
        subprocess.run(["cp", "-a", str(self.folder / "data"), str(dest)], check=True)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres(saved: Path | None = None) -> Postgres:
    """A cluster in a temporary folder: a fresh one, or a copy of the data folder that
    :meth:`Postgres.save` wrote to ``saved`` (its databases, users and password as saved)."""
    binary = pg_bin()
    if binary is None:
        missing("PostgreSQL is not installed (apt-get install postgresql)")
    assert binary is not None
    folder = Path(tempfile.mkdtemp(prefix="evalwh-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        if shutil.which("runuser") is None:
            missing("running as root without runuser: cannot start PostgreSQL as postgres")
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    pwfile = folder / "pw"
    pwfile.write_text(PG_PASSWORD + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres")
    port = free_port()
    pg = Postgres(binary, folder, port, as_user)
    if saved is not None:
        subprocess.run(["cp", "-a", str(saved), str(folder / "data")], check=True)
    else:
        init = pg.run(
            str(binary / "initdb"),
            "-D",
            str(folder / "data"),
            "-U",
            PG_USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--no-sync",
        )
        assert init.returncode == 0, init.stderr
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off"
    started = pg.run(
        str(binary / "pg_ctl"), "-w", "-D", str(folder / "data"), "-l", str(folder / "log"),
        "-o", options, "start",
    )  # fmt: skip
    if started.returncode != 0:
        log = (folder / "log").read_text() if (folder / "log").exists() else ""
        raise AssertionError(f"pg_ctl start failed: {started.stderr}\n{log}")
    return pg


@dataclass
class S3:
    port: int
    proc: subprocess.Popen[bytes]
    buckets: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://{self.endpoint}",
            aws_access_key_id=AWS_KEY,
            aws_secret_access_key=AWS_SECRET,
            region_name="us-east-1",
        )

    def create_bucket(self) -> str:
        name = f"lake-{os.getpid()}-{next(_names)}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        client = self.client()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_s3() -> S3:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return S3(port, proc)
        except OSError:
            if proc.poll() is not None:
                raise AssertionError("moto_server exited at start") from None
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("moto_server did not listen within 60 s")


@dataclass
class Lake:
    """One fresh lake: its own PostgreSQL database and S3 bucket."""

    pg: Postgres
    s3: S3
    database: str
    bucket: str

    @property
    def target(self) -> str:
        return f"ducklake:postgres:dbname={self.database} host=127.0.0.1 port={self.pg.port} user={PG_USER}"

    @property
    def data_path(self) -> str:
        return f"s3://{self.bucket}/evalwh/"

    def settings_yaml(self, indent: str = "") -> str:
        """The ``warehouse:`` and ``lake:`` settings, as lines of YAML."""
        lines = [
            f'warehouse: "{self.target}"',
            "lake:",
            f"  data_path: {self.data_path}",
            f'  s3: {{endpoint: "{self.s3.endpoint}", region: us-east-1, url_style: path, '
            "use_ssl: false}",
        ]
        return "".join(f"{indent}{line}\n" for line in lines)

    def env(self) -> dict[str, str]:
        """Credentials, as the environment gives them (never in a config)."""
        return {
            "EVALWH_PG_PASSWORD": PG_PASSWORD,
            "AWS_ACCESS_KEY_ID": AWS_KEY,
            "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        }

    def user_config(self, config_dir: Path) -> None:
        """Point every evalwh command at the lake through the user config file."""
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.yaml").write_text(self.settings_yaml(), encoding="utf-8")


def lake_connection(lake: Lake):  # type: ignore[no-untyped-def]
    """A plain DuckDB connection to the lake, for assertions (extensions from evalwh[lake])."""
    from evalwh.warehouse import lake as lakemod

    target = lakemod.parse_target(
        lake.target,
        {
            "data_path": lake.data_path,
            "s3": {
                "endpoint": lake.s3.endpoint,
                "region": "us-east-1",
                "url_style": "path",
                "use_ssl": False,
            },
        },
        base=Path.cwd(),
        where="test",
        secret=lake.env().get,
    )
    return lakemod.connect(target, read_only=True, memory_limit="1GB")
