"""Scale-out (docs/scale-out.md, docs/ci.md): several machines or processes writing one
shared DuckLake warehouse and one run split into shards. Sharded runs through the CLI (the
last shard concludes the run once; `evalwh finish`, `--partial`), a lake whose catalog is a
DuckDB file, the `--warehouse` flag, and, against real servers on loopback
(tests/fakes/lake.py: PostgreSQL for the catalog, moto for S3; the `lake` fixture of
tests/conftest.py), eight concurrent writers, four shard processes, push/pull/maintain, a
writer killed mid-flush, and the docs' command blocks run as written. The warehouse's own
pieces (targets, secrets, retries, joins) are tested in tests/warehouse/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_cli, write
from tests.fakes.lake import Lake, lake_connection, start_postgres


def eval_yaml(folder: Path, n: int, *, settings: str = "", extra: str = "") -> Path:
    rows = (
        json.dumps({"id": f"c{i:05d}", "vars": {"q": f"q{i}"}, "expected": f"q{i}"})
        for i in range(n)
    )
    write(folder / "cases.jsonl", "\n".join(rows) + "\n")
    return write(
        folder / "eval.yaml",
        f"""\
name: lake-suite
settings:
  concurrency: 64
{settings}models:
  - id: m
    provider: mock
    mock:
      rules:
        - when: {{case: "c0000*"}}
          reply: "wrong"
variants:
  - id: v
    messages:
      - {{role: user, content: "{{{{ q }}}}"}}
cases:
  - file: cases.jsonl
scorecard:
  - {{name: echo, type: contains}}
