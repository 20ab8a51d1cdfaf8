"""The regex, exact and contains scorers, pinned where mutation testing found them loose
(docs/testing.md): each config error with its file, option, message and fix, flags that
add up rather than replace each other, case folding of a case's expected values, and the
length at which a shown value is clipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.builtin import CLIP, clip, contains, exact, not_contains, regex

FILE = "eval.yaml"
CASE = Case(id="c1")


def config_error(factory: Any, kind: str, tmp_path: Path, **options: Any) -> ConfigError:
    spec = Criterion(name="k", type=kind, options=options, where="scorecard[2]")
    with pytest.raises(ConfigError) as caught:
        factory(spec, tmp_path, FILE)
    assert caught.value.file == FILE
    return caught.value


def test_an_empty_list_of_accepted_answers_is_refused_with_the_way_out(tmp_path: Path) -> None:
    error = config_error(exact, "exact", tmp_path, value=[])
    assert error.message == "criterion 'k' (exact): 'value' is an empty list"
    assert error.where == "scorecard[2].value"
    assert error.fix == (
        "list at least one accepted answer, or remove `value` to use the case's expected"
    )


def test_a_pattern_that_is_not_text_is_refused_at_its_option(tmp_path: Path) -> None:
    error = config_error(regex, "regex", tmp_path, pattern=5)
    assert error.message == "criterion 'k' (regex): 'pattern' must be a string, got 5"
    assert error.where == "scorecard[2].pattern"
    assert error.fix == "write the regular expression as a string, e.g. pattern: '^\\d+$'"


def test_an_unknown_flag_lists_the_known_ones(tmp_path: Path) -> None:
    error = config_error(regex, "regex", tmp_path, pattern="a", flags=["ignorecase", "verbose"])
    assert error.message == "criterion 'k' (regex): unknown regex flag 'verbose'"
    assert error.where == "scorecard[2].flags"
    assert error.fix == "use any of: ignorecase, multiline, dotall"


def test_flags_add_up() -> None:
    spec = Criterion(
        name="k", type="regex", options={"pattern": "^b", "flags": ["ignorecase", "multiline"]}
    )
    score = regex(spec, Path("."), FILE)
    assert score("a\nB", CASE).score == 1.0  # needs both: B on the second line
    assert score("a\nB", CASE).details == {"match": "B"}


FIX = (
    "fix the pattern (Python `re` syntax); in YAML single-quote it so backslashes "
    "are kept, e.g. pattern: '\\d+'"
)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("a(", "missing ), unterminated subpattern at position 1"),
        # Python's re names no position for this one
        ("(?<=a+)b", "look-behind requires fixed-width pattern"),
    ],
)
def test_a_pattern_that_does_not_compile_says_why_and_where_when_re_knows(
    tmp_path: Path, pattern: str, said: str
) -> None:
    error = config_error(regex, "regex", tmp_path, pattern=pattern)
    assert error.message == f"criterion 'k' (regex): invalid regular expression {pattern!r}: {said}"
    assert error.where == "scorecard[2].pattern"
    assert error.fix == FIX


def test_contains_match_must_be_all_or_any(tmp_path: Path) -> None:
    error = config_error(contains, "contains", tmp_path, match="most", value="x")
    assert error.message == "criterion 'k' (contains): 'match' must be 'all' or 'any', got 'most'"
    assert (error.where, error.fix) == (
        "scorecard[2].match",
        "write `match: all` (every value) or `match: any` (at least one value)",
    )


@pytest.mark.parametrize("value", [[], [1, 2], 5, ["a", 3]])
def test_contains_value_must_be_text_or_a_non_empty_list_of_texts(
    tmp_path: Path, value: Any
) -> None:
    error = config_error(not_contains, "not-contains", tmp_path, value=value)
    assert error.message == (
        "criterion 'k' (not-contains): 'value' must be a string or a non-empty list of"
        f" strings, got {value!r}"
    )
    assert (error.where, error.fix) == (
        "scorecard[2].value",
        "write `value: text` or `value: [one, two]`",
    )


def test_contains_folds_a_cases_expected_values_when_case_insensitive(tmp_path: Path) -> None:
    spec = Criterion(name="k", type="contains", options={"case_sensitive": False})
    score = contains(spec, tmp_path, FILE)
    result = score("the capital is paris, then rome", Case(id="c", expected=["PARIS", "Rome"]))
    assert (result.score, result.details) == (1.0, {"found": ["PARIS", "Rome"], "missing": []})


def test_a_shown_value_is_clipped_only_past_the_limit() -> None:
    assert clip("x" * CLIP) == "x" * CLIP
    assert clip("x" * (CLIP + 1)) == "x" * CLIP + "…"
