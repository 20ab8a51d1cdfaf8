"""SQL mutation testing: one operator or constant swap at a time in ``sql/*.sql``, each run
against the tests that cover that query; prints killed/survived per query and the kill rate.

Why: every number evalwh prints is a ``.sql`` file, and a one-character slip in one (``>=`` for
``>``, a dropped ``DISTINCT``, ``1.96`` for ``1.64``) still gives plausible numbers. A mutant the
covering tests do not notice is a bug the suite would let through. Survivors are either killed
with a new test or listed, with the reason, in ``tests/mutation/equivalent.md``.

How: the checkout is copied to a scratch folder (the real ``sql/`` is never touched); one
long-lived process imports pytest and the heavy libraries once, then for each mutant writes the
mutated file into the copy and forks a child that runs ``pytest -x`` on the covering tests
(``TESTS`` below, found with ``--map``). A non-zero exit means killed. Slow: run it by hand or
from the weekly workflow, never from ``.ci/run``::

    uv run python tests/mutation/sql_mutants.py                 # every query
    uv run python tests/mutation/sql_mutants.py gate slice      # some queries
    uv run python tests/mutation/sql_mutants.py --list gate     # show the mutants, run nothing
    uv run python tests/mutation/sql_mutants.py --map           # which tests run which query
    uv run python tests/mutation/sql_mutants.py --min-rate 90   # exit 1 below 90 % killed

Exit status: 0, or 1 when ``--min-rate`` is given and the kill rate (equivalent mutants left
out) is below it, or 2 when the unmutated tests of a query already fail.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = Path(__file__).with_name("equivalent.md")

# Query name -> the tests (files or node ids, fastest and most precise first: pytest -x stops at
# the first failure) that exercise it in-process, chosen from the output of --map. Kept small on
# purpose, every mutant runs them: the hand-computed fixture tests, not the slow end-to-end ones
# (test_compare.py's fixture runs the quickstart several times, 20-30 s).
TESTS: dict[str, list[str]] = {
    "baselines": [
        "tests/sql/test_baselines.py::test_baselines_count_cases_apart_from_answers_and_only_the_pinned_run",
        "tests/sql/test_baselines.py::test_baselines_carry_their_runs_pass_rate_and_n",
    ],
    "cache_for_model": [
        "tests/sql/test_cache_for_model.py::test_cache_for_model_holds_only_that_provider_and_model",
        "tests/scoring/test_judge.py::test_a_garbage_judge_reply_fails_one_criterion_only",
        "tests/engine/test_pairwise.py::test_judge_calls_are_cached_and_costed_apart",
    ],
    "cache_info": [
        "tests/sql/test_cache_info.py::test_cache_info_counts_entries_and_bytes_per_model",
    ],
    "cache_lookup": [
        "tests/sql/test_cache_lookup.py::test_cache_lookup_returns_exactly_the_planned_hashes",
        "tests/engine/test_runner.py::test_mock_is_deterministic_and_the_cache_reproduces_scores",
        "tests/engine/test_pairwise.py::test_judge_calls_are_cached_and_costed_apart",
    ],
    "calibration": [
        "tests/sql/test_calibration.py::test_the_judge_verdict_of_a_labelled_case_is_the_majority_of_its_repeats",
        "tests/sql/test_calibration.py::test_the_confusion_matrix_counts_eligible_labelled_pairs_of_the_run",
        "tests/sql/test_pairwise.py::test_kappa_matches_the_textbook_example",
        "tests/sql/test_pairwise.py::test_win_rate_interval_flip_rate_and_three_class_kappa",
        "tests/engine/test_pairwise.py::test_judge_calls_are_cached_and_costed_apart",
    ],
    "calibration_pointwise": [
        "tests/sql/test_calibration_pointwise.py::test_pointwise_labels_precedence_half_passes_and_the_runs_own_labels",
        "tests/sql/test_calibration_pointwise.py::test_weighted_kappa_at_an_expected_disagreement_of_exactly_one",
        "tests/sql/test_calibration_pointwise.py::test_pointwise_calibration_reads_this_runs_labels_and_a_half_pass_is_a_pass",
        "tests/sql/test_calibration_pointwise.py::test_pointwise_kappa_matches_a_hand_computed_fixture",
        "tests/sql/test_calibration_pointwise.py::test_pointwise_labels_count_once_per_case_and_criterion",
        "tests/sql/test_calibration_pointwise.py::test_a_criterions_own_label_beats_the_cases_human_label",
        "tests/analysis/test_judging.py::test_numeric_labels_get_exact_within_n_and_weighted_kappa",
        "tests/api/test_calibrate.py::test_calibrate_prints_kappa_per_task_and_slice",
        "tests/scoring/test_judge.py::test_a_garbage_judge_reply_fails_one_criterion_only",
    ],
    "calibration_slices": [
        "tests/sql/test_calibration.py::test_the_judge_verdict_of_a_labelled_case_is_the_majority_of_its_repeats",
        "tests/sql/test_calibration_slices.py::test_calibration_by_slice_matches_a_hand_computed_kappa",
    ],
    "case_latest_context": [
        "tests/sql/test_case_latest_context.py::test_case_latest_context_is_the_newest_runs_first_answer",
    ],
    "case_history": [
        "tests/sql/test_case_history.py::test_case_history_counts_each_runs_answers_of_one_case_newest_runs_first",
    ],
    "case_context": [
        "tests/sql/test_case_context.py::test_case_context_gives_each_variant_and_case_its_first_answers_question",
    ],
    "case_list": [
        "tests/sql/test_case_list.py::test_case_list_filters_orders_and_keeps_each_rows_own_criteria",
        "tests/cli/test_runs.py::test_show_json_has_every_documented_key_even_when_empty",
        "tests/mcp/test_briefs.py::test_paging_drill_down_compare_and_query",
    ],
    "compare": [
        "tests/sql/test_compare.py::test_compare_verdicts_wilson_bounds_presence_and_row_order_by_hand",
        "tests/sql/test_compare.py::test_compare_a_score_interval_ending_exactly_at_zero_does_not_exclude_zero",
        "tests/sql/test_compare.py::test_each_metric_has_its_own_degrees_of_freedom_and_exact_sign_tests",
        "tests/sql/test_compare.py::test_compare_averages_cost_and_latency_over_a_cases_repeats",
        "tests/sql/test_compare.py::test_every_t_quantile_of_the_intervals_matches_scipy_by_degrees_of_freedom",
        "tests/sql/test_compare.py::test_compare_scopes_each_give_the_full_querys_rows_and_nothing_else",
        "tests/sql/test_compare.py::test_compare_units_are_a_case_in_its_cell_when_cells_share_case_ids",
        "tests/sql/test_compare.py::test_compare_averages_a_cases_repeats_and_takes_a_single_pair_as_it_is",
        "tests/sql/test_compare.py::test_clustered_se_counts_only_the_clusters_a_metric_has_and_unequal_cost_sums",
        "tests/sql/test_compare.py::test_compare_means_and_pair_counts_with_missing_values",
        "tests/analysis/test_compare.py::test_paired_differences_match_a_reference",
        "tests/analysis/test_compare.py::test_hand_computed_fixture_of_the_paired_se",
        "tests/analysis/test_compare.py::test_cells_only_in_one_run_are_listed",
        "tests/analysis/test_compare.py::test_clustered_standard_error_matches_the_hand_computed_fixture",
        "tests/analysis/test_compare.py::test_singleton_clusters_give_the_paired_se",
        "tests/analysis/test_compare.py::test_criteria_and_slices_come_worst_first",
        "tests/analysis/test_compare.py::test_wilson_intervals_in_slices_and_compare",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
        "tests/analysis/test_gate.py::test_a_drop_exactly_at_max_drop_passes",
        "tests/analysis/test_compare.py::test_compare_movers_and_verdicts",
    ],
    "compare_cases": [
        "tests/sql/test_compare_cases.py::test_movers_by_hand_worst_first_with_the_criteria_that_moved",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
        "tests/analysis/test_compare.py::test_compare_movers_and_verdicts",
    ],
    "criteria": [
        "tests/sql/test_criteria.py::test_criteria_summary_matches_hand_counts_and_wilson",
        "tests/sql/test_criteria.py::test_criteria_and_gate_average_repeats_first_and_read_single_answers_as_cases",
        "tests/cli/test_runs.py::test_show_json_has_every_documented_key_even_when_empty",
        "tests/mcp/test_briefs.py::test_judge_runs_carry_the_calibration_flags",
        "tests/cli/test_render.py::test_criteria_table_shows_the_mode",
    ],
    "errors": [
        "tests/sql/test_errors.py::test_errors_group_by_message_most_frequent_first",
        "tests/engine/test_runner.py::test_failures_are_recorded_and_the_run_goes_on",
        "tests/api/test_run.py::test_a_provider_error_holding_a_secret_is_stored_redacted",
        "tests/engine/test_runner.py::test_max_retries_zero_fails_fast",
        "tests/sql/test_summary.py::test_summary_matches_a_hand_count",
    ],
    "export_cases": [
        "tests/sql/test_export_cases.py::test_exported_cases_name_their_failed_criteria",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
        "tests/reports/test_exports.py::test_csv_and_parquet_read_back",
        "tests/reports/test_exports.py::test_json_export_is_the_whole_run",
    ],
    "flaky": [
        "tests/sql/test_flaky.py::test_flaky_cases_equally_split_come_by_score_spread_widest_first",
        "tests/analysis/test_repeats.py::test_flaky_cases_and_their_spread",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
    ],
    "gate": [
        "tests/sql/test_gate.py::test_gate_values_exactly_on_their_limit_pass_and_a_rule_matching_nothing_fails",
        "tests/analysis/test_gate.py",
        "tests/analysis/test_thresholds.py",
        "tests/engine/test_runner.py::test_failures_are_recorded_and_the_run_goes_on",
        "tests/sql/test_summary.py::test_summary_matches_a_hand_count",
    ],
    "gate_regression": [
        "tests/sql/test_gate_regression.py::test_gate_regression_judges_each_drop_at_its_limit_significance_and_missing_rows",
        "tests/sql/test_gate_regression.py::test_regression_gate_rules_on_hand_made_deltas",
        "tests/analysis/test_gate.py::test_a_regression_drop_interval_is_the_delta_interval_negated",
        "tests/analysis/test_gate.py::test_a_drop_exactly_at_max_drop_passes",
        "tests/analysis/test_gate.py::test_significant_only_and_rule_building",
    ],
    "latency_histogram": [
        "tests/sql/test_latency_histogram.py::test_latency_histogram_bins_up_to_the_runs_99th_percentile",
        "tests/sql/test_latency_histogram.py::test_latency_histogram_of_instant_answers_has_one_bin_a_millionth_ms_wide",
    ],
    "metadata_keys": [
        "tests/sql/test_metadata_keys.py::test_metadata_keys_count_distinct_values_and_case_rows_of_the_given_runs",
        "tests/sql/test_metadata_keys.py::test_metadata_keys_count_distinct_values_and_the_rows_carrying_each",
        "tests/analysis/test_slices.py::test_slices_carry_n_per_slice_and_cell",
        "tests/analysis/test_compare.py::test_criteria_and_slices_come_worst_first",
        "tests/analysis/test_compare.py::test_compare_movers_and_verdicts",
    ],
    "pair_list": [
        "tests/sql/test_pair_list.py::test_pair_list_gives_each_cases_first_repeat_with_its_own_answers_and_label",
    ],
    "pair_sides": [
        "tests/sql/test_pair_sides.py::test_pair_sides_keep_failed_cells_and_only_this_runs_passed_criteria",
        "tests/engine/test_pairwise.py::test_judge_calls_are_cached_and_costed_apart",
        "tests/sql/test_pair_sides.py::test_pair_sides_list_every_answer_with_only_this_runs_passed_criteria",
    ],
    "pairwise": [
        "tests/sql/test_pairwise.py::test_pairwise_counts_majority_verdicts_kappa_bands_and_headline_boundaries",
        "tests/sql/test_pairwise.py::test_pairwise_counts_wins_and_labels_once_per_case_by_hand",
        "tests/sql/test_pairwise.py::test_pairwise_kappa_bands_on_their_edges_and_comparisons_without_labels",
        "tests/sql/test_pairwise.py::test_kappa_matches_the_textbook_example",
        "tests/sql/test_pairwise.py::test_undefined_kappa_is_not_a_headline",
        "tests/sql/test_pairwise.py::test_win_rate_interval_flip_rate_and_three_class_kappa",
        "tests/sql/test_pairwise.py::test_six_wins_seventeen_ties_one_loss_is_a_win_rate_of_60_percent_within_noise",
        "tests/sql/test_pairwise.py::test_all_ties_no_eligible_case_and_one_case",
        "tests/sql/test_pairwise.py::test_repeats_count_each_case_once_by_its_mean_score",
        "tests/sql/test_pairwise.py::test_interval_excludes_one_half_exactly_when_p_is_below_005_and_the_verdict_says_so",
        "tests/sql/test_pairwise.py::test_win_rate_takes_the_case_as_the_unit",
        "tests/scoring/test_judge.py::test_a_garbage_judge_reply_fails_one_criterion_only",
    ],
    "point_list": [
        "tests/sql/test_point_list.py::test_point_list_takes_first_repeats_judged_answers_and_the_criterions_own_label",
        "tests/sql/test_point_list.py::test_point_list_shows_the_prompt_of_the_first_answer_even_when_a_name_extends_another",
    ],
    "repeats": [
        "tests/sql/test_repeats.py::test_repeats_give_the_fewest_and_most_repeats_per_k_up_to_the_most_sampled_case",
        "tests/analysis/test_repeats.py::test_pass_at_k_and_pass_hat_k_match_math_comb",
        "tests/analysis/test_repeats.py::test_flaky_cases_and_their_spread",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
    ],
    "resolve_git": [
        "tests/sql/test_resolve_git.py::test_git_references_take_the_nearest_commit_then_the_newest_run",
        "tests/sql/test_resolve_git.py::test_git_ref_finds_the_run_of_that_commit_or_its_nearest_ancestor",
    ],
    "resolve_relative": [
        "tests/sql/test_resolve_relative.py::test_relative_references_break_time_ties_by_run_id",
        "tests/sql/test_resolve_relative.py::test_previous_and_latest_tilde_n_stay_in_the_newest_runs_suite",
    ],
    "resolve_run": [
        "tests/sql/test_resolve_run.py::test_resolve_run_ranks_exact_id_then_latest_or_baseline_then_label_then_prefix",
        "tests/sql/test_resolve_run.py::test_a_run_reference_ranks_an_exact_id_then_baselines_then_labels",
        "tests/warehouse/test_refs.py::test_run_references",
    ],
    "rows_latest": [
        "tests/sql/test_rows_since.py::test_rows_latest_gives_the_newest_answers_oldest_first",
    ],
    "rows_since": [
        "tests/sql/test_rows_since.py::test_rows_since_gives_the_answers_after_the_cursor_oldest_first",
        "tests/sql/test_rows_since.py::test_paging_through_answers_stored_in_one_instant_loses_none",
    ],
    "run_attachments": [
        "tests/sql/test_run_attachments.py::test_run_attachments_count_distinct_files_bytes_and_case_rows",
    ],
    "run_cells": [
        "tests/sql/test_run_cells.py::test_run_cells_lists_stored_cells_or_only_the_errored_ones",
    ],
    "run_totals": [
        "tests/sql/test_run_totals.py::test_run_totals_by_hand_with_cached_errored_and_judged_answers",
        "tests/sql/test_run_totals.py::test_run_totals_of_an_empty_run_and_of_a_single_case",
        "tests/sql/test_run_totals.py::test_run_totals_by_hand_and_an_empty_run",
        "tests/sql/test_summary.py::test_summary_matches_a_hand_count",
        "tests/engine/test_runner.py::test_failures_are_recorded_and_the_run_goes_on",
        "tests/cli/test_runs.py::test_show_json_has_every_documented_key_even_when_empty",
    ],
    "runs": [
        "tests/sql/test_runs.py::test_runs_filter_each_parameter_at_its_bounds_newest_first",
        "tests/mcp/test_briefs.py::test_paging_drill_down_compare_and_query",
        "tests/sql/test_runs.py::test_runs_filter_on_each_parameter_and_list_newest_ids_first",
    ],
    "slice": [
        "tests/sql/test_slice.py::test_slices_by_two_keys_average_repeats_per_case_and_cell",
        "tests/sql/test_slice.py::test_slices_count_errors_and_only_the_uncached_cost",
        "tests/analysis/test_slices.py::test_slices_carry_n_per_slice_and_cell",
        "tests/analysis/test_compare.py::test_wilson_intervals_in_slices_and_compare",
        "tests/analysis/test_compare.py::test_criteria_and_slices_come_worst_first",
        "tests/sql/test_compare.py::test_compare_scales_by_filtering_runs_first",
    ],
    "slice_criterion": [
        "tests/sql/test_slice_criterion.py::test_slice_criterion_cuts_one_criterion_by_a_key_worst_first",
    ],
    "summary": [
        "tests/sql/test_summary.py::test_summary_averages_repeats_per_case_and_gives_the_wilson_interval_on_cases",
        "tests/sql/test_summary.py::test_summary_matrix_by_hand",
        "tests/sql/test_summary.py::test_summary_matches_a_hand_count",
        "tests/sql/test_summary.py::test_wilson_interval_against_a_reference_value",
        "tests/warehouse/test_connect.py::test_documented_views",
        "tests/engine/test_runner.py::test_failures_are_recorded_and_the_run_goes_on",
    ],
}

# (label, pattern, replacement). Each match of a pattern, outside comments and string literals,
# is one mutant. Replacements may use \1 etc.
OPERATORS: list[tuple[str, str, str]] = [
    (">= -> >", r">=", ">"),
    ("<= -> <", r"<=", "<"),
    ("> -> >=", r"(?<![-<>=!])>(?![=>])", ">="),
    ("< -> <=", r"(?<![<>=!])<(?![=>])", "<="),
    ("<> -> =", r"<>|!=", "="),
    ("= -> <>", r"(?<![<>=!:])=(?![=>])", "<>"),
    ("+ -> -", r"(?<=[\w)\]\s])\+(?=[\s\w(])", "-"),
    ("- -> +", r"(?<=[\w)\]\s])(?<!-)-(?=[\s\w(])(?!-)", "+"),
    ("* -> /", r"(?<=[\w)\]]\s)\*(?=\s)|(?<=[\w)\]])\*(?=[\w(])", "/"),
    ("/ -> *", r"(?<=[\w)\]\s])/(?=[\s\w(])", "*"),
    ("AND -> OR", r"\bAND\b", "OR"),
    ("OR -> AND", r"\bOR\b", "AND"),
    ("NOT removed", r"\bNOT\s+(?!NULL\b)", ""),
    ("IS NULL -> IS NOT NULL", r"\bIS NULL\b", "IS NOT NULL"),
    ("IS NOT NULL -> IS NULL", r"\bIS NOT NULL\b", "IS NULL"),
    ("DISTINCT removed", r"\bDISTINCT\s+", ""),
    ("count(x) -> count(x)+1", r"\bcount\(([^()]*)\)", r"(count(\1) + 1)"),
    ("min -> max", r"\bmin\(", "max("),
    ("max -> min", r"\bmax\(", "min("),
    ("greatest -> least", r"\bgreatest\(", "least("),
    ("least -> greatest", r"\bleast\(", "greatest("),
    ("ASC -> DESC", r"\bASC\b", "DESC"),
    ("DESC -> ASC", r"\bDESC\b", "ASC"),
    ("LEFT JOIN -> JOIN", r"\bLEFT JOIN\b", "JOIN"),
    ("TRUE -> FALSE", r"\bTRUE\b", "FALSE"),
    ("FALSE -> TRUE", r"\bFALSE\b", "TRUE"),
    ("z 1.96 -> 1.64", r"\b1\.9599\d*|\b1\.96\b", "1.6448536269514722"),
    ("decimal +0.1", r"(?<![\w.])(\d+\.\d+)(?![\w.])", None),  # computed
    ("integer +1", r"(?<![\w.$])(\d+)(?![\w.])", None),  # computed
]

STRING_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--.*$")
# An integer that is the last argument of nullif() (a divide-by-zero guard) or round() (digits
# shown): not an arithmetic constant, so not mutated.
SIZE_ARGUMENT = re.compile(r"\b(nullif|round)\((?:[^()]|\([^()]*\))*,\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Mutant:
    query: str
    line: int  # 1-based
    label: str
    original: str  # the original line, stripped
    mutated: str  # the mutated line, stripped
    text: str  # the whole mutated file

    @property
    def key(self) -> tuple[str, str, str]:
        """What equivalent.md matches on: the line number moves when a query is edited."""
        return (self.query, self.label, self.mutated)


def _bump(match: re.Match[str], label: str) -> str:
    token = match.group(0)
    if label == "decimal +0.1":
        places = len(token.split(".")[1])
        return f"{float(token) + 0.1:.{places}f}"
    return str(int(token) + 1)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The parts of a line outside string literals and ``--`` comments."""
    spans, start = [], 0
    for m in STRING_OR_COMMENT.finditer(line):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(line)))
    return spans


