"""Pairwise comparisons (evalwh/engine/pairwise.py): which cells pair, which sides are eligible,
and how each order's verdict is stored.

Two mock runs feed most tests here, through module-scoped fixtures. The first pins the
`require:` eligibility rule, the verdicts of pairs decided without the judge (with the reason
stored in `pairs.excluded_reason`), and what a judged pair stores (question shown to the
judge, cost, flip flag, a UTC timestamp though the run's local zone is 14 hours ahead). The
second, run twice with a priced judge, pins what a judged pair stores per order (side words,
rationales), replies with no verdict, a failed judge call, and the judge cost.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.config.model import Comparison, Side
from evalwh.engine.pairwise import _matches, _ok, _side_word, _sides
from tests.conftest import write


def row(error: str | None = None) -> dict[str, Any]:
    return {"error": error, "check_passed": None, "criteria_passed": []}


def test_a_side_whose_request_failed_is_ineligible_with_the_reason_no_answer() -> None:
    assert _ok(row("timeout"), ()) == (False, "no answer (request failed)")
    assert _ok(row(), ()) == (True, None)


def test_a_baseline_cell_without_a_candidate_cell_makes_no_pair() -> None:
    comparison = Comparison(
        name="c", judge="j", baseline=Side(model="a"), candidate=Side(model="b")
    )
    lone: dict[tuple[str, str, str, int], dict[str, Any]] = {("v", "a", "case1", 0): row()}
    assert list(_sides(comparison, lone)) == []
    both = {**lone, ("v", "b", "case1", 0): row()}
    assert list(_sides(comparison, both)) == [(("v", "a", "case1", 0), ("v", "b", "case1", 0))]


def test_a_side_matches_a_cell_only_on_every_part_it_names() -> None:
    """A side naming a model matches that model under any variant; naming a variant, that
    variant under any model; naming both, only the cells that have both."""
    assert _matches(Side(model="a"), "v1", "a") and _matches(Side(model="a"), "v2", "a")
    assert not _matches(Side(model="a"), "v1", "b")
    assert _matches(Side(variant="v1"), "v1", "a") and _matches(Side(variant="v1"), "v1", "b")
    assert not _matches(Side(variant="v1"), "v2", "a")
    both = Side(model="a", variant="v1")
    assert _matches(both, "v1", "a")
    assert not _matches(both, "v2", "a") and not _matches(both, "v1", "b")


def test_each_orders_verdict_is_stored_as_the_side_it_names() -> None:
    """In the AB order A is the baseline; in the BA order A is the candidate."""
    words = {v: _side_word(v, first="baseline") for v in ("A", "B", "tie", "bogus")}
    assert words == {"A": "baseline", "B": "candidate", "tie": "tie", "bogus": "invalid"}
    assert _side_word("A", first="candidate") == "candidate"
    assert _side_word("B", first="candidate") == "baseline"


# base / cand answer with their case's vars; criteria alpha and beta look for those words.
# The judge names the answer holding "gamma" only when the prompt shows the question (QMARK);
# without it, it calls both orders a tie.
REQUIRE_CONFIG = """\
models:
  - id: base
    provider: mock
    mock: {default: "{{ vars.base }}"}
  - id: cand
    provider: mock
    mock: {default: "{{ vars.cand }}"}
variants:
  - id: v
    messages: [{role: user, content: "QMARK {{ q }}"}]
cases:
  - {id: c1-base-fails-alpha, vars: {q: one, base: "beta", cand: "alpha beta"}}
  - {id: c2-cand-fails-both, vars: {q: two, base: "alpha beta", cand: "delta"}}
  - {id: c3-both-fail, vars: {q: three, base: "alpha", cand: "delta"}}
  - {id: c4-both-pass, vars: {q: four, base: "alpha beta", cand: "alpha beta gamma"}}
