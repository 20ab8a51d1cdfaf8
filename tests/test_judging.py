"""LLM judges, pairwise judging in both orders, and calibration against human labels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

import evalwh
from evalwh.scoring.judge import combine, parse_score, parse_winner
from evalwh.warehouse import connect, queries
from tests.conftest import ROOT, run_cli, write
from tests.fakes.servers import FakeLLMServer, slow

PAIRWISE = ROOT / "examples" / "pairwise"


# -- reply parsing ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "scale", "score", "raw"),
    [
        ('{"score": 1, "rationale": "ok"}', (0, 1), 1.0, 1.0),
        ('Here you go:\n```json\n{"score": 4, "reasoning": "good"}\n```', (1, 5), 0.75, 4.0),
        ("I think it is decent. Score: 3/5", (1, 5), 0.5, 3.0),
        ("Rating = 0.8", (0, 1), 0.8, 0.8),
        ("**Score:** 7 / 10", (0, 1), 0.7, 0.7),
        ('{"score": "5 (excellent)"}', (1, 5), 1.0, 5.0),
        ('{"score": true}', (0, 1), 1.0, 1.0),
        ('{"score": false}', (0, 1), 0.0, 0.0),
        ('{"rating": 4}', (1, 5), 0.75, 4.0),
        ('{"grade": 2}', (1, 5), 0.25, 2.0),
        # a fraction on another scale is rescaled onto the judge's: 4/5 of 1..10 is 8.2
        ("I would say 4/5 overall.", (1, 10), 0.8, 8.2),
        ("Score: 3/4", (0, 10), 0.75, 7.5),
    ],
)
def test_score_replies_are_parsed_leniently(
    reply: str, scale: tuple[float, float], score: float, raw: float
) -> None:
    result = parse_score(reply, scale)
    assert result.error is None
    assert result.score == pytest.approx(score)
    assert result.details == {"raw_score": pytest.approx(raw)}


@pytest.mark.parametrize("reply", ["I cannot grade this.", "", '{"verdict": "good"}', "Score: 9"])
def test_unusable_score_is_an_error_not_a_crash(reply: str) -> None:
    result = parse_score(reply, (1, 5))
    assert result.error is not None and result.score == 0.0


@pytest.mark.parametrize(
    ("reply", "winner"),
    [
        ('{"winner": "B", "rationale": "x"}', "B"),
        ('```json\n{"verdict": "tie"}\n```', "tie"),
        ("After comparing both, the better answer is A.", "A"),
        ("Winner: **B**", "B"),
        ("A", "A"),
        ("They are equally good. Verdict: tie", "tie"),
        ("no idea", "invalid"),
    ],
)
def test_pairwise_replies(reply: str, winner: str) -> None:
    assert parse_winner(reply)[0] == winner


def test_a_win_needs_both_orders() -> None:
    # AB: A is the baseline; BA: A is the candidate.
    assert combine("B", "A") == ("candidate", False)
    assert combine("A", "B") == ("baseline", False)
    assert combine("A", "A") == ("tie", True)  # position bias: the first answer always wins
    assert combine("B", "tie") == ("tie", True)
    assert combine("tie", "tie") == ("tie", False)
    assert combine("invalid", "A") == ("tie", False)


# -- the statistics in SQL, against hand-computed values ----------------------------------------
def _fixture_warehouse(
    tmp_path: Path, pairs: list[tuple[str, str, bool, bool]]
) -> duckdb.DuckDBPyConnection:
    """pairs: (human label, judge verdict, eligible, flipped) per case."""
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    con = duckdb.connect(str(path))
    for i, (human, verdict, eligible, flipped) in enumerate(pairs):
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, baseline_model, "
            "candidate_variant, candidate_model, judge, judge_model, verdict, flipped, eligible, "
            "baseline_ok, candidate_ok, created_at) VALUES ('r', 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, ?, ?, "
            "true, ?, now())",
            [f"k{i}", verdict, flipped, eligible, eligible],
        )
        if human:
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
                "VALUES ('r', 'pairwise', 'c', ?, ?, NULL, NULL)",
                [f"k{i}", human],
            )
    return con


def test_kappa_matches_the_textbook_example(tmp_path: Path) -> None:
    # 50 items: human/judge candidate-candidate 20, candidate-baseline 5, baseline-candidate 10,
    # baseline-baseline 15 -> po = 0.70, pe = 0.5*0.6 + 0.5*0.4 = 0.50, kappa = 0.40.
    rows = (
        [("candidate", "candidate", True, False)] * 20
        + [("candidate", "baseline", True, False)] * 5
        + [("baseline", "candidate", True, False)] * 10
        + [("baseline", "baseline", True, False)] * 15
    )
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert row["n_labels"] == 50
    assert row["agreement"] == pytest.approx(0.70)
    assert row["chance_agreement"] == pytest.approx(0.50)
    assert row["kappa"] == pytest.approx(0.40)
    assert row["kappa_band"] == "fair"
    assert row["base_rate"] == pytest.approx(0.5)
    assert row["calibrated"] is False and row["headline_eligible"] is False
    confusion = {
        (r["human"], r["judge"]): r["n"]
        for r in queries.run_query(con, "calibration", run_id="r").to_pylist()
    }
    assert len(confusion) == 9
    assert (
        confusion[("candidate", "candidate")] == 20 and confusion[("baseline", "candidate")] == 10
    )
    assert confusion[("tie", "tie")] == 0


def _cohen_kappa(pairs: list[tuple[str, str]]) -> float:
    """An independent implementation (for checking the SQL): Cohen (1960)."""
    n = len(pairs)
    labels = sorted({x for p in pairs for x in p})
    po = sum(a == b for a, b in pairs) / n
    pe = sum(
        (sum(a == k for a, _ in pairs) / n) * (sum(b == k for _, b in pairs) / n) for k in labels
    )
    return (po - pe) / (1 - pe)


def test_win_rate_interval_flip_rate_and_three_class_kappa(tmp_path: Path) -> None:
    import itertools
    import random

    rng = random.Random(3)
    classes = ["baseline", "candidate", "tie"]
    rows = []
    for _ in range(60):
        human = rng.choice(classes)
        judge = human if rng.random() < 0.6 else rng.choice(classes)
        rows.append((human, judge, True, rng.random() < 0.2))
    rows += [(None, "candidate", False, False)] * 4  # excluded, unlabelled
    con = _fixture_warehouse(tmp_path, rows)
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.2, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    labelled = [(h, j) for h, j, e, _ in rows if h]
    assert row["kappa"] == pytest.approx(_cohen_kappa(labelled))
    wins = sum(1 for _, j, e, _ in rows if e and j == "candidate")
    n = 60
    assert (row["n"], row["n_excluded"], row["candidate_wins"]) == (n, 4, wins)
    p, z = wins / n, 1.959963984540054
    centre, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n),
    )
    assert row["win_rate_lo"] == pytest.approx(centre - half) and row[
        "win_rate_hi"
    ] == pytest.approx(centre + half)
    assert row["flip_rate"] == pytest.approx(sum(1 for *_, f in rows[:60] if f) / 60)
    del itertools


def test_undefined_kappa_is_not_a_headline(tmp_path: Path) -> None:
    con = _fixture_warehouse(tmp_path, [("tie", "tie", True, False)] * 25)  # chance agreement 1
    row = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()[0]
    assert (
        row["kappa"] is None
        and row["kappa_band"] == "undefined"
        and row["headline_eligible"] is False
    )


# -- end to end on the mock ---------------------------------------------------------------------
@pytest.fixture
def pairwise_example(tmp_path: Path) -> Path:
    shutil.copytree(PAIRWISE, tmp_path / "pairwise", ignore=shutil.ignore_patterns(".evalwh"))
    return tmp_path / "pairwise" / "eval.yaml"


def test_pairwise_example_prints_calibration_first_and_flags_the_win_rate(
    pairwise_example: Path, tmp_path: Path
) -> None:
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("calibration: kappa") < out.index("win rate:")
    assert "UNCALIBRATED" in out.split("win rate:")[1].splitlines()[0]
    data = json.loads(run_cli("--json", "show", "latest", cwd=tmp_path).stdout)
    comparison = data["pairwise"]["comparisons"][0]
    assert comparison["headline_eligible"] is False
    assert any(f.startswith("UNCALIBRATED") for f in comparison["flags"])
    assert comparison["n"] + comparison["n_excluded"] == comparison["n_pairs"] == 24
    with duckdb.connect(str(tmp_path / ".evalwh" / "warehouse.duckdb"), read_only=True) as con:
        orders = con.execute(
            "SELECT count(*) FROM pairs WHERE verdict_ab IS NOT NULL AND verdict_ba IS NOT NULL"
        ).fetchone()
        judged = con.execute(
            "SELECT count(*), count(judge_model) FROM scores WHERE criterion = 'judged'"
        ).fetchone()
    assert orders == (24,) and judged == (48, 48)


def test_on_below_floor_fail_fails_the_gate(pairwise_example: Path, tmp_path: Path) -> None:
    pairwise_example.write_text(
        pairwise_example.read_text().replace("on_below_floor: flag", "on_below_floor: fail")
    )
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL kappa >= 0.6 for pairwise large-vs-small" in result.stdout


def test_judge_calls_are_cached_and_costed_apart(pairwise_example: Path, tmp_path: Path) -> None:
    text = pairwise_example.read_text().replace(
        "      id: referee\n      provider: mock\n",
        "      id: referee\n      provider: mock\n      price: {input_per_mtok: 10, output_per_mtok: 30}\n",
    )
    pairwise_example.write_text(text)
    first = evalwh.run_eval(pairwise_example, output_dir=tmp_path / "out")
    assert first.pairwise is not None and first.pairwise["comparisons"][0]["judge_cost_usd"] > 0
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        answer_cost, judge_cost = con.execute(
            "SELECT sum(cost_usd), sum(judge_cost_usd) FROM cases"
        ).fetchone()  # type: ignore[misc]
    assert (
        answer_cost or 0
    ) == 0 and judge_cost > 0  # the answering mocks are free, the judge is not
    # pointwise and pairwise judge calls, shown apart from the answers' cost
    pairwise_cost = first.pairwise["comparisons"][0]["judge_cost_usd"]
    assert first.totals["judge_cost_usd"] == pytest.approx(judge_cost + pairwise_cost)
    second = evalwh.run_eval(pairwise_example, output_dir=tmp_path / "out")
    assert second.stats["requests"] == 0  # answers, pointwise and pairwise judgements all cached
    assert (
        second.pairwise["comparisons"][0]["candidate_wins"]
        == first.pairwise["comparisons"][0]["candidate_wins"]
    )
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        asked = con.execute(
            "SELECT CAST(totals->>'judge_requests' AS INTEGER) FROM runs ORDER BY started_at"
        ).fetchall()
        (prompts,) = con.execute(  # what the judge is shown: the case and the answer
            "SELECT count(DISTINCT (case_id, output)) FROM cases WHERE run_id = ?",
            [first.run_id],
        ).fetchone()  # type: ignore[misc]
    # one judge request per distinct prompt (the same answer to a case hits the cache), none
    # on the rerun
    assert asked == [(prompts,), (0,)] and 0 < prompts < 48
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        per_run = con.execute(
            "SELECT r.run_id = ?, sum(c.judge_cost_usd), "
            "(SELECT sum(s.cost_usd) FROM scores s WHERE s.run_id = r.run_id) "
            "FROM runs r JOIN cases c USING (run_id) GROUP BY r.run_id ORDER BY 1 DESC",
            [first.run_id],
        ).fetchall()
    # a case's judge cost is the sum of its judge calls' costs; a cached call costs nothing
    (_, first_cases, first_scores), (_, second_cases, second_scores) = per_run
    assert first_cases == pytest.approx(first_scores) and first_cases > 0
    assert second_cases == 0 and second_scores is None


GARBAGE = """\
models:
  - {id: m, provider: mock}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - {id: a, vars: {q: one}, expected: one, human_label: pass}
  - {id: b, vars: {q: two}, expected: two, human_label: fail}
