"""The analysis commands (evalwh/cli/analysis.py) through the real command: `evalwh compare`,
`baseline`, `repeats`, `sql` and `gate` (with `show --by`, which slices the same stored runs), over
quickstart runs stored in one warehouse: exit codes, JSON and the printed tables, their numbers
checked against counts made here from the stored rows. The gate end to end: a planted regression
versus the pinned baseline makes `evalwh run` exit 1 and say why (with n), an improvement exits 0,
`evalwh gate` judges stored runs the same way and `--baseline` overrides the pin; with no pin
both fail, naming the baseline, unless `on_missing_baseline: pass`.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

import evalwh
from tests.conftest import QUICKSTART, ROOT, run_cli
from tests.inprocess import evalwh_inprocess

Cli = Callable[..., tuple[int, str, str]]


TERSE_RULE = '          rate: 0.3\n          reply: "The answer is {{ expected }}."'


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | Path]:
    """Runs 'a' (the quickstart), 'b' (mock-small answers terse prompts badly more often),
    'part' (only the terse variant) and 'rep' (3 repeats) in one warehouse."""
    root = tmp_path_factory.mktemp("compare")
    shutil.copytree(QUICKSTART, root / "qs", ignore=shutil.ignore_patterns(".evalwh"))
    config = root / "qs" / "eval.yaml"
    changed = root / "qs" / "b.yaml"
    changed.write_text(config.read_text().replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.8")))
    out = root / "out"
    ids = {
        "a": evalwh.run_eval(config, output_dir=out, label="a").run_id,
        "b": evalwh.run_eval(changed, output_dir=out, label="b").run_id,
        "part": evalwh.run_eval(config, output_dir=out, label="part", variants=["terse"]).run_id,
        "rep": evalwh.run_eval(config, output_dir=out, label="rep", repeat=3).run_id,
    }
    return {**ids, "out": out, "db": out / "warehouse.duckdb"}


@pytest.fixture
def cli(
    stored: dict[str, str | Path], capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """The `evalwh` command in this process (fast): exit code, stdout, stderr."""
    return lambda *args: evalwh_inprocess(capsys, *args, "-o", str(stored["out"]))


def paired(db: Path, a: str, b: str, where: str = "") -> list[tuple[int, int, float, float]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT x.passed::INT, y.passed::INT, x.score, y.score FROM cases x JOIN cases y "
            "USING (variant, model, case_id, repeat) WHERE x.run_id = ? AND y.run_id = ? " + where,
            [a, b],
        ).fetchall()  # type: ignore[return-value]


def test_compare_numbers_match_hand_counts(stored: dict[str, str | Path], cli: Cli) -> None:
    code, out, err = cli("compare", "a", "b", "--json")
    assert code == 0, err
    data = json.loads(out)
    pairs = paired(stored["db"], stored["a"], stored["b"])  # type: ignore[arg-type]
    d = [pb - pa for pa, pb, _, _ in pairs]
    o = data["overall"]
    assert o["n"] == o["n_pairs"] == len(pairs) == 48  # one repeat: a case (in its cell) a pair
    assert o["n_broken"] == d.count(-1) > 0 and o["n_fixed"] == d.count(1)
    assert o["pass_rate_delta"] == pytest.approx(statistics.mean(d))
    assert o["pass_rate_se"] == pytest.approx(statistics.stdev(d) / math.sqrt(48))
    ds = [sb - sa for _, _, sa, sb in pairs]
    assert o["score_delta"] == pytest.approx(statistics.mean(ds))
    cell = next(c for c in data["cells"] if (c["variant"], c["model"]) == ("terse", "mock-small"))
    terse = paired(
        stored["db"], stored["a"], stored["b"], "AND variant = 'terse' AND model = 'mock-small'"
    )  # type: ignore[arg-type]
    assert cell["n"] == 12 and cell["n_broken"] == sum(1 for pa, pb, *_ in terse if pa > pb)
    unchanged = next(c for c in data["cells"] if c["model"] == "mock-large")
    assert unchanged["verdict"] == "same" and unchanged["pass_rate_delta"] == 0
    assert {m["movement"] for m in data["movers"]} <= {"broken", "fixed", "score down", "score up"}
    assert data["movers"][0]["movement"] == "broken"
    # one row per criterion of the scorecard, each over every pair
    scorecard = evalwh.load_config(QUICKSTART / "eval.yaml").scorecard
    assert sorted(c["target"] for c in data["criteria"]) == sorted(c.name for c in scorecard)
    assert all(0 < c["n"] <= 48 for c in data["criteria"])  # pairs scored by that criterion
    assert {s["target"] for s in data["slices"]} == {
        "topic=geography",
        "topic=math",
        "difficulty=easy",
        "difficulty=hard",
    }
    # the table shows the same numbers, rates with their n
    code, table, _ = cli("compare", "a", "b")
    assert code == 0
    assert "overall: n=48 cases (48 paired answers" in table and " p=" in table
    assert f"{100 * o['pass_rate_delta']:+.1f} pts" in table
    assert f"broken {o['n_broken']}" in table
    assert "terse × mock-small" in table or "terse" in table
    # no tool loop in either run: no tool section
    assert data["tools"] == data["tool_cells"] == [] and "tool calls" not in table


def test_compare_shows_tool_use_per_tool_and_the_cells_whose_calls_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # run B's scripted model calls the weather tool right the first time for paris: its bad
    # call of run A (wrong argument name) is gone; the other cases call as before
    example = ROOT / "examples" / "tools" / "eval.yaml"
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(example.read_text().replace("{town: Paris}", "{city: Paris}"))
    out = tmp_path / "out"
    evalwh.run_eval(example, output_dir=out, label="a")
    evalwh.run_eval(fixed, output_dir=out, label="b")
    code, text, err = evalwh_inprocess(capsys, "compare", "a", "b", "--json", "-o", str(out))
    assert code == 0, err
    data = json.loads(text)
    (tool,) = data["tools"]
    # paris 2 calls, warmer 2, looping 2 (the third answer's call never ran) in both runs
    assert (tool["tool"], tool["n_calls_a"], tool["n_calls_b"]) == ("get_weather", 6, 6)
    # A: paris's bad call, looping's two unknown cities; B: looping's only
    assert (tool["n_errors_a"], tool["n_errors_b"]) == (3, 2)
    assert (tool["n_invalid_args_a"], tool["n_invalid_args_b"]) == (1, 0)
    (cell,) = data["tool_cells"]
    assert (cell["case_id"], cell["tools_a"], cell["tools_b"]) == (
        "paris",
        ["get_weather", "get_weather"],
        ["get_weather", "get_weather"],
    )
    assert (cell["n_errors_a"], cell["n_errors_b"], cell["n_invalid_args_a"]) == (1, 0, 1)
    code, table, _ = evalwh_inprocess(capsys, "compare", "a", "b", "-o", str(out))
    assert code == 0
    assert "tool calls (paired cells)" in table and "get_weather" in table and "3 → 2" in table
    assert "cells whose tool calls changed (1 shown):" in table and "paris" in table


def test_compare_runs_whose_matrices_only_overlap(stored: dict[str, str | Path], cli: Cli) -> None:
    code, out, _ = cli("compare", "a", "part", "--json", "--by", "topic,difficulty")
    assert code == 0
    data = json.loads(out)
    overall = data["overall"]
    assert overall["n"] == overall["n_pairs"] == 24 and overall["n_a"] == 48
    verdicts = {(c["variant"], c["model"]): c["verdict"] for c in data["cells"]}
    assert verdicts[("reasoned", "mock-large")] == "only in A"
    assert verdicts[("terse", "mock-small")] == "same"  # same config, same (cached) answers
    assert {s["target"] for s in data["slices"]} == {
        "topic=geography, difficulty=easy",
        "topic=geography, difficulty=hard",
        "topic=math, difficulty=easy",
        "topic=math, difficulty=hard",
    }
    assert sum(s["n"] for s in data["slices"]) == 24


def test_compare_bad_references_are_usage_errors(stored: dict[str, str | Path], cli: Cli) -> None:
    code, _, err = cli("compare", "a", "nope")
    assert code == 2 and "no run matches 'nope'" in err
    code, _, err = cli("compare", "a", "b", "--by", "lang")
    assert code == 2 and "known keys: difficulty, topic" in err


def test_show_by_slices_with_n(stored: dict[str, str | Path], cli: Cli) -> None:
    code, out, _ = cli("show", "a", "--by", "topic,difficulty")
    assert code == 0
    assert "slices by topic,difficulty" in out
    assert "topic=math, difficulty=hard" in out and "4/8" in out  # math-4 errors on mock-small
    code, out, _ = cli("show", "a", "--by", "topic", "--json")
    slices = json.loads(out)["slices"]
    overall = {s["slice"]: s for s in slices if s["variant"] is None}
    assert overall["topic=math"]["n"] == 24 and overall["topic=geography"]["n"] == 24
    assert all(0 <= s["pass_rate_lo"] <= s["pass_rate"] <= s["pass_rate_hi"] <= 1 for s in slices)


def test_baseline_pins_and_references(stored: dict[str, str | Path], cli: Cli) -> None:
    code, out, _ = cli("baseline", "set", "a", "--name", "prod")
    assert code == 0 and f"baseline 'prod' → run {stored['a']} (a)" in out
    code, out, _ = cli("baseline", "list", "--json")
    (row,) = [r for r in json.loads(out)["baselines"] if r["name"] == "prod"]
    assert row["run_id"] == stored["a"] and row["n"] == 48
    code, out, _ = cli("--json", "compare", "prod", "b")
    assert code == 0 and json.loads(out)["a"]["run_id"] == stored["a"]
    assert cli("baseline", "set", "a", "--name", "latest")[0] == 2
    code, _, err = cli("baseline", "remove", "nope")
    assert code == 2 and "pinned: prod" in err
    assert cli("baseline", "remove", "prod")[0] == 0
    assert cli("show", "prod")[0] == 2


def test_repeats_command(stored: dict[str, str | Path], cli: Cli) -> None:
    code, out, _ = cli("repeats", "rep", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["repeats"] == 3 and {r["k"] for r in data["stats"]} == {1, 2, 3}
    assert all(f["n"] == 3 and 0 < f["n_passed"] < 3 for f in data["flaky"])
    code, table, _ = cli("repeats", "rep")
    assert code == 0 and "pass@k" in table and "pass^k" in table
    code, once, _ = cli("repeats", "a")
    assert code == 0 and "no repeat statistics" in once


REFUSED = [
    "INSERT INTO baselines VALUES ('x', 'y', now())",
    "DELETE FROM cases",
    "CREATE TABLE t AS SELECT 1",
    "ATTACH 'other.duckdb'",
    "COPY cases TO 'out.csv'",
    "INSTALL httpfs",
    "LOAD json",
    "SET threads = 1",
    "PRAGMA version",
    "SELECT 1; DROP TABLE runs",
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM glob('*')",
]


def test_sql_refuses_anything_but_one_read_only_query(
    stored: dict[str, str | Path], cli: Cli
) -> None:
    from evalwh.errors import UsageError

    view = evalwh.open_warehouse(stored["db"])
    for query in REFUSED:
        with pytest.raises(UsageError, match=r"read-only|one statement|disabled"):
            view.read_sql(query)
    result = run_cli("sql", "DROP TABLE runs", "-o", str(stored["out"]))
    code, err = result.returncode, result.stderr
    assert code == 2 and "evalwh sql is read-only: DROP statements are refused" in err
    assert view.read_sql("SELECT count(*) AS n FROM runs")[0].to_pylist() == [{"n": 4}]


def test_sql_reads_as_table_csv_and_json(stored: dict[str, str | Path], cli: Cli) -> None:
    query = "SELECT label, count(*) AS n FROM case_results GROUP BY label ORDER BY label"
    code, out, _ = cli("sql", query, "--format", "json")
    assert code == 0
    assert json.loads(out)["rows"] == [
        {"label": "a", "n": 48},
        {"label": "b", "n": 48},
        {"label": "part", "n": 24},
        {"label": "rep", "n": 144},
    ]
    code, out, _ = cli("sql", query, "--format", "csv")
    assert out.splitlines()[:2] == ['"label","n"', '"a",48']
    code, out, err = cli("sql", "SELECT * FROM cases", "--limit", "5")
    assert code == 0 and "first 5 rows" in err
    code, out, _ = cli("sql", "SHOW TABLES", "--json")
    assert "baselines" in {r["name"] for r in json.loads(out)["rows"]}


def test_baseline_list_takes_the_case_as_the_unit_like_run_totals(
    stored: dict[str, str | Path], cli: Cli
) -> None:
    # a run sampled several times per case: the baseline's pass rate is the run's (repeats
    # averaged per case first), not the share of passing answers
    assert cli("baseline", "set", "rep", "--name", "sampled")[0] == 0
    code, out, _ = cli("baseline", "list", "--json")
    assert code == 0
    (row,) = [r for r in json.loads(out)["baselines"] if r["name"] == "sampled"]
    _, out, _ = cli("show", "rep", "--json")
    totals = json.loads(out)["totals"]
    assert row["n"] == totals["n"] and row["n_passed"] == totals["n_passed"]
    assert row["n_cases"] == totals["n_cases"] < row["n"]
    assert row["pass_rate"] == pytest.approx(totals["pass_rate"], abs=1e-12)
    assert cli("baseline", "remove", "sampled")[0] == 0  # the module's warehouse as it was


REGRESSION = """\
  regression:
    max_drop_pass_rate: 0.02
    per_cell: {max_drop_pass_rate: 0.5}
    criteria: {correct: {max_drop_score: 0.5}}