judges:
  - id: j
    model:
      id: j
      provider: mock
      mock:
        default: >-
          {% set a = prompt.split("Answer A:")[1].split("Answer B:")[0] %}{"winner":
          "{{ ('A' if 'gamma' in a else 'B') if 'QMARK' in prompt else 'tie' }}",
          "rationale": "r"}
scorecard:
  - {name: alpha, type: contains, value: alpha, required: false}
  - {name: beta, type: contains, value: beta, required: false}
pairwise:
  - name: cmp
    judge: j
    baseline: {model: base}
    candidate: {model: cand}
    require: [alpha, beta]
"""


# A zone 14 hours ahead of UTC: a local clock read as UTC would be far off.
FAR_ZONE = "Pacific/Kiritimati"


Rows = dict[str, dict[str, Any]]


def _set_tz(zone: str | None) -> None:
    if zone is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = zone
    time.tzset()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Rows, tuple[float, float]]:
    """Run the config once (in a local zone far from UTC); the pairs rows by case id, and the
    wall-clock window the run ran in."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX-only")
    tmp = tmp_path_factory.mktemp("pairwise")
    cfg = write(tmp / "eval.yaml", REQUIRE_CONFIG)
    old_tz = os.environ.get("TZ")
    _set_tz(FAR_ZONE)
    try:
        before = time.time()
        evalwh.run_eval(cfg, output_dir=tmp / "out")
        after = time.time()
    finally:
        _set_tz(old_tz)
    with duckdb.connect(str(tmp / "out" / "warehouse.duckdb"), read_only=True) as con:
        cursor = con.execute(
            "SELECT case_id, verdict, verdict_ab, verdict_ba, flipped, eligible, "
            "excluded_reason, baseline_ok, candidate_ok, error, cost_usd, "
            "epoch(created_at) AS created_s FROM pairs"
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    return {str(r["case_id"]): r for r in rows}, (before, after)


@pytest.fixture
def pairs(run: tuple[Rows, tuple[float, float]]) -> Rows:
    return run[0]


def test_every_case_makes_one_pair(pairs: Rows) -> None:
    assert sorted(pairs) == [
        "c1-base-fails-alpha",
        "c2-cand-fails-both",
        "c3-both-fail",
        "c4-both-pass",
    ]


@pytest.mark.parametrize(
    ("case", "verdict", "reason", "oks"),
    [
        # the baseline misses one required criterion: the candidate wins
        ("c1-base-fails-alpha", "candidate", "baseline: failed required criterion alpha",
         (False, True)),
        # the candidate misses both: every missing one is listed, in `require` order
        ("c2-cand-fails-both", "baseline", "candidate: failed required criterion alpha, beta",
         (True, False)),
        # both sides miss some: a tie, with both reasons joined by a semicolon
        ("c3-both-fail", "tie", "baseline: failed required criterion beta; "
         "candidate: failed required criterion alpha, beta", (False, False)),
    ],
)  # fmt: skip
def test_a_side_missing_a_required_criterion_decides_the_pair_unjudged_saying_why(
    pairs: Rows, case: str, verdict: str, reason: str, oks: tuple[bool, bool]
) -> None:
    """Not judged (no per-order verdicts); the verdict and the reason name the failing side."""
    row = pairs[case]
    assert row["verdict"] == verdict
    assert (row["verdict_ab"], row["verdict_ba"]) == (None, None)
    assert row["excluded_reason"] == reason
    assert (row["eligible"], row["baseline_ok"], row["candidate_ok"]) == (False, *oks)


def test_pairs_decided_without_the_judge_are_not_flips_and_cost_nothing(
    pairs: Rows,
) -> None:
    for case in ("c1-base-fails-alpha", "c2-cand-fails-both", "c3-both-fail"):
        row = pairs[case]
        assert row["flipped"] is False, case
        assert row["cost_usd"] is None, case
        assert row["error"] is None, case


def test_the_judge_sees_the_question_and_a_consistent_verdict_is_not_a_flip(
    pairs: Rows,
) -> None:
    """Both sides passed `require`: judged in both orders; the mock judge picks the better
    answer only when the prompt holds the question text, so `candidate` proves it saw it."""
    row = pairs["c4-both-pass"]
    assert (row["verdict_ab"], row["verdict_ba"]) == ("candidate", "candidate")
    assert row["verdict"] == "candidate"
    assert row["flipped"] is False
    assert (row["eligible"], row["excluded_reason"], row["error"]) == (True, None, None)


def test_a_judged_pair_with_an_unpriced_judge_costs_zero(
    pairs: Rows,
) -> None:
    assert pairs["c4-both-pass"]["cost_usd"] == 0.0


def test_pairs_are_stamped_with_the_true_utc_time_whatever_the_local_zone(
    run: tuple[Rows, tuple[float, float]],
) -> None:
    """The run ran with TZ 14 hours ahead of UTC; created_at is still the real instant."""
    pairs, (before, after) = run
    for case, row in pairs.items():
        assert before - 1 <= row["created_s"] <= after + 1, case


def test_ok_lists_every_missing_required_criterion_in_require_order() -> None:
    row = {"error": None, "check_passed": None, "criteria_passed": ["b"]}
    assert _ok(row, ("c", "b", "a")) == (False, "failed required criterion c, a")
    assert _ok(row, ("b",)) == (True, None)
    assert _ok(row, ()) == (True, None)


def test_side_word_names_the_side_shown_first_for_a_and_the_other_side_for_b() -> None:
    assert _side_word("A", first="baseline") == "baseline"
    assert _side_word("B", first="baseline") == "candidate"
    assert _side_word("A", first="candidate") == "candidate"
    assert _side_word("B", first="candidate") == "baseline"
    for first in ("baseline", "candidate"):
        assert _side_word("tie", first=first) == "tie"
        for other in ("invalid", "TIE", "a", "", "C"):
            assert _side_word(other, first=first) == "invalid", (other, first)


# Every pair here is eligible (nothing is required), so all are judged in both orders. The
# judge's behaviour is set by the case's `mode`: "first" names Answer A whatever it is (a flip)
# with the answer it saw first as rationale, "tie" ties, "garbage" replies with no verdict at
# all (the first answer, then 200 characters of filler). It fails outright when Answer A is
# "boom", i.e. in the baseline-first order of case g4. It costs 1000 $/Mtok of output and
# nothing for input; the mock counts ceil(len / 4) tokens.
PRICED_CONFIG = """\
models:
  - id: base
    provider: mock
    mock: {default: "{{ vars.base }}"}
  - id: cand
    provider: mock
    mock: {default: "{{ vars.cand }}"}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - {id: g1-flip, vars: {q: one, mode: first, base: apple, cand: pear}}
  - {id: g2-tie, vars: {q: two, mode: tie, base: plum, cand: fig}}
  - {id: g3-garbage, vars: {q: three, mode: garbage, base: kiwi, cand: lime}}
  - {id: g4-fails-baseline-first, vars: {q: four, mode: first, base: boom, cand: date}}
judges:
  - id: j
    model:
      id: j
      provider: mock
      max_retries: 0
      price: {input_per_mtok: 0, output_per_mtok: 1000}
      mock:
        rules:
          - when: {prompt: "Answer A:\\\\s*boom"}
            error: judge exploded
        default: >-
          {% set a = prompt.split("Answer A:")[1].split("Answer B:")[0] | trim %}{% if
          vars.mode == "first" %}{"winner": "A", "rationale": "first shown: {{ a }}"}{% elif
          vars.mode == "tie" %}{"winner": "tie", "rationale": "same"}{% else %}{{ a }}{{
          " blah" * 40 }}{% endif %}
scorecard:
  - {name: any, type: contains, value: a, required: false}
pairwise:
  - name: cmp
    judge: j
    baseline: {model: base}
    candidate: {model: cand}
"""


def _reply_cost(reply: str) -> float:
    """What the priced mock judge charges for one reply: ceil(len / 4) tokens at $0.001."""
    return (len(reply) + 3) // 4 * 1000 / 1e6


def _first_reply(a: str) -> str:
    return '{"winner": "A", "rationale": "first shown: ' + a + '"}'


def _garbage_reply(a: str) -> str:
    return a + " blah" * 40


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Rows, Rows]:
    """Run the priced config twice into one warehouse; the pairs rows by case id of the first
    run, and of the second (whose judge answers all come from the response cache, save the
    failing call, which is never cached)."""
    tmp = tmp_path_factory.mktemp("pairwise-priced")
    cfg = write(tmp / "eval.yaml", PRICED_CONFIG)
    first = evalwh.run_eval(cfg, output_dir=tmp / "out")
    second = evalwh.run_eval(cfg, output_dir=tmp / "out")
    runs: list[Rows] = []
    with duckdb.connect(str(tmp / "out" / "warehouse.duckdb"), read_only=True) as con:
        for run_id in (first.run_id, second.run_id):
            cursor = con.execute(
                "SELECT case_id, verdict, verdict_ab, verdict_ba, flipped, eligible, "
                "excluded_reason, rationale_ab, rationale_ba, error, cost_usd FROM pairs "
                "WHERE run_id = ?",
                [run_id],
            )
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
            runs.append({str(r["case_id"]): r for r in rows})
    return runs[0], runs[1]