def mutants_of(query: str, text: str) -> list[Mutant]:
    lines = text.split("\n")
    out: list[Mutant] = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("--"):
            continue
        spans = _code_spans(line)
        for label, pattern, repl in OPERATORS:
            for m in re.finditer(pattern, line, flags=re.IGNORECASE if "->" in label else 0):
                if not any(a <= m.start() and m.end() <= b for a, b in spans):
                    continue
                if label == "integer +1" and SIZE_ARGUMENT.search(line[: m.start()]):
                    continue
                new = _bump(m, label) if repl is None else m.expand(repl)
                if label in ("AND -> OR", "OR -> AND") and m.group(0).islower():
                    new = new.lower()
                mutated = line[: m.start()] + new + line[m.end() :]
                if mutated == line:
                    continue
                new_lines = [*lines[:i], mutated, *lines[i + 1 :]]
                out.append(
                    Mutant(query, i + 1, label, line.strip(), mutated.strip(), "\n".join(new_lines))
                )
    return out


def equivalent_keys() -> set[tuple[str, str, str]]:
    """Mutants reviewed as equivalent: table rows of equivalent.md,
    ``| query | line | mutation | mutated line | reason |``."""
    keys = set()
    if not EQUIVALENT.exists():
        return keys
    for row in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in row.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("query", "") and not set(cells[0]) <= {"-", ":"}:
            keys.add((cells[0], cells[2], cells[3].replace("\\|", "|")))
    return keys


