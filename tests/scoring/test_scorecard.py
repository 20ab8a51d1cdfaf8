"""The scorecard (evalwh/scoring/scorecard.py), row by row: what each criterion row holds for
every kind of scorer result (good, out of range, an error, a wrong type, an exception), the
weighted case score without weight-0 criteria, the required-criteria verdict and thresholds,
and build_scorecard's config errors. The shared float tolerance of a threshold
(evalwh/scoring/tolerance.py, one constant) is tested here, where it decides a pass.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.scorecard import CaseScore, CriterionScore, Scorecard, build_scorecard
from tests.builders import STEP
from tests.scoring.test_base import FILE
from tests.scoring.test_base import crit as scorer_crit
from tests.scoring.test_builtin import SCHEMA

CASE = Case(id="k", vars={}, expected="x")


def card(*entries: tuple[Criterion, Any]) -> Scorecard:
    """A scorecard of (criterion, scorer) pairs; a scorer that is not callable is returned."""
    fns = [fn if callable(fn) else (lambda out, case, v=fn: v) for _, fn in entries]
    return Scorecard([c for c, _ in entries], fns)


def crit(name: str = "c", **kw: Any) -> Criterion:
    return Criterion(name=name, type=kw.pop("type", "t"), **kw)


def one(result: Any, **kw: Any) -> CriterionScore:
    (row,) = card((crit(**kw), result)).score("out", CASE).criteria
    return row


def test_a_good_result_keeps_everything_it_carries() -> None:
    row = one(ScoreResult(0.75, details={"d": 1}, rationale="why"), weight=2.0, threshold=0.7)
    assert row == CriterionScore(
        name="c",
        scorer="t",
        score=0.75,
        passed=True,
        weight=2.0,
        required=True,
        details={"d": 1},
        rationale="why",
        error=None,
    )
    # an explicit verdict wins over the threshold, both ways
    assert one(ScoreResult(0.1, passed=True)).passed is True
    assert one(ScoreResult(0.9, passed=False)).passed is False


@pytest.mark.parametrize("value", [0.0, 1.0, 0, 1])
def test_the_ends_of_the_range_are_valid_scores(value: float) -> None:
    row = one(ScoreResult(value), threshold=0.0)
    assert row.error is None and row.score == float(value) and row.passed is True
    assert type(row.score) is float


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, True, "0.5", None, math.inf])
def test_a_score_outside_0_1_is_a_scorer_error(value: Any) -> None:
    row = one(ScoreResult(value, details={"d": 2}, rationale="r"), weight=3.0, required=False)
    assert row.error == f"scorer returned score {value!r}, outside [0, 1]"
    assert (row.name, row.scorer, row.score, row.passed) == ("c", "t", 0.0, False)
    assert (row.weight, row.required, row.details, row.rationale) == (3.0, False, {"d": 2}, "r")


def test_a_result_with_an_error_fails_with_that_error() -> None:
    row = one(ScoreResult(0.9, passed=True, error="bad regex", details={"d": 3}))
    assert (row.score, row.passed, row.error, row.details) == (0.0, False, "bad regex", {"d": 3})


def test_a_scorer_returning_something_else_is_an_error() -> None:
    row = one(0.9, weight=2.0, required=False)
    assert row.error == "scorer returned float, not a ScoreResult"
    assert (row.name, row.scorer, row.score, row.passed) == ("c", "t", 0.0, False)
    assert (row.weight, row.required, row.details, row.rationale) == (2.0, False, None, None)


def test_a_scorer_that_raises_fails_its_criterion_only() -> None:
    def boom(output: str, case: Case) -> ScoreResult:
        raise ValueError("no luck")

    def silent(output: str, case: Case) -> ScoreResult:
        raise KeyError

    scored = card(
        (crit("a", weight=2.0, required=False), boom),
        (crit("b"), ScoreResult(1.0)),
        (crit("c", required=False), silent),
    ).score("out", CASE)
    a, b, c = scored.criteria
    assert (a.name, a.scorer, a.score, a.passed, a.weight, a.required) == (
        "a",
        "t",
        0.0,
        False,
        2.0,
        False,
    )
    assert a.error == "ValueError: no luck" and a.details is None and a.rationale is None
    assert c.error == "KeyError"
    assert b.error is None and b.passed is True
    # only b is required, and it passed; the score is the weighted mean (0*2 + 1*1 + 0*1) / 4
    assert scored.passed is True and scored.score == pytest.approx(0.25)


def test_the_case_score_is_the_weighted_mean_without_weight_0_criteria() -> None:
    scored = card(
        (crit("a", weight=2.0), ScoreResult(1.0)),
        (crit("b", weight=1.0), ScoreResult(0.4)),
        (crit("info", weight=0.0, required=False), ScoreResult(0.0)),
    ).score("out", CASE)
    assert scored.score == pytest.approx((2 * 1.0 + 1 * 0.4) / 3)
    assert scored.passed is False  # b: 0.4 is below the default threshold 0.5
    for weight in (1.0, 0.5):  # a total weight of 1 or less is a weight like any other
        single = card((crit("s", weight=weight), ScoreResult(0.75))).score("out", CASE)
        assert single.score == pytest.approx(0.75)
    only_info = card((crit("i", weight=0.0), ScoreResult(1.0))).score("out", CASE)
    assert only_info.score == 0.0 and only_info.passed is True


def test_a_failing_optional_criterion_does_not_fail_the_case() -> None:
    scored = card(
        (crit("must"), ScoreResult(0.9)), (crit("nice", required=False), ScoreResult(0.1))
    ).score("out", CASE)
    assert scored.passed is True and [r.passed for r in scored.criteria] == [True, False]
    assert card((crit("must"), ScoreResult(0.1))).score("out", CASE).passed is False


def test_the_output_reaches_the_scorers_as_text() -> None:
    seen: list[Any] = []

    def record(output: Any, case: Case) -> ScoreResult:
        seen.append(output)
        return ScoreResult(1.0)

    scorecard = card((crit(), record))
    for output in (None, 42, "text"):
        scorecard.score(output, CASE)  # type: ignore[arg-type]
    assert seen == ["", "42", "text"]


def test_judge_results_given_by_the_engine_replace_the_scorer() -> None:
    def never(output: str, case: Case) -> ScoreResult:
        raise AssertionError("the scorer must not run when a result is given")

    scored = card((crit("j"), never)).score("out", CASE, {"j": ScoreResult(0.8)})
    assert scored.criteria[0].score == 0.8 and scored.passed is True


def test_a_request_that_errored_scores_0_and_fails() -> None:
    assert card((crit(), ScoreResult(1.0))).failed("HTTP 500") == CaseScore([], 0.0, False)


def test_one_scorer_per_criterion() -> None:
    with pytest.raises(ValueError, match=r"^one scorer per criterion$"):
        Scorecard([crit("a"), crit("b")], [lambda o, c: ScoreResult(1.0)])


def test_a_score_exactly_the_tolerance_below_its_threshold_passes_and_below_that_fails() -> None:
    from evalwh.scoring.tolerance import TOLERANCE

    at_edge = 0.5 - TOLERANCE  # a sum of float weights may land this far below 0.5
    assert one(ScoreResult(at_edge), threshold=0.5).passed is True
    assert one(ScoreResult(math.nextafter(at_edge, 0.0)), threshold=0.5).passed is False


def test_judged_lists_the_judge_criteria_with_their_judge_ids() -> None:
    def judge(output: str, case: Case) -> ScoreResult:
        return ScoreResult(1.0)

    def anonymous_judge(output: str, case: Case) -> ScoreResult:
        return ScoreResult(1.0)

    judge.is_judge = True  # type: ignore[attr-defined]
    judge.judge_id = "j1"  # type: ignore[attr-defined]
    anonymous_judge.is_judge = True  # type: ignore[attr-defined]
    plain = ScoreResult(1.0)
    scorecard = card((crit("a"), plain), (crit("b"), judge), (crit("c"), anonymous_judge))
    assert scorecard.judged == [("b", "j1"), ("c", "")]


def test_build_scorecard_errors_say_where_and_how_to_fix(tmp_path: Any) -> None:
    from evalwh.errors import ConfigError
    from evalwh.scoring.scorecard import build_scorecard

    with pytest.raises(ConfigError) as empty:
        build_scorecard([], tmp_path, "eval.yaml")
    assert (empty.value.message, empty.value.file, empty.value.where, empty.value.fix) == (
        "the scorecard has no criteria",
        "eval.yaml",
        "scorecard",
        "add at least one criterion under `scorecard:`",
    )
    first = Criterion(name="x", type="exact", where="scorecard[0]")
    for second, also, where in (
        (Criterion(name="x", type="exact", where="scorecard[1]"), "scorecard[0]", "scorecard[1]"),
        (Criterion(name="x", type="exact"), "scorecard[0]", "scorecard"),
    ):
        with pytest.raises(ConfigError) as dup:
            build_scorecard([first, second], tmp_path, "eval.yaml")
        assert dup.value.message == f"duplicate criterion name 'x' (also at {also})"
        assert (dup.value.file, dup.value.where) == ("eval.yaml", where)
        assert dup.value.fix == "give every criterion a unique name"
    unplaced = [Criterion(name="x", type="exact"), Criterion(name="x", type="exact")]
    with pytest.raises(ConfigError) as anon:
        build_scorecard(unplaced, tmp_path, "eval.yaml")
    assert anon.value.message == "duplicate criterion name 'x' (also at another entry)"


class Fixed:
    """A plug-in style scorer returning a fixed result (or raising)."""

    def __init__(self, result):
        self.result = result

    def __call__(self, output: str, case: Case) -> ScoreResult:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def card_of(*pairs: tuple[Criterion, object]) -> Scorecard:
    return Scorecard([c for c, _ in pairs], [Fixed(r) for _, r in pairs])


def test_scorecard_weighted_score_and_pass():
    card = build_scorecard(
        [
            scorer_crit("exact", name="exact", where="scorecard[0]", weight=3),
            scorer_crit("contains", name="polite", where="scorecard[1]", value="please", weight=1),
        ],
        Path.cwd(),
        FILE,
    )
    both = card.score("please", Case(id="a", expected="please"))
    assert (both.score, both.passed) == (1.0, True)
    one = card.score("please help", Case(id="a", expected="please help"))
    assert (one.score, one.passed) == (1.0, True)
    partial = card.score("Paris", Case(id="a", expected="Paris"))
    assert partial.score == pytest.approx(0.75)
    assert partial.passed is False  # polite is required (the default)
    assert [r.name for r in partial.criteria] == ["exact", "polite"]
    polite = partial.criteria[1]
    assert (polite.scorer, polite.score, polite.passed, polite.weight, polite.required) == (
        "contains",
        0.0,
        False,
        1.0,
        True,
    )
    assert polite.details == {"found": [], "missing": ["please"]}


def test_weight_zero_is_informational_and_not_required_does_not_fail_the_case():
    card = card_of(
        (scorer_crit("x", name="main", weight=2), ScoreResult(1.0)),
        (scorer_crit("x", name="info", weight=0, required=False), ScoreResult(0.0)),
        (scorer_crit("x", name="nice", weight=2, required=False), ScoreResult(0.5, passed=False)),
    )
    result = card.score("out", Case(id="a"))
    assert result.score == pytest.approx(0.75)  # (2*1 + 2*0.5) / 4; weight 0 left out
    assert result.passed is True  # only "main" is required
    assert [r.passed for r in result.criteria] == [True, False, False]


def test_required_informational_criterion_still_decides_pass():
    card = card_of(
        (scorer_crit("x", name="main"), ScoreResult(1.0)),
        (scorer_crit("x", name="gate", weight=0, required=True), ScoreResult(0.0)),
    )
    result = card.score("out", Case(id="a"))
    assert result.score == 1.0
    assert result.passed is False


def test_threshold_decides_pass_when_scorer_does_not():
    card = card_of(
        (scorer_crit("x", name="low", threshold=0.3), ScoreResult(0.4)),
        (scorer_crit("x", name="high", threshold=0.9), ScoreResult(0.4)),
        (
            scorer_crit("x", name="forced", threshold=0.9, required=False),
            ScoreResult(0.4, passed=True),
        ),
    )
    result = card.score("out", Case(id="a"))
    assert [r.passed for r in result.criteria] == [True, False, True]
    assert result.passed is False


def test_raising_scorer_does_not_abort_the_case():
    card = card_of(
        (scorer_crit("x", name="bad", required=False), RuntimeError("network down")),
        (scorer_crit("x", name="good"), ScoreResult(1.0, details={"k": 1}, rationale="fine")),
        (scorer_crit("x", name="silent", required=False), KeyError("k")),
    )
    result = card.score("out", Case(id="a"))
    bad, good, silent = result.criteria
    assert (bad.score, bad.passed, bad.error) == (0.0, False, "RuntimeError: network down")
    assert silent.error == "KeyError: 'k'"
    assert (good.score, good.passed, good.details, good.rationale) == (1.0, True, {"k": 1}, "fine")
    assert result.score == pytest.approx(1 / 3)
    assert result.passed is True


def test_scorer_errors_and_bad_scores_fail_the_criterion():
    card = card_of(
        (scorer_crit("x", name="err"), ScoreResult(1.0, passed=True, error="gave up")),
        (scorer_crit("x", name="range"), ScoreResult(-0.1)),
        (scorer_crit("x", name="junk"), "not a result"),
    )
    err, rng, junk = card.score("out", Case(id="a")).criteria
    assert (err.score, err.passed, err.error) == (0.0, False, "gave up")
    assert (rng.score, rng.passed) == (0.0, False)
    assert rng.error == "scorer returned score -0.1, outside [0, 1]"
    assert junk.error == "scorer returned str, not a ScoreResult"


def test_failed_request():
    card = card_of((scorer_crit("x"), ScoreResult(1.0)))
    assert card.failed("timeout") == CaseScore(criteria=[], score=0.0, passed=False)


def test_build_scorecard_reports_the_bad_criterion():
    with pytest.raises(ConfigError) as info:
        build_scorecard(
            [
                scorer_crit("exact", name="ok", where="scorecard[0]"),
                scorer_crit("regex", name="bad", where="scorecard[1]", pattern="[z-a]"),
            ],
            Path.cwd(),
            FILE,
        )
    assert info.value.where == "scorecard[1].pattern"
    assert "bad character range z-a" in info.value.message


def test_build_scorecard_rejects_duplicate_names():
    with pytest.raises(ConfigError, match="duplicate criterion name 'a'"):
        build_scorecard(
            [scorer_crit("exact", name="a"), scorer_crit("exact", name="a", where="scorecard[1]")],
            Path.cwd(),
            FILE,
        )


def test_a_scorecard_scores_2000_cases_with_three_scorers(tmp_path: Path):
    # (a speed figure for this loop belongs in benchmarks/, not in a unit test)
    card = build_scorecard(
        [
            scorer_crit("exact", name="exact", where="scorecard[0]", case_sensitive=False),
            scorer_crit("regex", name="digits", where="scorecard[1]", pattern=r"\d+"),
            scorer_crit(
                "json-schema", name="shape", where="scorecard[2]", schema=SCHEMA, extract=True
            ),
        ],
        tmp_path,
        FILE,
    )
    cases = [Case(id=str(i), expected=f"answer {i}") for i in range(2000)]
    scored = [card.score(f"answer {case.id}", case) for case in cases]
    # exact and digits pass; the prose holds no JSON for the required shape
    assert len(scored) == 2000
    for result in scored:
        assert [(r.name, r.score) for r in result.criteria] == [
            ("exact", 1.0),
            ("digits", 1.0),
            ("shape", 0.0),
        ]
        assert result.score == pytest.approx(2 / 3) and result.passed is False


def _scorecard(threshold: float, score: float) -> bool:
    crit = Criterion(name="c", type="x", threshold=threshold)
    card = Scorecard([crit], [lambda output, case: ScoreResult(score)])
    case = Case(id="k", vars={}, expected=None)
    return card.score("out", case).passed


@pytest.mark.parametrize("threshold", [0.0, 0.25, 0.5, 0.7, 1.0])
def test_a_score_exactly_at_its_criterion_threshold_passes(threshold: float) -> None:
    assert _scorecard(threshold, threshold) is True
    if threshold > 0:
        assert _scorecard(threshold, threshold - STEP) is False
