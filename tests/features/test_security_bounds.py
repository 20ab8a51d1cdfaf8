"""Bounds and output neutralisation: one test per attack, each asserting the harmless outcome.

Bounds: query timeouts (CLI and MCP), query memory/threads, streamed `sql -n 0`, the
warehouse memory limit, python scorers that hang or exit, YAML alias bombs and deep nesting.
Neutralisation: ESC[2J, OSC 8 links and OSC 52 clipboard writes in a model output, a label
and a suite name never reach stdout raw; JUnit stays valid XML; CSV formulas are neutralised.
"""

from __future__ import annotations

import csv
import io
import json
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError, UsageError
from tests.conftest import alias_bomb, write
from tests.inprocess import evalwh_inprocess

HUGE = "SELECT count(*) FROM range(1000000000000)"  # range(1e12): DuckDB wants an integer
CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """An empty, migrated warehouse in tmp_path/out."""
    from evalwh.warehouse.connect import write_connection

    path = tmp_path / "out" / "warehouse.duckdb"
    with write_connection(path):
        pass
    return path


# -- query bounds -------------------------------------------------------------------------
def test_sql_query_timeout_stops_range_1e12(capsys, warehouse: Path):
    # the outcome, not the time taken: the query is stopped and says so (without the timeout it
    # would run until pytest-timeout ends the test)
    code, _, err = evalwh_inprocess(
        capsys, "sql", HUGE, "--timeout", "1", "-o", str(warehouse.parent)
    )
    assert code == 2
    assert "ran longer than 1 s and was stopped" in err
    assert "fix:" in err and "--timeout" in err


def test_sql_query_timeout_setting_from_environment(capsys, warehouse: Path, monkeypatch):
    monkeypatch.setenv("EVALWH_QUERY_TIMEOUT_S", "0.5")
    code, _, err = evalwh_inprocess(capsys, "sql", HUGE, "-o", str(warehouse.parent))
    assert code == 2
    assert "ran longer than 0.5 s" in err


def test_mcp_query_timeout_via_the_core_function(warehouse: Path, monkeypatch):
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    monkeypatch.setenv("EVALWH_MCP_QUERY_TIMEOUT_S", "1")
    agent = Agent(root=warehouse.parent.parent, output_dir=warehouse.parent)
    with pytest.raises(UsageError, match="ran longer than 1 s"):
        tools.query(agent, HUGE)
    assert tools.query(agent, "SELECT 42 AS n")["rows"] == [[42]]  # a quick query still works


def test_query_connection_has_memory_and_thread_limits(capsys, warehouse: Path, monkeypatch):
    probe = "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t"
    code, out, _ = evalwh_inprocess(capsys, "sql", probe, "--json", "-o", str(warehouse.parent))
    assert code == 0
    assert json.loads(out)["rows"] == [{"m": "953.6 MiB", "t": 2}]  # 1GB, 2 threads
    monkeypatch.setenv("EVALWH_QUERY_MEMORY_LIMIT", "256MB")
    monkeypatch.setenv("EVALWH_QUERY_THREADS", "1")
    code, out, _ = evalwh_inprocess(capsys, "sql", probe, "--json", "-o", str(warehouse.parent))
    assert json.loads(out)["rows"] == [{"m": "244.1 MiB", "t": 1}]


def test_bad_memory_limit_setting_is_a_config_error(capsys, warehouse: Path, monkeypatch):
    monkeypatch.setenv("EVALWH_QUERY_MEMORY_LIMIT", "lots")
    code, _, err = evalwh_inprocess(capsys, "sql", "SELECT 1", "-o", str(warehouse.parent))
    assert code == 2
    assert "query_memory_limit='lots' is not a memory size" in err and "fix:" in err


def test_warehouse_connections_get_a_default_memory_limit(warehouse: Path):
    from evalwh.warehouse.connect import read_connection

    with read_connection(warehouse) as con:
        row = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert row is not None and row[0] == "1.8 GiB"  # 2GB, not 80 % of RAM