thresholds:
  min_pass_rate: 0.5
{extra}""",
    )


def evalwh_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalwh.cli.main", *args]


def count(lake: Lake, sql: str) -> tuple[object, ...]:
    con = lake_connection(lake)
    try:
        row = con.execute(sql).fetchone()
        assert row is not None
        return tuple(row)
    finally:
        con.close()


def test_shards_on_a_file_write_one_run_and_the_last_concludes_it_once(tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 60)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    first = run_cli("run", str(cfg), "--shard", "1/3", "--run-id", "r1", "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["concluded"] is False
    early = run_cli("finish", "r1", cwd=tmp_path)
    assert early.returncode == 2 and "a shard has not finished" in early.stderr
    assert (
        run_cli("run", str(cfg), "--shard", "2/3", "--run-id", "r1", "-q", cwd=tmp_path).returncode
        == 0
    )
    last = run_cli("run", str(cfg), "--shard", "3/3", "--run-id", "r1", "--json", cwd=tmp_path)
    result = json.loads(last.stdout)
    assert result["concluded"] is True and result["status"] == "completed"
    assert [r["passed"] for r in result["gate"]] == [True]
    again = run_cli("finish", "r1", cwd=tmp_path)
    assert again.returncode == 2 and "already completed" in again.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT case_id) FROM cases").fetchone() == (
            60,
            60,
        )
        assert con.execute("SELECT count(*), any_value(status) FROM runs").fetchone() == (
            1,
            "completed",
        )
        assert con.execute("SELECT n_planned FROM runs").fetchone() == (60,)
    exports = tmp_path / ".evalwh" / "exports"
    assert (exports / "cases" / "run_id=r1" / "cases.parquet").is_file()


def test_a_shard_of_another_count_or_config_is_refused(tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 10)
    assert (
        run_cli("run", str(cfg), "--shard", "1/2", "--run-id", "r2", "-q", cwd=tmp_path).returncode
        == 0
    )
    other_n = run_cli("run", str(cfg), "--shard", "1/3", "--run-id", "r2", cwd=tmp_path)
    assert other_n.returncode == 2 and "not a run of 3 shards" in other_n.stderr
    eval_yaml(tmp_path, 11)  # the dataset changed
    other_cfg = run_cli("run", str(cfg), "--shard", "2/2", "--run-id", "r2", cwd=tmp_path)
    assert other_cfg.returncode == 2 and "dataset" in other_cfg.stderr


def test_shard_and_run_id_go_together(tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 3)
    alone = run_cli("run", str(cfg), "--shard", "1/2", cwd=tmp_path)
    assert alone.returncode == 2 and "--run-id" in alone.stderr
    bare = run_cli("run", str(cfg), "--run-id", "x", cwd=tmp_path)
    assert bare.returncode == 2 and "--shard" in bare.stderr


def test_finish_on_an_unsharded_run_says_so(tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 3)
    assert run_cli("run", str(cfg), "-q", cwd=tmp_path).returncode == 0
    done = run_cli("finish", "latest", cwd=tmp_path)
    assert done.returncode == 2 and "not a sharded run" in done.stderr


def test_finish_partial_concludes_a_run_whose_shards_did_not_all_run(tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 20)
    assert (
        run_cli(
            "run", str(cfg), "--shard", "1/2", "--run-id", "half", "-q", cwd=tmp_path
        ).returncode
        == 0
    )
    done = run_cli("finish", "half", "--partial", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and 0 < result["totals"]["n"] < 20


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_a_file_catalog_lake_runs_migrates_and_answers_every_read(tmp_path: Path) -> None:
    settings = '  warehouse: "ducklake:meta.ducklake"\n  lake: {data_path: lake-data}\n'
    cfg = eval_yaml(tmp_path, 20, settings=settings)
    for label in ("a", "b"):
        done = run_cli("run", str(cfg), "-q", "--label", label, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    # migration 0008 on a lake: a no-look run is stored and listed as one
    blind = run_cli("run", str(cfg), "-q", "--label", "c", "--no-look", cwd=tmp_path)
    assert blind.returncode == 0, blind.stderr
    assert (tmp_path / "meta.ducklake").is_file() and any(
        (tmp_path / "lake-data").rglob("*.parquet")
    )
    env = {"EVALWH_WAREHOUSE": f"ducklake:{tmp_path / 'meta.ducklake'}"}
    for args in (
        ("list",),
        ("show", "a", "--failures"),
        ("compare", "a", "b"),
        ("gate", "b", "--baseline", "a"),
        ("export", "a", "--format", "md"),
        ("export", "b", "--format", "parquet", "--out", str(tmp_path / "pq")),
    ):
        shown = run_cli(*args, cwd=tmp_path, env=env)
        assert shown.returncode == 0, (args, shown.stderr)
    assert list((tmp_path / "pq").rglob("cases.parquet"))
    listed = run_cli("list", "--json", cwd=tmp_path, env=env)
    runs = {r["label"]: r["no_look"] for r in json.loads(listed.stdout)["runs"]}
    assert runs == {"a": False, "b": False, "c": True}
    counted = run_cli("sql", "SELECT count(*) AS n FROM cases", "--json", cwd=tmp_path, env=env)
    assert json.loads(counted.stdout)["rows"] == [{"n": 60}]
    outside = run_cli("sql", "SELECT * FROM read_csv('/etc/hostname')", cwd=tmp_path, env=env)
    assert outside.returncode == 2 and "disabled by configuration" in outside.stderr


def test_the_warehouse_flag_wins_over_the_environment_and_the_config(tmp_path: Path) -> None:
    """`--warehouse` is settings.warehouse's flag: before or after the command, over
    EVALWH_WAREHOUSE, eval.yaml's setting and -o, relative to the working folder."""
    cfg = eval_yaml(tmp_path, 4, settings="  warehouse: from-config.duckdb\n")
    env = {"EVALWH_WAREHOUSE": str(tmp_path / "from-env.duckdb")}
    ran = run_cli(
        "run", str(cfg), "-q", "--warehouse", "flag.duckdb", "-o", "out", cwd=tmp_path, env=env
    )
    assert ran.returncode == 0, ran.stderr
    made = sorted(p.name for p in tmp_path.rglob("*.duckdb"))
    assert made == ["flag.duckdb"]
    listed = run_cli("--warehouse", "flag.duckdb", "list", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["runs"]) == 1
    unflagged = run_cli("list", "--json", cwd=tmp_path, env=env)  # the environment's: empty
    assert json.loads(unflagged.stdout)["runs"] == []