def _copy_checkout(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "mutants", "__pycache__", ".evalwh", "*.duckdb", ".ruff_cache"
    )
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def _run_in_child(args: list[str], timeout: float) -> int:
    """Fork, run pytest on ``args`` in the child, return its exit code (124 on timeout)."""
    pid = os.fork()
    if pid == 0:  # child
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.setpgid(0, 0)
            import pytest

            from evalwh.warehouse import queries

            queries.registry.cache_clear()
            code = pytest.main(
                [
                    "-x",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-m",
                    "not slow and not e2e",
                    "-n",
                    "0",
                    "--timeout=120",
                    *args,
                ]
            )
            os._exit(int(code))
        except BaseException:
            os._exit(3)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return 124
        time.sleep(0.05)


def _map(copy: Path) -> None:
    """Run the fast suite once, recording which test files call which query in-process."""
    import pytest

    from evalwh.warehouse import queries

    seen: dict[str, set[str]] = defaultdict(set)
    current = {"file": ""}
    original_get = queries.get

    def recording_get(name: str) -> queries.NamedQuery:
        seen[name].add(current["file"])
        return original_get(name)

    queries.get = recording_get

    class Recorder:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_setup(self, item: pytest.Item) -> None:
            current["file"] = item.nodeid

    files = sys.argv[sys.argv.index("--map") + 1 :] or ["tests"]
    pytest.main(
        ["-q", "-p", "no:cacheprovider", "-m", "not slow and not e2e", "-n", "0", *files],
        plugins=[Recorder()],
    )
    for name in sorted(queries.registry()):
        ids = sorted(seen.get(name, ()))
        print(f"{name}: {len(ids)} tests in {sorted({i.split('::')[0] for i in ids})}")
        for i in ids:
            print(f"    {i}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", nargs="*", help="query names (default: every sql/*.sql)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument(
        "--map",
        action="store_true",
        help="print which test files run each query in-process (then: test files, default all)",
    )
    parser.add_argument("--min-rate", type=float, default=None, help="fail below this %% killed")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutant")
    parser.add_argument(
        "--recheck",
        metavar="LOG",
        help="run only the mutants a previous run's output (LOG) reported as SURVIVED",
    )
    argv = sys.argv[1:] if argv is None else argv
    opts = parser.parse_args(argv[: argv.index("--map") + 1] if "--map" in argv else argv)

    names = opts.queries or sorted(p.stem for p in (ROOT / "sql").glob("*.sql"))
    if opts.recheck and not opts.queries:
        names = sorted({query for query, _, _ in _survivors_of(opts.recheck)})
    unknown = [n for n in names if not (ROOT / "sql" / f"{n}.sql").exists()]
    if unknown:
        parser.error(f"no sql/<name>.sql for: {', '.join(unknown)}")
    if opts.list:
        for name in names:
            for m in mutants_of(name, (ROOT / "sql" / f"{name}.sql").read_text(encoding="utf-8")):
                print(f"{name}.sql:{m.line}: {m.label}: {m.mutated}")
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="evalwh-sql-mutants-"))
    try:
        copy = _copy_checkout(tmp / "evalwh")
        os.chdir(copy)
        sys.path.insert(0, str(copy))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(copy), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        # Imported once here so that each forked child starts warm.
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
        import pytest  # noqa: F401

        import evalwh.api  # noqa: F401

        if opts.map:
            _map(copy)
            return 0
        return _run(names, copy, opts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SURVIVED_LINE = re.compile(r"^\s*SURVIVED (\w+)\.sql:\d+: (.+?): (.*)$")


def _survivors_of(log: str) -> set[tuple[str, str, str]]:
    """(query, mutation, mutated line) of each SURVIVED line of a previous run's output."""
    found = set()
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        match = SURVIVED_LINE.match(line)
        if match:
            found.add((match.group(1), match.group(2), match.group(3).strip()))
    return found


def _run(names: list[str], copy: Path, opts: argparse.Namespace) -> int:
    equivalent = equivalent_keys()
    only = _survivors_of(opts.recheck) if opts.recheck else None
    totals = {"killed": 0, "survived": 0, "equivalent": 0}
    survivors: list[Mutant] = []
    started = time.monotonic()
    for name in names:
        path = copy / "sql" / f"{name}.sql"
        original = path.read_text(encoding="utf-8")
        tests = TESTS.get(name)
        if not tests:
            print(f"{name}: no covering tests in TESTS; skipped", flush=True)
            continue
        if _run_in_child(tests, opts.timeout) != 0:
            print(f"{name}: the unmutated tests fail ({' '.join(tests)}); fix them first")
            return 2
        counts = {"killed": 0, "survived": 0, "equivalent": 0}
        for m in mutants_of(name, original):
            if only is not None and m.key not in only:
                continue
            path.write_text(m.text, encoding="utf-8")
            try:
                code = _run_in_child(tests, opts.timeout)
            finally:
                path.write_text(original, encoding="utf-8")
            if code != 0:
                counts["killed"] += 1
            elif m.key in equivalent:
                counts["equivalent"] += 1
            else:
                counts["survived"] += 1
                survivors.append(m)
                print(f"  SURVIVED {name}.sql:{m.line}: {m.label}: {m.mutated}", flush=True)
        for k, v in counts.items():
            totals[k] += v
        print(
            f"{name}: {counts['killed']} killed, {counts['survived']} survived, "
            f"{counts['equivalent']} equivalent",
            flush=True,
        )
    scored = totals["killed"] + totals["survived"]
    rate = 100.0 * totals["killed"] / scored if scored else 100.0
    print(
        f"\nsql/: {totals['killed']} killed, {totals['survived']} survived, "
        f"{totals['equivalent']} equivalent (listed in {EQUIVALENT.name}); "
        f"kill rate {rate:.1f}% (equivalent left out) in {time.monotonic() - started:.0f}s"
    )
    for m in survivors:
        print(f"| {m.query} | {m.line} | {m.label} | `{m.mutated.replace('|', chr(92) + '|')}` |")
    if opts.min_rate is not None and rate < opts.min_rate:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
