"""Tests that kill mutants mutmut found alive in evalwh/scoring/checks.py, engine/budget.py,
engine/pairwise.py and engine/limits.py; each test names the user-visible behaviour it pins."""

from __future__ import annotations

from typing import Any

import pytest

from evalwh.config.model import Comparison, Side
from evalwh.engine import budget
from evalwh.engine.limits import AdaptiveLimit
from evalwh.engine.pairwise import _matches, _ok, _side_word, _sides
from evalwh.errors import ConfigError, UsageError
from evalwh.scoring.checks import CAPTURE_BYTES, CheckSpec, _Capture, _scalar, parse_check

FILE = "eval.yaml"
WHERE = "cases[2].check"


def config_error(raw: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_check(raw, WHERE, FILE)
    return info.value


# --- scoring/checks.py: parse_check's config errors, shown to users whole ------------------


def test_a_check_that_is_neither_text_nor_mapping_names_its_type_and_the_two_forms() -> None:
    error = config_error(["echo"])
    assert error.message == "'check' must be a shell snippet or a mapping, got list"
    assert (error.file, error.where) == (FILE, WHERE)
    assert error.fix == (
        "write `check: <shell command>` or a mapping with `run:` (and optionally "
        "`setup:`, `timeout_s:`, `files:`)"
    )


def test_unknown_check_keys_are_listed_comma_separated_with_the_keys_a_check_takes() -> None:
    error = config_error({"run": "x", "timeout": 3, "env": {}})
    assert error.message == "unknown key(s) in check: env, timeout"
    assert error.where == f"{WHERE}.env"
    assert error.fix == "a check takes: run, setup, timeout_s, files"


def test_a_missing_run_says_how_to_write_one_with_the_answer_variable() -> None:
    error = config_error({"setup": "true"})
    assert error.message == "'run' must be a non-empty shell snippet, got None"
    assert error.where == f"{WHERE}.run"
    assert error.fix == 'write e.g. `run: python "$ANSWER"` (exit code 0 = pass)'


def test_an_empty_setup_says_to_write_commands_or_remove_it() -> None:
    error = config_error({"run": "x", "setup": "  "})
    assert error.message == "'setup' must be a non-empty shell snippet, got '  '"
    assert error.where == f"{WHERE}.setup"
    assert error.fix == "write the commands to run before `run`, or remove `setup`"


def test_a_zero_timeout_is_refused_with_an_example_timeout() -> None:
    error = config_error({"run": "x", "timeout_s": 0})
    assert error.message == "'timeout_s' must be a number of seconds above 0, got 0"
    assert error.where == f"{WHERE}.timeout_s"
    assert error.fix == "write e.g. `timeout_s: 30`"


@pytest.mark.parametrize("timeout", [1, 0.5])
def test_a_timeout_of_one_second_or_less_but_above_zero_is_accepted(timeout: float) -> None:
    spec = parse_check({"run": "x", "timeout_s": timeout}, WHERE, FILE)
    assert spec == CheckSpec(run="x", timeout_s=float(timeout))


def test_files_that_are_not_a_mapping_name_their_type_and_how_to_write_files() -> None:
    error = config_error({"run": "x", "files": ["a.py"]})
    assert error.message == "'files' must be a mapping of file name to text, got list"
    assert error.where == f"{WHERE}.files"
    assert error.fix == "write `files:` followed by `name.py: |` and the file's text"


def test_a_file_whose_text_is_not_a_string_names_the_file_and_the_type() -> None:
    error = config_error({"run": "x", "files": {"a.py": 3}})
    assert error.message == "the text of file 'a.py' must be a string, got int"
    assert error.where == f"{WHERE}.files.a.py"
    assert error.fix == (
        "give each extra file a relative name (e.g. tests/test_answer.py) and its text as a string"
    )


# --- scoring/checks.py: case variables as CASE_* environment values --------------------------


def test_booleans_become_lowercase_true_and_false() -> None:
    assert _scalar(True) == "true"
    assert _scalar(False) == "false"


def test_nul_bytes_are_dropped_from_text_and_nothing_is_put_in_their_place() -> None:
    assert _scalar("a\x00b\x00") == "ab"
    assert _scalar(3) == "3"
    assert _scalar([1]) is None


# --- scoring/checks.py: _Capture keeps CAPTURE_BYTES from each end, counts every byte ---------


def test_output_one_byte_short_of_the_limit_is_all_head_and_the_next_byte_joins_the_head() -> None:
    capture = _Capture()
    capture.add(b"a" * (CAPTURE_BYTES - 1))
    assert (len(capture.head), len(capture.tail), capture.total) == (
        CAPTURE_BYTES - 1,
        0,
        CAPTURE_BYTES - 1,
    )
    capture.add(b"b")
    assert bytes(capture.head) == b"a" * (CAPTURE_BYTES - 1) + b"b"
    assert (capture.tail, capture.total) == (bytearray(), CAPTURE_BYTES)
    assert capture.text() == "a" * (CAPTURE_BYTES - 1) + "b"


def test_output_of_exactly_the_limit_fills_the_head_and_leaves_the_tail_empty() -> None:
    capture = _Capture()
    capture.add(b"x" * CAPTURE_BYTES)
    assert (len(capture.head), len(capture.tail), capture.total) == (
        CAPTURE_BYTES,
        0,
        CAPTURE_BYTES,
    )


def test_one_byte_over_the_limit_goes_to_the_tail_with_nothing_omitted() -> None:
    capture = _Capture()
    capture.add(b"h" * CAPTURE_BYTES + b"t")
    assert bytes(capture.head) == b"h" * CAPTURE_BYTES
    assert bytes(capture.tail) == b"t"
    assert capture.total == CAPTURE_BYTES + 1
    assert capture.text() == "h" * CAPTURE_BYTES + "t"


def test_a_tail_over_the_limit_keeps_its_last_bytes_and_counts_the_omitted_ones() -> None:
    capture = _Capture()
    capture.add(b"h" * CAPTURE_BYTES)
    capture.add(b"m" * 10)
    capture.add(b"t" * CAPTURE_BYTES)
    assert capture.total == 2 * CAPTURE_BYTES + 10
    assert len(capture.head) == CAPTURE_BYTES
    assert bytes(capture.tail) == b"t" * CAPTURE_BYTES
    assert capture.text() == (
        "h" * CAPTURE_BYTES + "\n[... 10 bytes omitted ...]\n" + "t" * CAPTURE_BYTES
    )


def test_the_total_counts_every_byte_over_several_small_chunks() -> None:
    capture = _Capture()
    for chunk in (b"abc", b"de", b"f"):
        capture.add(chunk)
    assert capture.total == 6
    assert bytes(capture.head) == b"abcdef"
    assert capture.text() == "abcdef"


# --- engine/budget.py: the MCP cost cap's environment and request checks --------------------


def test_a_cost_env_var_that_is_not_a_number_names_it_and_gives_an_example() -> None:
    with pytest.raises(UsageError) as info:
        budget.ceiling({budget.ENV_CEILING: "lots"})
    assert str(info.value) == (
        "EVALWH_MCP_MAX_COST_CEILING='lots' is not a number: set it to dollars, e.g. 2.50"
    )


def test_a_negative_cost_env_var_is_refused_with_the_range_it_must_be_in() -> None:
    with pytest.raises(UsageError) as info:
        budget.ceiling({budget.ENV_CEILING: "-1"})
    assert str(info.value) == (
        "EVALWH_MCP_MAX_COST_CEILING='-1' must be a finite amount of 0 or more dollars"
    )


def test_a_cost_env_var_of_exactly_zero_dollars_is_a_valid_cap() -> None:
    assert budget.ceiling({budget.ENV_CEILING: "0"}) == 0.0
    assert budget.mcp_cost_cap(None, None, {budget.ENV_DEFAULT: "0"}) == 0.0


def test_a_negative_requested_cap_is_refused_with_the_value_it_got() -> None:
    with pytest.raises(UsageError) as info:
        budget.mcp_cost_cap(-0.5, None, {})
    assert str(info.value) == "max_cost_usd must be 0 or more dollars, got -0.5"


# --- engine/limits.py: the run stats count every decrease -----------------------------------


def test_two_rate_limits_in_successive_epochs_count_two_decreases() -> None:
    limit = AdaptiveLimit(8)
    limit.rate_limited(0)
    limit.rate_limited(1)
    assert limit.decreases == 2
    assert limit.limit == 2.0


# --- engine/pairwise.py: eligibility and which cells pair ------------------------------------


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