judges:
  - id: j
    model:
      id: j
      provider: mock
      mock:
        rules:
          - when: {case: b}
            reply: "Honestly I am not sure what to say."
        default: '{"score": 1}'
scorecard:
  - {name: exact, type: exact}
  - {name: judged, type: llm-judge, judge: j}
"""


def test_a_garbage_judge_reply_fails_one_criterion_only(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", GARBAGE)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert (
        result.status == "completed" and result.totals["n"] == 2 and result.totals["n_errors"] == 0
    )
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, criterion, passed, error FROM scores ORDER BY ALL"
        ).fetchall()
    assert rows[0] == ("a", "exact", True, None) and rows[1] == ("a", "judged", True, None)
    assert rows[2] == ("b", "exact", True, None)
    assert rows[3][:3] == ("b", "judged", False) and "no usable score" in rows[3][3]
    # pointwise calibration counts the judged, labelled answers (the broken reply is left out)
    point = result.pairwise["pointwise"][0]
    assert point["criterion"] == "judged" and point["n_labels"] == 1 and point["agreement"] == 1.0


def test_unknown_judge_is_a_config_error(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", GARBAGE.replace("judge: j}", "judge: nobody}"))
    result = run_cli("validate", str(cfg), cwd=tmp_path)
    assert result.returncode == 2 and "unknown judge 'nobody'" in result.stderr


def test_calibrate_ranks_judges_by_agreement(pairwise_example: Path, tmp_path: Path) -> None:
    result = run_cli("calibrate", str(pairwise_example), "--json", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    ranking = [(r["rank"], r["judge"]) for r in data["ranking"] if r["kind"] == "pairwise"]
    assert ranking == [(1, "fair"), (2, "referee")]  # the position-biased judge agrees less
    fair, referee = (r for r in data["ranking"] if r["kind"] == "pairwise")
    assert fair["kappa"] > referee["kappa"] and fair["flip_rate"] == 0 and referee["flip_rate"] > 0
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"]
    assert {r["label"] for r in listed} == {"calibrate:fair", "calibrate:referee"}
    unknown = run_cli("calibrate", str(pairwise_example), "--judge", "nobody", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown judge(s) nobody" in unknown.stderr


def test_the_printed_example_in_the_docs_is_what_the_example_prints(
    pairwise_example: Path, tmp_path: Path
) -> None:
    doc = (ROOT / "docs" / "evaluating-judges.md").read_text()
    block = doc.split("```\npairwise large-vs-small")[1].split("```")[0]
    expected = ["pairwise large-vs-small" + block.splitlines()[0], *block.splitlines()[1:]]
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    printed = [line.rstrip() for line in result.stdout.splitlines()]
    for line in expected:
        assert line.rstrip() in printed, line


# --- pairwise labels that name the sides by model id ----------------------------------------


def _labelled(tmp_path: Path, labels: str) -> Path:
    import shutil

    target = tmp_path / "pw"
    shutil.copytree(
        PAIRWISE,
        target,
        ignore=shutil.ignore_patterns(".evalwh", "__pycache__"),
        dirs_exist_ok=True,
    )
    cfg = target / "eval.yaml"
    text = cfg.read_text()
    head, _, _ = text.partition("\nlabels:\n")
    cfg.write_text(head + "\nlabels:\n" + labels)
    return cfg


@pytest.mark.parametrize(
    ("label", "stored"),
    [
        ("{case: q01, prefer: B}", "candidate"),
        ("{case: q01, prefer: A}", "baseline"),
        ("{case: q01, prefer: tie}", "tie"),
        ("{case: q01, baseline: small, candidate: large, prefer: candidate}", "candidate"),
        ("{case: q01, baseline: small, candidate: large, prefer: baseline}", "baseline"),
        ("{case: q01, prefer: large}", "candidate"),
        ("{case: q01, prefer: small}", "baseline"),
        # the label names the sides the other way round: its preference is turned with them
        ("{case: q01, baseline: large, candidate: small, prefer: candidate}", "baseline"),
        ("{case: q01, baseline: large, candidate: small, prefer: A}", "candidate"),
        ("{case: q01, baseline: large, candidate: small, prefer: large}", "candidate"),
        ("{case: q01, baseline: large, candidate: small, prefer: tie}", "tie"),
    ],
)
def test_labels_name_sides_by_a_b_role_or_model_id(tmp_path: Path, label: str, stored: str) -> None:
    from evalwh.config.loader import load_config

    cfg = load_config(_labelled(tmp_path, f"  - {label}\n"))
    assert [(lb.case_id, lb.prefer) for lb in cfg.labels] == [("q01", stored)]


def test_a_label_preferring_no_side_is_an_error_naming_the_sides(tmp_path: Path) -> None:
    from evalwh.config.loader import load_config
    from evalwh.errors import ConfigError

    with pytest.raises(ConfigError, match="prefer 'medium' is none of") as exc:
        load_config(_labelled(tmp_path, "  - {case: q01, prefer: medium}\n"))
    assert exc.value.where == "labels[0].prefer" and exc.value.line is not None
    with pytest.raises(ConfigError, match="matches no pairwise comparison"):
        load_config(
            _labelled(tmp_path, "  - {case: q01, baseline: small, candidate: nope, prefer: A}\n")
        )


def test_a_label_preferring_a_side_of_another_comparison_lists_this_ones_sides(
    tmp_path: Path,
) -> None:
    from evalwh.config.loader import load_config
    from evalwh.config.model import Side
    from evalwh.errors import ConfigError

    cfg = _labelled(tmp_path, "  - {case: q01, comparison: large-vs-small, prefer: plain}\n")
    second = (
        "  - name: by-variant\n    judge: fair\n"
        "    baseline: {variant: plain, model: small}\n    candidate: {variant: plain, model: large}\n"
    )
    text = cfg.read_text().replace("\ncalibration:", second + "\ncalibration:", 1)
    cfg.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)  # 'plain' is a side of by-variant only
    assert exc.value.message == "prefer 'plain' names neither side of pairwise 'large-vs-small'"
    assert exc.value.fix == (
        "use A, B, tie, baseline, candidate, or a side's id: small (baseline), large (candidate)"
    )
    assert Side(model="large", variant="plain").describe() == "plain × large"
    assert Side(variant="plain").describe() == "plain"


# --- numeric pointwise labels: exact, within-N, weighted kappa, per slice ---------------------

ORDINAL = [  # case, human label, judge score, topic
    ("a", 1, 1, "x"),
    ("b", 2, 3, "x"),
    ("c", 3, 3, "x"),
    ("d", 4, 2, "y"),
    ("e", 5, 5, "y"),
    ("f", 3, 5, "y"),
]


def _ordinal_config(tmp_path: Path, extra: str = "") -> Path:
    cases = "\n".join(
        f"  - {{id: {c}, vars: {{q: {c}}}, expected: {c}, human_label: {h}, metadata: {{topic: {t}}}}}"
        for c, h, _, t in ORDINAL
    )
    rules = "\n".join(
        f"          - when: {{case: {c}}}\n            reply: '{{\"score\": {j}}}'"
        for c, _, j, _ in ORDINAL
    )
    return write(
        tmp_path / "eval.yaml",
        f"""\