@pytest.mark.slow  # the longest of its kind; CI runs it (`pytest -m slow`)
@pytest.mark.e2e
def test_sql_n0_over_10m_rows_streams_in_bounded_memory(warehouse: Path):
    query = "SELECT range AS n, 'row ' || range AS s FROM range(10000000)"
    # the peak of this one process: a wrapper whose only child it is reports its maxrss
    # (RUSAGE_CHILDREN of pytest itself would hold the largest child of the whole session)
    wrapper = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
        "kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
        "sys.stderr.write(f'\\nMAXRSS_KB {kb}\\n'); sys.exit(done.returncode)"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            wrapper,
            sys.executable,
            "-m",
            "evalwh.cli.main",
            "-o",
            str(warehouse.parent),
            "sql",
            query,
            "-n",
            "0",
            "-f",
            "csv",
            "--timeout",
            "0",
        ],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b"\n") == 10_000_001  # header + every row
    peak_mb = int(result.stderr.split(b"MAXRSS_KB ")[-1].split()[0]) / 1024
    assert peak_mb > 30  # the wrapper measured the evalwh process (it imports duckdb)
    assert peak_mb < 600, f"peak RSS {peak_mb:.0f} MB (the whole result was held?)"


# -- python scorers -----------------------------------------------------------------------
def _scorer(tmp_path: Path, body: str, **options: object):
    from evalwh.scoring import build_scorer

    write(tmp_path / "attack.py", f"import os, sys, time\n\ndef fn(output, case):\n{body}\n")
    crit = Criterion(
        name="c", type="python", options={"function": "attack.py:fn", **options}, where="sc[0]"
    )
    return build_scorer(crit, tmp_path, "eval.yaml")


def test_hanging_python_scorer_times_out_and_the_next_call_works(tmp_path: Path):
    fn = _scorer(
        tmp_path, "    if output == 'hang':\n        time.sleep(60)\n    return 1.0", timeout_s=0.5
    )
    result = fn("hang", Case(id="a"))  # the outcome below says it was cut, not the time taken
    assert (result.score, result.passed) == (0.0, False)
    assert "timed out after 0.5 s" in (result.error or "")
    assert fn("fine", Case(id="b")).score == 1.0  # a fresh worker took over


def test_exiting_python_scorer_sys_exit_3_is_a_scorer_error(tmp_path: Path):
    fn = _scorer(tmp_path, "    sys.exit(3)")
    result = fn("x", Case(id="a"))
    assert "sys.exit(3)" in (result.error or "")
    assert result.passed is False


def test_exiting_python_scorer_os_exit_is_a_scorer_error(tmp_path: Path):
    fn = _scorer(tmp_path, "    if output == 'die':\n        os._exit(7)\n    return True")
    assert "exited with code 7" in (fn("die", Case(id="a")).error or "")
    assert fn("ok", Case(id="b")).passed is True


