"""Importing promptfoo results (evalwh/importers/promptfoo.py): the real fixture file
(tests/fixtures/peers) imports with the expected counts, unknown fields are kept and secrets
in its config are masked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalwh import api
from evalwh.errors import ConfigError
from tests.builders import PROMPTFOO, rows


def test_promptfoo_fixture_imports_with_expected_counts(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="pf")
    assert (done["added"], done["n_cases"], done["n_scores"]) == (True, 24, 46)
    assert rows(wh, "SELECT suite, label, status, source_tool, source_version FROM runs") == [
        ("fixture suite", "pf", "completed", "promptfoo", "0.123.1")
    ]
    # 2 prompts x 2 providers x 6 tests; 15 passed, 8 failed their assertions, 1 API error
    counts = rows(
        wh,
        "SELECT count(*), count(*) FILTER (passed), count(error), "
        "count(DISTINCT variant), count(DISTINCT model), sum(input_tokens), sum(output_tokens) "
        "FROM cases",
    )
    assert counts == [(24, 15, 1, 2, 2, 320, 265)]
    [(error, kind, output)] = rows(
        wh, "SELECT error, error_kind, output FROM cases WHERE error IS NOT NULL"
    )
    assert "500 Internal Server Error" in error and kind == "provider" and output is None
    # an assertion failure is a graded answer, not an error
    assert rows(
        wh, "SELECT count(*) FROM cases WHERE NOT passed AND error IS NULL AND score = 0.5"
    ) == [(8,)]
    # unknown fields kept: promptfoo's own result id and the HTTP metadata of the reply
    [(extra,)] = rows(wh, "SELECT extra FROM cases WHERE case_id = 'test-1' LIMIT 1")
    assert set(json.loads(extra)) >= {"id", "metadata", "assert", "promptId"}
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    source_extra = json.loads(source)
    assert source_extra["evalId"] == "eval-C5b-2026-11-30T14:01:15"
    assert source_extra["results"]["stats"]["successes"] == 15


def test_imported_config_keeps_no_api_key(tmp_path: Path) -> None:
    """The attack: a results file whose config holds a live key must not put it in the
    warehouse. promptfoo redacts its own copy; a hand-edited one may not be."""
    data = json.loads(PROMPTFOO.read_text())
    data["config"]["providers"][0]["config"]["apiKey"] = "sk-live-" + "x" * 40
    data["config"]["env"] = {"OPENAI_API_KEY": "sk-proj-" + "y" * 40, "region": "eu"}
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(data))
    wh = tmp_path / "w.duckdb"
    api.import_results("promptfoo", [leaky], warehouse=wh)
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    assert "x" * 40 not in source and "y" * 40 not in source
    env = json.loads(source)["config"]["env"]
    assert env == {"OPENAI_API_KEY": "***", "region": "eu"}  # only the secret-named key
    # token counts are not secrets: "tokenUsage" is kept as it is
    assert json.loads(source)["results"]["stats"]["tokenUsage"]["total"] == 585


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        ("results.results[3].latencyMs", -250, "negative"),
        ("results.stats.durationMs", -1, "negative"),
        ("results.stats.durationMs", 1e300, "over ten years"),  # a timedelta overflow before
    ],
)
def test_a_negative_duration_is_refused_with_its_place(
    tmp_path: Path, where: str, value: float, problem: str
) -> None:
    """The attack: a latency or run duration below zero (or past any date) in the file."""
    data = json.loads(PROMPTFOO.read_text())
    if "latencyMs" in where:
        data["results"]["results"][3]["latencyMs"] = value
    else:
        data["results"]["stats"]["durationMs"] = value
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match=f"{re.escape(where)}: a duration of .* is {problem}"
    ) as info:
        api.import_results("promptfoo", [bad], warehouse=tmp_path / "w.duckdb")
    assert str(bad) in str(info.value)


def test_a_deep_rendered_prompt_stays_text_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    """A rendered prompt is JSON inside a string: too deep to parse, it is kept as text; a
    chat list holding an unpaired surrogate is refused with its place."""
    data = json.loads(PROMPTFOO.read_text())
    data["results"]["results"][0]["prompt"]["raw"] = "[" * 5000 + "]" * 5000
    good = tmp_path / "good.json"
    good.write_text(json.dumps(data))
    api.import_results("promptfoo", [good], warehouse=tmp_path / "w.duckdb")
    data["results"]["results"][0]["prompt"]["raw"] = '[{"role": "user", "content": "\\ud800"}]'
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"results\.results\[0\]\.prompt\.raw, \$\[0\]\.content"):
        api.import_results("promptfoo", [bad], warehouse=tmp_path / "w.duckdb")


def test_a_results_file_is_read_one_entry_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large results file is not parsed whole: ``results.results`` is split out and each
    entry parsed when its case is built (the entries the split found are the cases stored)."""
    from evalwh.importers import jsonsplit

    found: list[int] = []
    split = jsonsplit.split_array

    def spy(data: object, keys: tuple[str, ...]) -> jsonsplit.Split:
        done = split(data, keys)
        assert keys == ("results", "results") and done.found
        found.append(len(done.spans))
        return done

    monkeypatch.setattr(jsonsplit, "split_array", spy)
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh)
    entries = json.loads(PROMPTFOO.read_text())["results"]["results"]
    assert found == [len(entries)] == [done["n_cases"]]