models:
  - {{id: m, provider: mock}}
variants:
  - id: v
    messages: [{{role: user, content: "{{{{ q }}}}"}}]
cases:
{cases}
judges:
  - id: j
    scale: {{min: 1, max: 5}}
    model:
      id: j
      provider: mock
      mock:
        rules:
{rules}
scorecard:
  - {{name: judged, type: llm-judge, judge: j}}
{extra}""",
    )


def quadratic_kappa(pairs: list[tuple[int, int]]) -> float:
    """Weighted kappa computed the textbook way: weights (i-j)^2, expected from marginals."""
    cats = sorted({v for p in pairs for v in p})
    n = len(pairs)
    observed = sum((h - j) ** 2 for h, j in pairs) / n
    ph = {c: sum(1 for h, _ in pairs if h == c) / n for c in cats}
    pj = {c: sum(1 for _, j in pairs if j == c) / n for c in cats}
    expected = sum(ph[a] * pj[b] * (a - b) ** 2 for a in cats for b in cats)
    return 1 - observed / expected


def test_numeric_labels_get_exact_within_n_and_weighted_kappa(tmp_path: Path) -> None:
    cfg = _ordinal_config(tmp_path)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    [point] = result.pairwise["pointwise"]
    assert point["n_numeric"] == 6 and point["n_labels"] == 0 and point["kappa"] is None
    assert point["exact_agreement"] == pytest.approx(3 / 6)
    assert point["within"] == 1 and point["within_agreement"] == pytest.approx(4 / 6)
    expected = quadratic_kappa([(h, j) for _, h, j, _ in ORDINAL])
    assert point["weighted_kappa"] == pytest.approx(expected) and 0.6 < expected < 0.62
    # a perfect judge has weighted kappa 1; within 2 counts the two off-by-two answers
    cfg2 = _ordinal_config(tmp_path / "w2", "calibration: {within: 2}\n")
    [point2] = evalwh.run_eval(cfg2, output_dir=tmp_path / "out2").pairwise["pointwise"]
    assert point2["within"] == 2 and point2["within_agreement"] == 1.0


def test_calibrate_prints_kappa_per_task_and_slice(tmp_path: Path) -> None:
    cfg = _ordinal_config(tmp_path)
    from evalwh.api import calibrate

    data = calibrate(cfg, output_dir=tmp_path / "out", by="topic", within=0)
    [row] = data["ranking"]
    assert row["kind"] == "pointwise" and row["target"] == "judged"
    assert row["within"] == 0 and row["within_agreement"] == pytest.approx(3 / 6)  # = exact
    by_slice = {r["slice"]: r for r in data["slices"]}
    assert set(by_slice) == {"x", "y"}
    for topic in ("x", "y"):
        pairs = [(h, j) for _, h, j, t in ORDINAL if t == topic]
        assert by_slice[topic]["weighted_kappa"] == pytest.approx(quadratic_kappa(pairs))
        assert by_slice[topic]["n_numeric"] == 3
        # --within 0 reaches the slices too: within agreement is exact agreement
        assert by_slice[topic]["within"] == 0
        assert by_slice[topic]["within_agreement"] == by_slice[topic]["exact_agreement"]
    done = run_cli(
        "calibrate", str(cfg), "--by", "topic", "--within", "2", "-q", "-o", str(tmp_path / "o2")
    )
    assert done.returncode == 0, done.stderr
    assert "kappa per task and topic" in done.stdout
    assert "weighted kappa 0.61" in done.stdout and "within 2 100.0%" in done.stdout


def test_the_report_calibrates_a_criterion_labelled_with_scores(tmp_path: Path) -> None:
    """The bug it names: a criterion with numeric labels only was flagged "no human labels"
    on the run page (its pass/fail n is 0); its weighted kappa and n_numeric decide instead."""
    from evalwh.reports.html import render_run, run_flags
    from evalwh.warehouse.store import Warehouse

    def flags(extra: str, name: str) -> tuple[str | None, str]:
        cfg = _ordinal_config(tmp_path / name, extra)
        run = evalwh.run_eval(cfg, output_dir=tmp_path / name / "out")
        store = Warehouse(tmp_path / name / "out" / "warehouse.duckdb")
        return run_flags(store, run.run_id).get("criterion:judged"), render_run(store, run.run_id)

    few, page = flags("", "few")  # 6 numeric labels, weighted kappa 0.61; floor 0.6 on 20
    assert few == "UNCALIBRATED: 6 label(s), fewer than 20"
    assert "weighted kappa 0.61, exact 50.0%, within 1 66.7% (n=6, numeric labels)" in page
    enough, _ = flags("calibration: {min_labels: 6}\n", "enough")  # exactly at the floor
    assert enough is None
    strict, _ = flags("calibration: {min_labels: 6, min_kappa: 0.62}\n", "strict")
    assert strict == "UNCALIBRATED: weighted kappa 0.61 below 0.62"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        # exactly at both floors: a headline
        ({"kappa": 0.6, "n_labels": 20, "flip_flagged": False}, []),
        (
            {"kappa": 0.59, "n_labels": 19, "flip_flagged": True, "flip_rate": 0.35},
            [
                "UNCALIBRATED: kappa 0.59 below the floor 0.6",
                "UNCALIBRATED: 19 label(s), fewer than 20",
                "FLIPPY: flip rate 0.35 above 0.3",
            ],
        ),
        (
            {"kappa": None, "n_labels": 0, "flip_flagged": False},
            [
                "UNCALIBRATED: kappa undefined (n_labels=0)",
                "UNCALIBRATED: 0 label(s), fewer than 20",
            ],
        ),
    ],
)
def test_a_comparison_is_flagged_below_each_floor_and_not_at_it(
    row: dict[str, object], expected: list[str]
) -> None:
    from evalwh.analysis.judging import flags

    cal = {"min_kappa": 0.6, "min_labels": 20, "max_flip_rate": 0.3}
    assert flags(row, cal) == expected


FAILING_JUDGE = """\
models:
  - {id: m, provider: mock, mock: {default: "an answer"}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - {id: fine, vars: {q: one}}
  - {id: broken, vars: {q: two}}
judges:
  - id: j
    scale: {min: 1, max: 5}
    model:
      id: jm
      provider: mock
      max_retries: 0
      mock:
        rules:
          - when: {case: broken}
            error: judge exploded on the answer an answer
        default: '{"score": 4}'
scorecard:
  - {name: judged, type: llm-judge, judge: j}
"""


@pytest.mark.parametrize(
    ("privacy", "stored"),
    [
        ("", "judge 'j' failed: mock: judge exploded on the answer an answer"),
        # a no-look run stores that a criterion erred, never the text (it may echo the answer)
        ("privacy: {no_look: true}\n", "error"),
    ],
)
def test_a_failed_judge_request_scores_zero_with_the_reason_and_the_run_goes_on(
    tmp_path: Path, privacy: str, stored: str
) -> None:
    cfg = write(tmp_path / "eval.yaml", FAILING_JUDGE + privacy)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, score, error, judge_model, raw_score FROM scores "
            "WHERE criterion = 'judged' ORDER BY case_id"
        ).fetchall()
    assert rows == [("broken", 0.0, stored, "jm", None), ("fine", 0.75, None, "jm", 4.0)]


def test_the_judge_is_shown_the_question_the_answer_was_given(tmp_path: Path) -> None:
    # the judge scores 5 only when its prompt holds the case's question
    cfg = write(
        tmp_path / "eval.yaml",
        FAILING_JUDGE.replace(
            "          - when: {case: broken}\n"
            "            error: judge exploded on the answer an answer\n",
            "          - when: {prompt: 'what is two plus two'}\n"
            "            reply: '{\"score\": 5}'\n",
        ).replace("vars: {q: two}", "vars: {q: what is two plus two}"),
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, raw_score FROM scores WHERE criterion = 'judged' ORDER BY case_id"
        ).fetchall()
    assert rows == [("broken", 5.0), ("fine", 4.0)]


def test_calibrating_two_judges_slices_each_ones_own_pairs_and_flags_each_against_the_floor(
    pairwise_example: Path, tmp_path: Path
) -> None:
    # a floor of 0.5 lies between the two judges' kappas (fair 0.54, referee 0.40)
    pairwise_example.write_text(
        pairwise_example.read_text().replace("min_kappa: 0.6", "min_kappa: 0.5")
    )
    from evalwh.api import calibrate

    data = calibrate(pairwise_example, output_dir=tmp_path / "out", by="difficulty")
    ranking = {r["judge"]: r for r in data["ranking"]}
    assert ranking["fair"]["calibrated"] is True and ranking["referee"]["calibrated"] is False
    for judge, row in ranking.items():
        mine = [s for s in data["slices"] if s["judge"] == judge and s["kind"] == "pairwise"]
        # the judges' runs share one warehouse: each judge's slices count its own run only
        assert {s["slice"] for s in mine} == {"easy", "hard"}
        assert sum(s["n"] for s in mine) == row["n_labels"] == 24


@pytest.mark.parametrize("adaptive", ["true", "false"])
def test_a_judge_models_max_concurrency_bounds_its_requests(tmp_path: Path, adaptive: str) -> None:
    # the judge has a limit of its own, with adaptive concurrency (its ceiling) or without (a
    # plain limit): the answering model's concurrency does not spill over
    verdict = json.dumps({"score": 1, "rationale": "fine"})
    with FakeLLMServer(default=slow(0.05, verdict)) as server:
        cfg = write(
            tmp_path / "eval.yaml",
            f"""
models: [{{id: m, provider: mock}}]
judges:
  - id: j
    rubric: Is it an answer?
    model: {{id: jm, provider: openai-compatible, model: judge, base_url: '{server.openai_url}',
             price: 0, max_concurrency: 1, adaptive_concurrency: {adaptive}}}
variants: [{{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}]
cases: [{", ".join(f"{{id: c{i}, vars: {{q: q{i}}}}}" for i in range(6))}]
scorecard: [{{name: graded, type: llm-judge, judge: j}}]
settings: {{concurrency: 6}}
""",
        )
        result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
        assert (result.totals["n_passed"], server.count) == (6, 6)
        assert server.max_in_flight == 1