"""


def variant_of(config: Path, name: str, terse_rate: float) -> Path:
    """A copy of the quickstart config whose mock-small answers terse prompts in the wrong
    format for ``terse_rate`` of the cases, with regression thresholds."""
    text = config.read_text()
    assert TERSE_RULE in text
    text = text.replace(TERSE_RULE, TERSE_RULE.replace("0.3", str(terse_rate)))
    target = config.with_name(f"{name}.yaml")
    target.write_text(text.rstrip("\n") + "\n" + REGRESSION)
    return target


def pass_vector(db: Path, run_id: str) -> dict[tuple[str, str, str, int], int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT variant, model, case_id, repeat, passed::INT FROM cases WHERE run_id = ?",
            [run_id],
        ).fetchall()
    return {tuple(r[:4]): r[4] for r in rows}  # type: ignore[misc]


def test_planted_regression_fails_the_run_and_an_improvement_passes(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        """Commands other than `run` in this process (fast)."""
        code, stdout, stderr = evalwh_inprocess(capsys, *args)
        return subprocess.CompletedProcess(args, code, stdout, stderr)

    base = evalwh.run_eval(quickstart, output_dir=out, label="base")
    assert cli("baseline", "set", "base", "-o", str(out)).returncode == 0

    worse = run_cli("run", str(variant_of(quickstart, "worse", 0.7)), "-o", str(out), "-l", "w")
    assert worse.returncode == 1, worse.stderr
    # the reason, by how much, with n: computed here from the two runs' rows
    db = out / "warehouse.duckdb"
    a, b = pass_vector(db, base.run_id), pass_vector(db, evalwh.open_warehouse(db).resolve("w"))
    drop = -statistics.mean(b[k] - a[k] for k in a)
    assert drop > 0.02
    line = f"FAIL pass_rate_drop <= 0.02 vs baseline {base.run_id} for run: {drop:.4g} (n=48)"
    assert line in worse.stdout and f"off by {drop - 0.02:.4g}" in worse.stdout, worse.stdout

    gate = cli("gate", "w", "-o", str(out))
    assert gate.returncode == 1
    assert f"pass_rate_drop <= 0.02 vs baseline {base.run_id} for run: {drop:.4g} (n=48)" in (
        gate.stdout
    )
    assert cli("gate", "base", "-o", str(out)).returncode == 0

    better = run_cli("run", str(variant_of(quickstart, "better", 0.0)), "-o", str(out), "-l", "b")
    assert better.returncode == 0, better.stdout + better.stderr
    data = json.loads(cli("gate", "b", "--json", "-o", str(out)).stdout)
    regression = [r for r in data["rules"] if r["kind"] == "regression"]
    assert data["passed"] and data["baseline_id"] == base.run_id
    assert {r["scope"] for r in regression} == {"run", "cell", "criterion"}
    run_rule = next(r for r in regression if r["scope"] == "run")
    assert run_rule["value"] < 0 and run_rule["n"] == 48  # a negative drop: it improved

    # --baseline overrides the pin: the original config is a regression versus "b"
    again = run_cli("run", str(variant_of(quickstart, "same", 0.3)), "-o", str(out), "-q")
    assert again.returncode == 0, again.stdout  # versus the pinned base: no drop at all
    override = run_cli(
        "run", str(variant_of(quickstart, "same", 0.3)), "-o", str(out), "--baseline", "b"
    )
    assert override.returncode == 1 and "FAIL pass_rate_drop <= 0.02 vs baseline" in override.stdout

    # without a pinned baseline the gate fails, naming the baseline and why, for `evalwh run`
    # and `evalwh gate` alike (it passed unchecked); `on_missing_baseline: pass` passes it,
    # with a note that says the same
    assert cli("baseline", "remove", "-o", str(out)).returncode == 0
    unresolved = (
        "FAIL regression baseline 'baseline' could not be resolved: no baseline pinned as "
        "'baseline' (pin one with `evalwh baseline set RUN`); limits not judged "
        "(on_missing_baseline: pass skips them)"
    )
    unpinned = run_cli("run", str(variant_of(quickstart, "better", 0.0)), "-o", str(out))
    assert unpinned.returncode == 1, unpinned.stdout + unpinned.stderr
    assert "thresholds: 1 of 7 failed" in unpinned.stdout  # 6 absolute rules passed
    assert unresolved in " ".join(unpinned.stdout.split()), unpinned.stdout
    failed = cli("gate", "w", "-o", str(out))
    assert failed.returncode == 1, failed.stdout
    assert unresolved in " ".join(failed.stdout.split()), failed.stdout
    data = json.loads(cli("gate", "w", "--json", "-o", str(out)).stdout)
    assert data["passed"] is False and data["baseline_id"] is None
    (rule,) = [r for r in data["rules"] if not r["passed"]]
    assert (rule["kind"], rule["message"]) == ("baseline", unresolved.removeprefix("FAIL "))
    # the reports carry the same verdict (a rule with no limit must not break the JUnit file)
    junit = tmp_path / "gate.xml"
    assert (
        cli("export", "w", "--format", "junit", "--out", str(junit), "-o", str(out)).returncode == 0
    )
    assert 'name="baseline resolves for run"' in junit.read_text()

    lenient = variant_of(quickstart, "lenient", 0.0)
    text = lenient.read_text().replace(
        "  regression:\n", "  regression:\n    on_missing_baseline: pass\n"
    )
    lenient.write_text(text)
    passed = run_cli("run", str(lenient), "-o", str(out), "-l", "lenient")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    skipped = (
        "regression thresholds skipped (on_missing_baseline: pass): no baseline pinned as "
        "'baseline'"
    )
    assert skipped in " ".join(passed.stderr.split()), passed.stderr
    gate_passed = cli("gate", "lenient", "-o", str(out))
    assert gate_passed.returncode == 0, gate_passed.stdout
    assert skipped in " ".join(gate_passed.stderr.split()), gate_passed.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "a", "b", "--html", "{tmp}/cmp.html"),
        ("gate", "a", "--baseline", "b"),
        ("show", "a", "--by", "topic"),
        ("last",),
        ("repeats", "rep"),
        ("list",),
    ],
    ids=lambda a: a[0],
)
def test_a_read_command_opens_the_warehouse_once_and_defines_the_macros_once(
    stored: dict[str, str | Path],
    cli: Cli,
    args: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each of these asks several named queries (compare ~15, show --by ~12): they share one
    read connection, and the macros are defined on it once (each definition 5-15 ms)."""
    from evalwh.warehouse import connect, queries

    opened: list[bool] = []
    defined: list[int] = []
    real_connect, real_macros = connect.duckdb.connect, queries.macros

    def counting(*a: object, **k: object) -> duckdb.DuckDBPyConnection:
        opened.append(bool(k.get("read_only")))
        return real_connect(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(connect.duckdb, "connect", counting)
    monkeypatch.setattr(queries, "macros", lambda: defined.append(1) or real_macros())
    code, _, err = cli(*(a.format(tmp=tmp_path) for a in args))
    assert code in (0, 1), err  # the gate may fail: it still read
    assert opened == [True]
    assert len(defined) == 1