def test_the_warehouse_flag_takes_a_lake_target_and_a_lakes_files_stay_local(
    tmp_path: Path,
) -> None:
    """A `ducklake:` target by flag (the data path from settings.lake); a lake's Parquet
    export, attached files and answer journal go to the output folder on this machine, not
    beside a file."""
    write(tmp_path / "photo.png", "\x89PNG\r\n\x1a\n" + "x" * 64)
    cfg = write(
        tmp_path / "eval.yaml",
        """\
name: lake-files
settings:
  lake: {data_path: lake-data}
models:
  - {id: m, provider: mock, mock: {default: "red"}}
variants:
  - id: v
    messages:
      - role: user
        content: [{text: "Colour?"}, {image: "{{ files.photo }}"}]
cases:
  - {id: pic, files: {photo: photo.png}, expected: red}
scorecard:
  - {name: colour, type: contains}
""",
    )
    flag = ("--warehouse", "ducklake:meta.ducklake")
    ran = run_cli("run", str(cfg), "-q", "--label", "a", *flag, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "meta.ducklake").is_file() and not (
        tmp_path / ".evalwh" / "warehouse.duckdb"
    ).exists()
    assert len(list((tmp_path / ".evalwh" / "artifacts").rglob("*"))) == 2  # one folder, one file
    # the answer journal is on this machine too, and gone once the run ended
    assert (tmp_path / ".evalwh" / "journal").is_dir()
    assert list((tmp_path / ".evalwh" / "journal").iterdir()) == []
    env = {"EVALWH_LAKE": json.dumps({"data_path": str(tmp_path / "lake-data")})}
    exported = run_cli("export", "a", "--format", "parquet", *flag, cwd=tmp_path, env=env)
    assert exported.returncode == 0, exported.stderr
    assert list((tmp_path / ".evalwh" / "exports").rglob("cases.parquet"))
    counted = run_cli(
        "sql", "SELECT count(*) AS n FROM cases", "--json", *flag, cwd=tmp_path, env=env
    )
    assert json.loads(counted.stdout)["rows"] == [{"n": 1}]


def test_an_mcp_server_started_with_a_warehouse_flag_reads_and_runs_there(tmp_path: Path) -> None:
    """`evalwh mcp --warehouse FILE`: the server's runs land in FILE, the one it reads."""
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    root = tmp_path / "root"
    eval_yaml(root, 3)
    chosen = tmp_path / "team.duckdb"
    agent = Agent(root=root.resolve(), cwd=root, allow_code=False, warehouse_flag=str(chosen))
    brief = tools.run_eval(agent, "eval.yaml")
    assert agent.warehouse == chosen and chosen.is_file()
    assert not (root / ".evalwh" / "warehouse.duckdb").exists()
    assert not any("not in the warehouse this server reads" in n for n in brief["notes"])
    assert tools.list_runs(agent)["runs"][0]["run_id"] == brief["run_id"]


def test_lake_commands_on_a_file_warehouse_say_what_to_set(tmp_path: Path) -> None:
    done = run_cli("lake", "maintain", cwd=tmp_path)
    assert done.returncode == 2 and "ducklake:" in done.stderr


def test_without_postgresql_the_lake_tests_skip_with_the_reason_or_fail_when_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.fakes import lake as fakes

    monkeypatch.setattr(fakes, "pg_bin", lambda: None)
    monkeypatch.setattr(fakes, "REQUIRE", False)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL is not installed"):
        start_postgres()
    monkeypatch.setattr(fakes, "REQUIRE", True)
    with pytest.raises(pytest.fail.Exception, match="EVALWH_REQUIRE_SYSTEM_PARTS=1"):
        start_postgres()