@pytest.fixture
def priced(judged: tuple[Rows, Rows]) -> Rows:
    return judged[0]


def test_a_judge_naming_whatever_comes_first_is_a_flip_stored_as_the_side_each_order_named(
    priced: Rows,
) -> None:
    """A in baseline-first order is the baseline, A in candidate-first order the candidate:
    the orders disagree, so the pair is a flipped tie, still eligible and error-free."""
    row = priced["g1-flip"]
    assert (row["verdict_ab"], row["verdict_ba"]) == ("baseline", "candidate")
    assert (row["verdict"], row["flipped"]) == ("tie", True)
    assert (row["eligible"], row["excluded_reason"], row["error"]) == (True, None, None)


def test_each_order_stores_the_rationale_the_judge_gave_in_that_order(priced: Rows) -> None:
    row = priced["g1-flip"]
    assert (row["rationale_ab"], row["rationale_ba"]) == (
        "first shown: apple",
        "first shown: pear",
    )
    assert (priced["g2-tie"]["rationale_ab"], priced["g2-tie"]["rationale_ba"]) == (
        "same",
        "same",
    )


def test_a_tie_in_both_orders_is_stored_as_tie_for_each_order_and_is_no_flip(
    priced: Rows,
) -> None:
    row = priced["g2-tie"]
    assert (row["verdict_ab"], row["verdict_ba"], row["verdict"]) == ("tie", "tie", "tie")
    assert row["flipped"] is False
    assert (row["eligible"], row["excluded_reason"], row["error"]) == (True, None, None)