def test_run_with_a_scorer_calling_sys_exit_3_stores_the_error_and_exits_normally(
    capsys, tmp_path: Path
):
    import duckdb

    write(tmp_path / "attack.py", "import sys\n\ndef fn(output, case):\n    sys.exit(3)\n")
    config = write(tmp_path / "eval.yaml", base_config() + SCORER_EXIT)
    out_dir = tmp_path / "out"
    code, _, _ = evalwh_inprocess(capsys, "run", str(config), "-o", str(out_dir))
    assert code != 3  # the run decides its own exit code (here: the gate has no thresholds)
    con = duckdb.connect(str(out_dir / "warehouse.duckdb"), read_only=True)
    rows = con.execute("SELECT error FROM scores WHERE criterion = 'exits'").fetchall()
    assert rows and all("sys.exit(3)" in r[0] for r in rows)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_run_with_a_scorer_allocating_8_gib_on_one_case_stores_the_error_and_scores_the_others(
    capsys, tmp_path: Path
):
    # attack: a model output drives a python scorer to allocate far more than its memory_mb
    import duckdb

    write(
        tmp_path / "attack.py",
        "def fn(output, case):\n"
        "    if output == 'hungry':\n"
        "        bytearray(8 << 30)\n"
        "    return 1.0\n",
    )
    config = base_config(reply="{{ q }}").replace(
        "    expected: hi\n", "    expected: hi\n  - id: c2\n    vars: {q: hungry}\n"
    )
    scorer = SCORER_EXIT.replace("exits", "hungry") + "    memory_mb: 200\n"
    out_dir = tmp_path / "out"
    code, _, _ = evalwh_inprocess(
        capsys, "run", str(write(tmp_path / "eval.yaml", config + scorer)), "-o", str(out_dir)
    )
    assert code == 0
    con = duckdb.connect(str(out_dir / "warehouse.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT case_id, score, error FROM scores WHERE criterion = 'hungry' ORDER BY case_id"
    ).fetchall()
    assert rows == [
        ("c1", 1.0, None),
        (
            "c2",
            0.0,
            "python scorer attack.py:fn: ran out of memory (memory_mb: 200) and was stopped"
            " (raise `memory_mb` on the criterion if it needs more)",
        ),
    ]


def base_config(name: str = "attack", reply: str = "hi") -> str:
    return f"""name: {json.dumps(name)}
models:
  - id: m
    provider: mock
    mock:
      rules:
        - reply: {json.dumps(reply)}
variants:
  - id: v
    messages:
      - {{role: user, content: "{{{{ q }}}}"}}
cases:
  - id: c1
    vars: {{q: hi}}
    expected: hi
scorecard:
  - name: ok
    type: contains
"""


SCORER_EXIT = """  - name: exits
    type: python
    function: attack.py:fn
"""


# -- YAML ---------------------------------------------------------------------------------
def test_yaml_alias_bomb_in_case_vars_fails_fast(capsys, tmp_path: Path):
    bomb = alias_bomb("      ")
    text = base_config().replace("    vars: {q: hi}", "    vars:\n      q: hi\n" + bomb)
    config = write(tmp_path / "eval.yaml", text)
    assert len(text) < 10_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, _, err = evalwh_inprocess(capsys, "validate", str(config))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB
    assert code == 2
    assert "eval.yaml:" in err and "YAML aliases expand to more than" in err and "fix:" in err


def test_yaml_deep_nesting_is_a_config_error(tmp_path: Path):
    from evalwh.config.loader import load_config

    config = write(tmp_path / "eval.yaml", "models: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert "nested more than 200 levels" in info.value.message
    assert (info.value.file, info.value.line) == (str(config), 1)
    assert "flatten" in (info.value.fix or "")


# -- terminal and export neutralisation ---------------------------------------------------
@pytest.fixture
def hostile_runs(capsys, tmp_path: Path) -> Path:
    """Two runs whose output, label and suite name carry ESC[2J, OSC 8, OSC 52 and markup."""
    reply = f'[bold]x{CLEAR}{OSC8}{OSC52}\x9b31m\r\x00 =HYPERLINK("http://evil")'
    config = write(tmp_path / "eval.yaml", base_config(f"suite{CLEAR}{OSC52}", reply))
    out_dir = tmp_path / "out"
    for label in (f"a{OSC8}", f"b{CLEAR}"):
        code, _, _ = evalwh_inprocess(
            capsys, "run", str(config), "-o", str(out_dir), "--label", label, "--no-cache"
        )
        assert code in (0, 1)
    return out_dir


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\x00" not in text


@pytest.mark.parametrize(
    "args",
    [
        ("show", "latest", "--failures"),
        ("show", "latest", "--case", "c1"),
        ("show", "latest"),
        ("list",),
        ("compare", "latest~1", "latest"),
        ("sql", "SELECT output, label FROM cases JOIN runs USING (run_id)"),
    ],
    ids=["show-failures", "show-case", "show", "list", "compare", "sql"],
)
def test_escape_sequences_in_output_label_and_suite_are_neutralised(
    capsys, hostile_runs: Path, args: tuple[str, ...]
):
    argv = [*args, "-o", str(hostile_runs)]
    if args[0] == "compare":  # run references by label
        argv = ["compare", f"a{OSC8}", f"b{CLEAR}", "-o", str(hostile_runs)]
    code, out, err = evalwh_inprocess(capsys, *argv)
    assert code in (0, 1), err
    _no_raw_controls(out)
    _no_raw_controls(err)
    if args[0] in ("show", "sql") and args[-1] != "latest":
        assert "\\x1b[2J" in out  # shown escaped, not dropped


def test_run_output_neutralises_escape_sequences(capsys, tmp_path: Path):
    config = write(tmp_path / "eval.yaml", base_config(f"s{CLEAR}{OSC52}", f"{OSC8}[bold]z"))
    code, out, err = evalwh_inprocess(
        capsys, "run", str(config), "-o", str(tmp_path / "o"), "--label", f"l{CLEAR}"
    )
    assert code in (0, 1)
    _no_raw_controls(out)
    _no_raw_controls(err)
    assert "\\x1b[2J" in out  # the suite name in the title, escaped


def test_rich_markup_in_model_output_label_and_suite_prints_literally(capsys, tmp_path: Path):
    config = write(tmp_path / "eval.yaml", base_config("[bold]suite", "[blink]out[/blink]"))
    out_dir = str(tmp_path / "o")
    label = "[red]tag[/red]"
    assert evalwh_inprocess(capsys, "run", str(config), "-o", out_dir, "--label", label)[0] < 2
    code, listed, _ = evalwh_inprocess(capsys, "list", "-o", out_dir)
    assert code == 0 and "[red]tag[/red]" in listed and "[bold]suite" in listed
    code, shown, _ = evalwh_inprocess(capsys, "show", "latest", "--case", "c1", "-o", out_dir)
    assert code == 0 and "[blink]out[/blink]" in shown


def test_junit_export_with_control_characters_parses(capsys, hostile_runs: Path):
    code, out, _ = evalwh_inprocess(capsys, "export", "-f", "junit", "-o", str(hostile_runs))
    assert code == 0
    root = ET.fromstring(out.split("\n", 1)[1])  # after the XML declaration
    assert "\\x1b" in root.get("name", "")  # the suite name, escaped in the attribute
    _no_raw_controls(out)


def test_markdown_export_heading_and_cells_have_no_control_characters(capsys, hostile_runs: Path):
    code, out, _ = evalwh_inprocess(capsys, "export", "-f", "md", "-o", str(hostile_runs))
    assert code == 0
    heading = out.splitlines()[0]
    assert heading.startswith("## evalwh · suite\\x1b[2J")
    _no_raw_controls(out)


def test_csv_export_escapes_control_characters_in_every_cell(capsys, hostile_runs: Path):
    code, out, _ = evalwh_inprocess(capsys, "export", "-f", "csv", "-o", str(hostile_runs))
    assert code == 0
    _no_raw_controls(out)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["output"].startswith("[bold]x\\x1b[2J\\x1b]8;;")


def test_csv_cells_starting_with_formula_characters_are_neutralised():
    import pyarrow as pa

    from evalwh.reports.textsafe import csv_safe_table

    formula = '=HYPERLINK("http://evil","x")'
    table = pa.table({"c": [formula, "+1", "-x", "@a", "\tb", "\rc", "plain", None]})
    safe = csv_safe_table(table)["c"].to_pylist()
    assert safe == ["'" + formula, "'+1", "'-x", "'@a", "'\tb", "'\rc", "plain", None]
    assert csv_safe_table(table, keep_formulas=True)["c"].to_pylist() == table["c"].to_pylist()


def test_csv_export_option_keeps_formulas(capsys, tmp_path: Path):
    formula = '=HYPERLINK("http://evil","x")'
    config = write(tmp_path / "eval.yaml", base_config("s", formula))
    out_dir = str(tmp_path / "o")
    assert evalwh_inprocess(capsys, "run", str(config), "-o", out_dir)[0] in (0, 1)
    _, neutral, _ = evalwh_inprocess(capsys, "export", "-f", "csv", "-o", out_dir)
    assert next(iter(csv.DictReader(io.StringIO(neutral))))["output"] == "'" + formula
    code, kept, _ = evalwh_inprocess(
        capsys, "export", "-f", "csv", "--csv-formulas", "keep", "-o", out_dir
    )
    assert code == 0
    assert next(iter(csv.DictReader(io.StringIO(kept))))["output"] == formula


def test_log_lines_neutralise_escape_sequences(capsys):
    import logging

    from evalwh.cli.state import configure_logging

    configure_logging()
    logging.getLogger("evalwh.test").warning("reply: %s", f"x{CLEAR}{OSC52}")
    err = capsys.readouterr().err
    _no_raw_controls(err)
    assert "reply: x\\x1b[2J" in err


def test_python_scorer_exiting_at_import_is_a_config_error(tmp_path: Path):
    from evalwh.scoring import build_scorer

    write(
        tmp_path / "attack.py", "import sys\nsys.exit(3)\n\ndef fn(output, case):\n    return 1\n"
    )
    crit = Criterion(name="c", type="python", options={"function": "attack.py:fn"}, where="sc[0]")
    with pytest.raises(ConfigError) as info:
        build_scorer(crit, tmp_path, "eval.yaml")
    assert "could not start" in info.value.message and "SystemExit" in info.value.message
    assert info.value.where == "sc[0].function" and info.value.fix