# two writers by default; three and eight under `slow`, which CI runs
@pytest.mark.e2e
@pytest.mark.parametrize(
    "writers",
    [
        pytest.param(2, id="2"),
        pytest.param(3, id="3", marks=pytest.mark.slow),
        pytest.param(8, id="8", marks=pytest.mark.slow),
    ],
)
def test_concurrent_writers_into_one_lake_lose_and_duplicate_nothing(
    lake: Lake, tmp_path: Path, writers: int
) -> None:
    """Writers of their own runs (under --no-cache, which used to delete cached answers)
    commit side by side: no case lost or doubled (counted), and no commit retried."""
    cfg = eval_yaml(tmp_path, 1000)
    procs = [
        subprocess.Popen(
            evalwh_cmd("run", str(cfg), "-q", "--no-cache", "--label", f"w{i}"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    for proc in procs:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
    assert count(lake, "SELECT count(*), count(DISTINCT (run_id, case_id)) FROM cases") == (
        1000 * writers,
        1000 * writers,
    )
    assert count(
        lake, "SELECT count(*), count(DISTINCT run_id) FROM runs WHERE status = 'completed'"
    ) == (writers, writers)
    assert count(lake, "SELECT count(*) FROM scores") == (1000 * writers,)
    # no writer updated a row another may touch, so no flush of any run had to be retried:
    # each run's stored count, and the count each of its heartbeats carried, is 0
    assert count(
        lake,
        "SELECT count(*), sum(CAST(json_extract(totals, '$.commit_retries') AS INTEGER)) FROM runs",
    ) == (writers, 0)
    assert count(
        lake, "SELECT count(DISTINCT run_id), max(retries), max(rows_written) FROM run_beats"
    ) == (writers, 0, 1000)
    compared = run_cli("compare", "w0", "w1", "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)  # paired on 1,000 cases; every delta 0
    gated = run_cli("gate", "w1", "--baseline", "w0", cwd=tmp_path)
    assert gated.returncode == 0 and "passed" in gated.stdout, gated.stderr


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
@pytest.mark.e2e
def test_four_shards_on_four_processes_make_one_run_judged_once(lake: Lake, tmp_path: Path) -> None:
    cfg = eval_yaml(tmp_path, 4000)
    procs = [
        subprocess.Popen(
            evalwh_cmd("run", str(cfg), "--json", "--shard", f"{k}/4", "--run-id", "big-1"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (1, 2, 3, 4)
    ]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        results.append(json.loads(stdout))
    concluded = [r for r in results if r["concluded"]]
    assert len(concluded) == 1 and concluded[0]["gate"] and concluded[0]["status"] == "completed"
    assert all(r["gate"] == [] for r in results if not r["concluded"])
    assert count(lake, "SELECT count(*), count(DISTINCT case_id) FROM cases") == (4000, 4000)
    assert count(lake, "SELECT count(*), any_value(status), any_value(n_planned) FROM runs") == (
        1,
        "completed",
        4000,
    )
    again = run_cli("finish", "big-1", cwd=tmp_path)
    assert again.returncode == 2 and "already completed" in again.stderr


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_pushing_twice_copies_each_run_once_and_pull_brings_them_back(
    lake: Lake, tmp_path: Path
) -> None:
    cfg = eval_yaml(tmp_path, 30)
    local_dir = tmp_path / "local"
    local_env = {"EVALWH_WAREHOUSE": str(local_dir / "warehouse.duckdb")}
    for label in ("p1", "p2"):
        done = run_cli("run", str(cfg), "-q", "--label", label, cwd=tmp_path, env=local_env)
        assert done.returncode == 0, done.stderr
    local_file = local_dir / "warehouse.duckdb"
    first = run_cli("lake", "push", "--local", str(local_file), "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert len(json.loads(first.stdout)["copied"]) == 2
    second = run_cli("lake", "push", "--local", str(local_file), "--json", cwd=tmp_path)
    assert (
        json.loads(second.stdout)["copied"] == [] and len(json.loads(second.stdout)["present"]) == 2
    )
    assert count(lake, "SELECT count(*), count(DISTINCT run_id) FROM runs") == (2, 2)
    assert count(lake, "SELECT count(*) FROM cases") == (60,)
    assert count(lake, "SELECT count(*) FROM scores") == (60,)
    since = run_cli(
        "lake", "push", "--local", str(local_file), "--since", "p2", "--json", cwd=tmp_path
    )
    assert json.loads(since.stdout)["present"] == [json.loads(second.stdout)["present"][1]]
    back = tmp_path / "back.duckdb"
    for _ in range(2):
        pulled = run_cli("lake", "pull", "p1", "--local", str(back), cwd=tmp_path)
        assert pulled.returncode == 0, pulled.stderr
    with duckdb.connect(str(back), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (30,)
    maintained = run_cli("lake", "maintain", "--expire-days", "0", "--json", cwd=tmp_path)
    assert maintained.returncode == 0, maintained.stderr
    steps = [s["step"] for s in json.loads(maintained.stdout)["steps"]]
    assert steps[:2] == ["flush_inlined_data", "merge_adjacent_files"]
    assert count(lake, "SELECT count(*) FROM cases") == (60,)  # compaction keeps every row


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
@pytest.mark.e2e
def test_a_writer_killed_mid_flush_leaves_the_lake_readable_and_the_run_resumes(
    lake: Lake, tmp_path: Path
) -> None:
    cfg = eval_yaml(tmp_path, 600, settings="  batch_size: 100\n")
    proc = subprocess.Popen(
        evalwh_cmd("run", str(cfg), "-q"),
        cwd=tmp_path,
        env={**os.environ, "EVALWH_DEBUG_FLUSH_PAUSE_S": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # the first flush wrote its data file to S3 and now sleeps before its commit (a run
    # that never gets there is stopped by the test's timeout, not by a clock read here)
    while not [k for k in lake.s3.keys(lake.bucket) if "/cases/" in k]:
        assert proc.poll() is None, "the run ended before its first flush committed"
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert count(lake, "SELECT count(*) FROM cases") == (0,)  # the batch never committed
    listed = run_cli("list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)["runs"]
    assert run["status"] == "interrupted"
    resumed = run_cli("run", str(cfg), "--resume", run["run_id"], "-q", cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert count(lake, "SELECT count(*), count(DISTINCT case_id) FROM cases") == (600, 600)
    assert count(lake, "SELECT any_value(status) FROM runs") == ("completed",)


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_the_scale_out_doc_commands_run_against_the_loopback_lake(
    lake: Lake, tmp_path: Path
) -> None:
    """docs/scale-out.md: every line of its command block runs as written, in order."""
    import re
    import shlex

    from tests.conftest import ROOT

    text = (ROOT / "docs" / "scale-out.md").read_text(encoding="utf-8")
    block = next(
        body
        for body in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
        if "evalwh migrate" in body
    )
    eval_yaml(tmp_path, 12)
    local = {"EVALWH_WAREHOUSE": str(tmp_path / "local" / "warehouse.duckdb")}
    assert run_cli("run", "eval.yaml", "-q", cwd=tmp_path, env=local).returncode == 0
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) >= 10
    for line in lines:
        args = shlex.split(line)
        assert args[0] == "evalwh", line
        done = run_cli(*args[1:], cwd=tmp_path)
        assert done.returncode == 0, (line, done.stderr)
    assert count(lake, "SELECT count(DISTINCT run_id) FROM runs") == (4,)
    with duckdb.connect(str(tmp_path / "offline.duckdb"), read_only=True) as con:
        assert con.execute("SELECT run_id FROM runs").fetchall() == [("nightly-1",)]


@pytest.mark.slow  # the longest of its kind; CI runs it (`pytest -m slow`)
def test_the_ci_matrix_recipe_runs_its_shards_and_finish_against_the_lake(
    lake: Lake, tmp_path: Path
) -> None:
    """docs/ci.md "Sharded runs on a matrix": every shard's step, then the finish job's."""
    import re

    import yaml

    from tests.conftest import QUICKSTART, ROOT

    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    body = next(b for b in re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S) if "--shard" in b)
    workflow = yaml.safe_load(body)
    shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3, 4]
    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    import shutil

    shutil.copytree(
        QUICKSTART, repo / "examples" / "quickstart", ignore=shutil.ignore_patterns(".evalwh")
    )
    env = {
        **os.environ,
        "RUN_ID": "nightly-7-1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("EVALWH_WAREHOUSE", None)  # the user config points at the lake; the workflow's env
    # holds placeholders for a real database and secrets

    def step(job: str) -> str:
        (found,) = [
            s["run"] for s in workflow["jobs"][job]["steps"] if "evalwh " in s.get("run", "")
        ]
        return str(found)

    codes = []
    for k in shards:
        script = step("shard").replace("${{ matrix.shard }}", str(k))
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        codes.append(done.returncode)
        assert done.returncode in (0, 1), done.stderr
    finish = subprocess.run(
        ["bash", "-e", "-c", step("finish")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert finish.returncode == codes[-1], finish.stderr  # the gate's verdict, judged again
    assert "already completed" in finish.stderr
    assert count(lake, "SELECT count(*), any_value(status) FROM runs") == (1, "completed")
    assert count(lake, "SELECT count(*) FROM cases") == (48,)