def test_replies_without_a_verdict_are_invalid_and_excluded_quoting_160_chars_of_each(
    priced: Rows,
) -> None:
    """Each order's reply is quoted (repr of its first 160 characters; the replies are 204
    long), the two errors joined by "; ", and the pair leaves the win rate."""
    row = priced["g3-garbage"]
    assert (row["verdict_ab"], row["verdict_ba"], row["verdict"]) == (
        "invalid",
        "invalid",
        "tie",
    )
    assert row["flipped"] is False
    assert row["eligible"] is False
    assert row["excluded_reason"] == "the judge gave no usable verdict"
    assert row["error"] == (
        f"judge reply has no usable verdict: {_garbage_reply('kiwi')[:160]!r}; "
        f"judge reply has no usable verdict: {_garbage_reply('lime')[:160]!r}"
    )
    assert (row["rationale_ab"], row["rationale_ba"]) == (None, None)


def test_a_failed_judge_call_in_one_order_keeps_the_other_orders_verdict_and_excludes_the_pair(
    priced: Rows,
) -> None:
    """The baseline-first call fails; the candidate-first order is still judged and stored."""
    row = priced["g4-fails-baseline-first"]
    assert (row["verdict_ab"], row["verdict_ba"], row["verdict"]) == (
        "invalid",
        "candidate",
        "tie",
    )
    assert (row["rationale_ab"], row["rationale_ba"]) == (None, "first shown: date")
    assert row["flipped"] is False
    assert row["error"] == "judge call failed: mock: judge exploded"
    assert (row["eligible"], row["excluded_reason"]) == (
        False,
        "the judge gave no usable verdict",
    )


def test_a_priced_judge_costs_the_sum_of_both_orders_replies(priced: Rows) -> None:
    expected = {
        "g1-flip": _reply_cost(_first_reply("apple")) + _reply_cost(_first_reply("pear")),
        "g2-tie": 2 * _reply_cost('{"winner": "tie", "rationale": "same"}'),
        "g3-garbage": _reply_cost(_garbage_reply("kiwi")) + _reply_cost(_garbage_reply("lime")),
        # the failed call costs nothing
        "g4-fails-baseline-first": _reply_cost(_first_reply("date")),
    }
    assert {case: row["cost_usd"] for case, row in priced.items()} == pytest.approx(expected)


def test_a_rerun_judged_from_the_response_cache_costs_nothing_and_stores_the_same_verdicts(
    judged: tuple[Rows, Rows],
) -> None:
    first, second = judged
    assert {case: row["cost_usd"] for case, row in second.items()} == {case: 0.0 for case in first}
    strip = ("cost_usd",)
    assert {c: {k: v for k, v in r.items() if k not in strip} for c, r in second.items()} == {
        c: {k: v for k, v in r.items() if k not in strip} for c, r in first.items()
    }


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


# The judge writes a key shape (built in its template, so the config holds none): in its
# rationale ("first" cases), and 150 characters into a reply with no verdict, across the
# 160-character quote of the error.
LEAKY_JUDGE_CONFIG = PRICED_CONFIG.replace(
    """        default: >-
          {% set a = prompt.split("Answer A:")[1].split("Answer B:")[0] | trim %}{% if
          vars.mode == "first" %}{"winner": "A", "rationale": "first shown: {{ a }}"}{% elif
          vars.mode == "tie" %}{"winner": "tie", "rationale": "same"}{% else %}{{ a }}{{
          " blah" * 40 }}{% endif %}""",
    """        default: >-
          {% if vars.mode == "first" %}{"winner": "A", "rationale": "leaked sk-proj-{{ "E"
          * 40 }}"}{% else %}{{ "z" * 150 }} sk-proj-{{ "E" * 40 }}{% endif %}""",
)


@pytest.mark.parametrize("redact_outputs", [True, False])
def test_a_pairwise_judge_echoing_a_key_stores_its_rationale_and_quoted_reply_redacted(
    tmp_path: Path, redact_outputs: bool
) -> None:
    assert LEAKY_JUDGE_CONFIG != PRICED_CONFIG
    privacy = "" if redact_outputs else "privacy: {redact_outputs: false}\n"
    cfg = write(tmp_path / "eval.yaml", LEAKY_JUDGE_CONFIG + privacy)
    run = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, rationale_ab, error FROM pairs WHERE run_id = ?", [run.run_id]
        ).fetchall()
    by_case = {case_id: (rationale, error) for case_id, rationale, error in rows}
    key = "sk-proj-" + "E" * 40
    expected = "leaked ***" if redact_outputs else "leaked " + key
    assert by_case["g1-flip"][0] == expected
    error = by_case["g3-garbage"][1]
    assert "sk-proj-" not in error and "***" in error  # errors are redacted either way
