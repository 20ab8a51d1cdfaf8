"""Scorers, build-time option errors and the scorecard aggregate."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import (
    CaseScore,
    Scorecard,
    ScoreResult,
    build_scorecard,
    build_scorer,
)
from evalwh.scoring import base as scoring_base

FILE = "eval.yaml"


def crit(type_: str, name: str = "c", where: str = "scorecard[0]", **options) -> Criterion:
    extra = {k: options.pop(k) for k in ("weight", "required", "threshold") if k in options}
    return Criterion(name=name, type=type_, options=options, where=where, **extra)


def run(criterion: Criterion, output: str, case: Case | None = None, root: Path | None = None):
    fn = build_scorer(criterion, root or Path.cwd(), FILE)
    return fn(output, case or Case(id="c1"))


def build_error(criterion: Criterion, root: Path | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build_scorer(criterion, root or Path.cwd(), FILE)
    return info.value


# --- exact -------------------------------------------------------------------------------


def test_exact_against_case_expected():
    c = crit("exact")
    assert run(c, "Paris", Case(id="a", expected="Paris")).score == 1.0
    miss = run(c, "London", Case(id="a", expected="Paris"))
    assert miss.score == 0.0
    assert miss.details == {"expected": "Paris"}
    assert miss.error is None


def test_exact_strips_by_default_and_can_keep_whitespace():
    case = Case(id="a", expected="Paris")
    assert run(crit("exact"), "  Paris\n", case).score == 1.0
    assert run(crit("exact", strip=False), "  Paris\n", case).score == 0.0


def test_exact_case_sensitivity():
    case = Case(id="a", expected="Paris")
    assert run(crit("exact"), "paris", case).score == 0.0
    assert run(crit("exact", case_sensitive=False), "PARIS", case).score == 1.0


def test_exact_value_overrides_expected_and_non_strings_compare_as_str():
    assert run(crit("exact", value="yes"), "yes", Case(id="a", expected="no")).score == 1.0
    assert run(crit("exact"), "42", Case(id="a", expected=42)).score == 1.0
    assert run(crit("exact", value=3.5), " 3.5 ").score == 1.0


def test_exact_list_expected_passes_on_any_element():
    case = Case(id="a", expected=["Paris", "paris, France"])
    assert run(crit("exact"), "paris, France", case).score == 1.0
    miss = run(crit("exact"), "Lyon", case)
    assert miss.score == 0.0
    assert miss.details == {"expected": ["Paris", "paris, France"]}
    assert run(crit("exact", value=["a", "b"]), "b").score == 1.0


def test_exact_without_expected_is_an_error():
    result = run(crit("exact"), "x", Case(id="q7"))
    assert result.score == 0.0
    assert result.passed is False
    assert result.error == (
        "case 'q7' has no expected value; set `expected` on the case or `value` on the criterion"
    )


def test_exact_bad_option_type_is_a_config_error():
    err = build_error(crit("exact", strip="yes"))
    assert err.where == "scorecard[0].strip"
    assert err.fix


# --- contains / not-contains -------------------------------------------------------------


def test_contains_all_by_default_with_details():
    c = crit("contains", value=["alpha", "beta"])
    ok = run(c, "alpha and beta")
    assert ok.score == 1.0
    assert ok.details == {"found": ["alpha", "beta"], "missing": []}
    miss = run(c, "alpha only")
    assert miss.score == 0.0
    assert miss.details == {"found": ["alpha"], "missing": ["beta"]}


def test_contains_any():
    c = crit("contains", value=["alpha", "beta"], match="any")
    assert run(c, "just beta").score == 1.0
    assert run(c, "gamma").score == 0.0


def test_contains_case_insensitive_and_single_string():
    assert run(crit("contains", value="Paris"), "I love paris").score == 0.0
    assert run(crit("contains", value="Paris", case_sensitive=False), "I love PARIS").score == 1.0


def test_contains_uses_case_expected():
    c = crit("contains")
    assert run(c, "the capital is Paris.", Case(id="a", expected="Paris")).score == 1.0
    listed = run(c, "Paris", Case(id="a", expected=["Paris", "France"]))
    assert listed.score == 0.0
    assert listed.details == {"found": ["Paris"], "missing": ["France"]}
    assert run(c, "x", Case(id="nope")).error.startswith("case 'nope' has no expected value")


def test_not_contains():
    c = crit("not-contains", value=["sorry", "as an AI"])
    ok = run(c, "Here is the answer.")
    assert ok.score == 1.0
    assert ok.details == {"found": [], "missing": ["sorry", "as an AI"]}
    bad = run(c, "Sorry, as an AI I cannot")
    assert bad.score == 0.0
    assert bad.details == {"found": ["as an AI"], "missing": ["sorry"]}
    assert run(crit("not-contains", value="sorry", case_sensitive=False), "SORRY").score == 0.0


def test_not_contains_match_any_needs_one_value_absent():
    c = crit("not-contains", value=["a", "b"], match="any")
    assert run(c, "a only").score == 1.0
    assert run(c, "a and b").score == 0.0


def test_contains_bad_match_is_a_config_error():
    err = build_error(crit("contains", value="x", match="most"))
    assert err.where == "scorecard[0].match"
    assert "most" in err.message


# --- regex -------------------------------------------------------------------------------


def test_regex_search_and_details():
    c = crit("regex", pattern=r"\d{3}-\d{4}")
    ok = run(c, "call 555-1234 now")
    assert ok.score == 1.0
    assert ok.details == {"match": "555-1234"}
    miss = run(c, "no number")
    assert miss.score == 0.0
    assert miss.details == {"match": None}


def test_regex_full_match():
    assert run(crit("regex", pattern=r"\d+", full_match=True), "123").score == 1.0
    assert run(crit("regex", pattern=r"\d+", full_match=True), "123 apples").score == 0.0
    assert run(crit("regex", pattern=r"\d+"), "123 apples").score == 1.0


def test_regex_flags():
    assert run(crit("regex", pattern="yes"), "YES").score == 0.0
    assert run(crit("regex", pattern="yes", flags=["ignorecase"]), "YES").score == 1.0
    assert run(crit("regex", pattern="^b$"), "a\nb").score == 0.0
    assert run(crit("regex", pattern="^b$", flags=["multiline"]), "a\nb").score == 1.0
    assert run(crit("regex", pattern="a.b", full_match=True), "a\nb").score == 0.0
    assert run(crit("regex", pattern="a.b", flags=["dotall"], full_match=True), "a\nb").score == 1


def test_regex_match_is_truncated():
    result = run(crit("regex", pattern="x+"), "x" * 500)
    assert result.details["match"] == "x" * 200 + "…"


def test_bad_regex_is_a_config_error():
    err = build_error(crit("regex", pattern="(unclosed"))
    assert err.where == "scorecard[0].pattern"
    assert "missing ), unterminated subpattern" in err.message
    assert "position 0" in err.message
    assert err.file == FILE
    assert err.fix
    assert "scorecard[0].pattern" in str(err)


def test_unknown_regex_flag_is_a_config_error():
    err = build_error(crit("regex", pattern="x", flags=["verbose"]))
    assert err.where == "scorecard[0].flags"
    assert "ignorecase" in err.fix


# --- json-valid --------------------------------------------------------------------------


def test_json_valid():
    assert run(crit("json-valid"), '{"a": [1, 2]}').score == 1.0
    assert run(crit("json-valid"), " [1, 2] \n").score == 1.0


def test_json_invalid_reports_error_and_position():
    result = run(crit("json-valid"), '{"a": 1,\n "b": }')
    assert result.score == 0.0
    assert result.error is None
    assert result.details["error"].startswith("invalid JSON: Expecting value")
    assert result.details["line"] == 2
    assert result.details["column"] == 7
    assert result.details["position"] == 15


def test_json_prose_fails_without_extract():
    assert run(crit("json-valid"), 'Sure! {"a": 1}').score == 0.0


def test_json_extract_from_fenced_block():
    text = 'Here you go:\n```json\n{"answer": "yes", "n": [1, 2]}\n```\nAnything else?'
    result = run(crit("json-valid", extract=True), text)
    assert result.score == 1.0
    assert result.details == {"extracted": "fenced block"}


def test_json_extract_from_prose():
    result = run(crit("json-valid", extract=True), 'The result is {"a": {"b": "}"}} as asked.')
    assert result.score == 1.0
    assert result.details == {"extracted": "embedded"}
    listed = run(crit("json-valid", extract=True), "values: [1, 2, 3].")
    assert listed.score == 1.0


def test_json_extract_finds_nothing():
    result = run(crit("json-valid", extract=True), "no json at all")
    assert result.score == 0.0
    assert result.details["error"].startswith("no JSON found")


def test_json_extract_reports_broken_candidate():
    result = run(crit("json-valid", extract=True), 'text {"a": 1,, "b": 2} more')
    assert result.score == 0.0
    assert "invalid JSON" in result.details["error"]
    assert result.details["position"] == 13


# --- json-schema -------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


def test_json_schema_pass():
    result = run(crit("json-schema", schema=SCHEMA), '{"name": "Ada", "age": 36}')
    assert result.score == 1.0
    assert result.error is None


def test_json_schema_fail_lists_errors_with_paths():
    result = run(crit("json-schema", schema=SCHEMA), '{"name": 7, "age": -1}')
    assert result.score == 0.0
    assert result.error is None
    errors = result.details["errors"]
    assert {e["path"] for e in errors} == {"$.name", "$.age"}
    by_path = {e["path"]: e["message"] for e in errors}
    assert by_path["$.name"] == "7 is not of type 'string'"
    assert by_path["$.age"] == "-1 is less than the minimum of 0"


def test_json_schema_error_list_is_capped():
    schema = {"type": "array", "items": {"type": "string"}}
    result = run(crit("json-schema", schema=schema), "[1, 2, 3, 4, 5, 6, 7]")
    assert len(result.details["errors"]) == 5
    assert result.details["more_errors"] is True
    assert result.details["errors"][0]["path"] == "$[0]"


def test_json_schema_unparseable_output_is_a_fail_not_an_error():
    result = run(crit("json-schema", schema=SCHEMA), "not json")
    assert result.score == 0.0
    assert result.error is None
    assert result.details["valid_json"] is False
    assert result.details["error"].startswith("invalid JSON")


def test_json_schema_with_extract():
    text = 'Sure:\n```json\n{"name": "Ada", "age": 36}\n```'
    assert run(crit("json-schema", schema=SCHEMA), text).score == 0.0
    result = run(crit("json-schema", schema=SCHEMA, extract=True), text)
    assert result.score == 1.0
    assert result.details == {"extracted": "fenced block"}


def test_json_schema_file_yaml(tmp_path: Path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "person.yaml").write_text(
        textwrap.dedent(
            """\
            type: object
            required: [name]
            properties:
              name: {type: string}
            """
        )
    )
    c = crit("json-schema", schema_file="schemas/person.yaml")
    assert run(c, '{"name": "Ada"}', root=tmp_path).score == 1.0
    fail = run(c, '{"nom": "Ada"}', root=tmp_path)
    assert fail.score == 0.0
    assert fail.details["errors"] == [{"path": "$", "message": "'name' is a required property"}]


def test_json_schema_file_json(tmp_path: Path):
    (tmp_path / "s.json").write_text('{"type": "array", "minItems": 2}')
    c = crit("json-schema", schema_file="s.json")
    assert run(c, "[1, 2]", root=tmp_path).score == 1.0
    assert run(c, "[1]", root=tmp_path).score == 0.0


def test_invalid_schema_is_a_config_error():
    err = build_error(
        crit("json-schema", schema={"type": "object", "properties": {"a": {"type": "nope"}}})
    )
    assert err.where == "scorecard[0].schema"
    assert "invalid JSON schema at $.properties.a.type" in err.message
    assert "'nope'" in err.message
    assert err.fix


def test_missing_schema_file_is_a_config_error(tmp_path: Path):
    err = build_error(crit("json-schema", schema_file="missing.json"), root=tmp_path)
    assert err.where == "scorecard[0].schema_file"
    assert f"schema file not found: {tmp_path / 'missing.json'}" in err.message
    assert "relative to the config" in err.fix


def test_unparseable_schema_file_is_a_config_error(tmp_path: Path):
    (tmp_path / "bad.json").write_text('{"type": ')
    err = build_error(crit("json-schema", schema_file="bad.json"), root=tmp_path)
    assert err.where == "scorecard[0].schema_file"
    assert "is not valid JSON" in err.message
    (tmp_path / "bad.yaml").write_text("type: [object\n")
    err = build_error(crit("json-schema", schema_file="bad.yaml"), root=tmp_path)
    assert err.where == "scorecard[0].schema_file"
    assert "is not valid YAML" in err.message


def test_schema_file_errors_are_exact(tmp_path: Path):
    """Every refusal of a schema file: its message, place and fix (the path is resolved)."""
    named = "criterion 'c' (json-schema): "

    def error(name: object) -> tuple[str, str, str | None, str | None]:
        err = build_error(crit("json-schema", schema_file=name), root=tmp_path)
        assert err.message.startswith(named), err.message
        return err.message[len(named) :], err.where, err.fix, err.file

    relative = "give the path of a JSON or YAML schema, relative to the config file's folder"
    for bad in ("", 3):
        got = error(bad)
        assert got == (f"'schema_file' must be a path, got {bad!r}", "scorecard[0].schema_file",
                       relative, FILE)  # fmt: skip
    assert error("nope.json") == (
        f"schema file not found: {(tmp_path / 'nope.json').resolve()}",
        "scorecard[0].schema_file",
        "check the path; it is relative to the config file's folder",
        FILE,
    )
    (tmp_path / "latin.json").write_bytes(b'{"title": "caf\xe9"}')
    message, _, fix, _ = error("latin.json")
    assert message.startswith(f"cannot read schema file {(tmp_path / 'latin.json').resolve()}: ")
    assert "codec can't decode" in message
    assert fix == "make the schema file a readable UTF-8 JSON or YAML file"
    (tmp_path / "bad.JSON").write_text('{"type": \n')
    assert error("bad.JSON") == (
        f"schema file {(tmp_path / 'bad.JSON').resolve()} is not valid JSON: Expecting value "
        "(line 2, column 1)",
        "scorecard[0].schema_file",
        "fix the JSON syntax of the schema file",
        FILE,
    )
    (tmp_path / "bad.yaml").write_text("type: [object\n")
    message, where, fix, _ = error("bad.yaml")
    assert message.startswith(
        f"schema file {(tmp_path / 'bad.yaml').resolve()} is not valid YAML: "
    )
    assert re.search(r"\(line \d+, column \d+\)$", message), message
    assert where == "scorecard[0].schema_file" and fix
    (tmp_path / "dup.yml").write_text("type: object\ntype: array\n")
    message, _, fix, _ = error("dup.yml")
    assert "duplicate key 'type'" in message and "(line 2, column 1)" in message
    assert fix and fix != "fix the YAML syntax of the schema file (or write it as .json)"
    (tmp_path / "ok.yml").write_text("type: object\nrequired: [a]\n")
    run_ok = run(crit("json-schema", schema_file="ok.yml"), '{"a": 1}', root=tmp_path)
    assert run_ok.score == 1.0 and run_ok.error is None


def test_schema_and_schema_file_together_is_a_config_error():
    err = build_error(crit("json-schema", schema={}, schema_file="x.json"))
    assert "exactly one of 'schema' and 'schema_file'" in err.message


# --- python ------------------------------------------------------------------------------

HELPERS = """
from evalwh.scoring import ScoreResult


def is_yes(output, case):
    return output.strip().lower() == "yes"


def half(output, case):
    return 0.5


def graded(output, case):
    return {
        "score": 0.8,
        "passed": False,
        "details": {"length": len(output)},
        "rationale": "too long",
        "note": case.metadata.get("topic"),
    }


def too_big(output, case):
    return 1.5


def wrong_type(output, case):
    return "great"


def no_score(output, case):
    return {"passed": True}


def boom(output, case):
    raise ValueError("boom on " + case.id)


def result(output, case):
    return ScoreResult(0.25, details={"expected": case.expected})


def with_options(output, case, *, word, minimum=1):
    return output.count(word) >= minimum


NOT_CALLABLE = 3
"""


@pytest.fixture
def helper_module(tmp_path: Path):
    """A helper scorer module importable as ``module:function`` from ``tmp_path``."""
    name = f"helpers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(HELPERS)
    yield name
    sys.modules.pop(name, None)


def py(function: str, **options) -> Criterion:
    return crit("python", function=function, **options)


def test_python_file_path_returning_bool(tmp_path: Path):
    (tmp_path / "scorers").mkdir()
    (tmp_path / "scorers" / "checks.py").write_text(HELPERS)
    c = py("scorers/checks.py:is_yes")
    yes = run(c, " Yes ", root=tmp_path)
    assert (yes.score, yes.passed) == (1.0, True)
    no = run(c, "no", root=tmp_path)
    assert (no.score, no.passed) == (0.0, False)


def test_python_module_function_returning_float(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:half"), "x", root=tmp_path)
    assert result.score == 0.5
    assert result.passed is None
    assert result.error is None
    assert str(tmp_path) not in sys.path  # the config folder was on sys.path only to import


def test_python_dict_result(tmp_path: Path, helper_module: str):
    case = Case(id="a", metadata={"topic": "geo"})
    result = run(py(f"{helper_module}:graded"), "abcd", case, root=tmp_path)
    assert result.score == 0.8
    assert result.passed is False
    assert result.details == {"length": 4, "note": "geo"}
    assert result.rationale == "too long"


def test_python_score_result_passes_through(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:result"), "x", Case(id="a", expected="E"), root=tmp_path)
    assert result == ScoreResult(0.25, details={"expected": "E"})


def test_python_out_of_range_score_is_an_error(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:too_big"), "x", root=tmp_path)
    assert result.score == 0.0
    assert result.passed is False
    assert "1.5" in result.error
    assert f"{helper_module}:too_big" in result.error
    assert "outside [0, 1]" in result.error


def test_python_bad_return_type_is_an_error(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:wrong_type"), "x", root=tmp_path)
    assert result.score == 0.0
    assert f"python scorer {helper_module}:wrong_type: returned str;" in result.error
    missing = run(py(f"{helper_module}:no_score"), "x", root=tmp_path)
    assert "without 'score'" in missing.error


def test_python_options_are_keyword_arguments(tmp_path: Path, helper_module: str):
    c = py(f"{helper_module}:with_options", options={"word": "ab", "minimum": 2})
    assert run(c, "ab ab", root=tmp_path).score == 1.0
    assert run(c, "ab", root=tmp_path).score == 0.0


def test_python_raising_scorer_is_an_error_result_from_its_worker(
    tmp_path: Path, helper_module: str
):
    fn = build_scorer(py(f"{helper_module}:boom"), tmp_path, FILE)
    assert fn("x", Case(id="a")).error == "ValueError: boom on a"  # raised in the worker
    card = build_scorecard([py(f"{helper_module}:boom")], tmp_path, FILE)
    row = card.score("x", Case(id="a")).criteria[0]
    assert row.error == "ValueError: boom on a"
    assert (row.score, row.passed) == (0.0, False)


def test_unimportable_module_is_a_config_error(tmp_path: Path):
    err = build_error(py("no_such_module_xyz:fn"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert "cannot import module 'no_such_module_xyz'" in err.message
    assert str(tmp_path) in err.fix


def test_missing_function_and_not_callable_are_config_errors(tmp_path: Path, helper_module: str):
    err = build_error(py(f"{helper_module}:nope"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert f"'{helper_module}' has no attribute 'nope'" in err.message
    assert err.fix
    err = build_error(py(f"{helper_module}:NOT_CALLABLE"), root=tmp_path)
    assert "is a int, not a function" in err.message


def test_missing_scorer_file_and_broken_file_are_config_errors(tmp_path: Path):
    err = build_error(py("missing.py:fn"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert "python file not found" in err.message
    (tmp_path / "broken.py").write_text("def fn(:\n")
    err = build_error(py("broken.py:fn"), root=tmp_path)
    assert "SyntaxError" in err.message
    assert not [m for m in sys.modules if m.startswith("_evalwh_scorer_broken")]


def test_function_without_colon_is_a_config_error():
    err = build_error(py("just_a_name"))
    assert err.where == "scorecard[0].function"
    assert "module:function" in err.message


# --- registry ----------------------------------------------------------------------------


def test_unknown_type_is_a_config_error():
    err = build_error(crit("levenshtein"))
    assert err.where == "scorecard[0].type"
    assert "unknown scorer type 'levenshtein'" in err.message
    assert "exact" in err.fix


def test_entry_point_scorers_are_merged(monkeypatch, tmp_path: Path, helper_module: str):
    class FakeEntryPoint:
        name = "always-half"
        value = "evalwh.scoring.python:python_scorer"

    def fake_entry_points(group: str):
        assert group == "evalwh.scorers"
        return [FakeEntryPoint()]

    monkeypatch.setattr(scoring_base, "entry_points", fake_entry_points)
    scoring_base.available.cache_clear()
    try:
        assert scoring_base.available()["always-half"] == FakeEntryPoint.value
        assert scoring_base.available()["exact"] == "evalwh.scoring.builtin:exact"
        c = crit("always-half", function=f"{helper_module}:half")
        assert run(c, "x", root=tmp_path).score == 0.5
    finally:
        scoring_base.available.cache_clear()


def test_package_import_does_not_load_jsonschema():
    code = (
        "import sys, evalwh.scoring\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'yaml'))\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- scorecard ---------------------------------------------------------------------------


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
            crit("exact", name="exact", where="scorecard[0]", weight=3),
            crit("contains", name="polite", where="scorecard[1]", value="please", weight=1),
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
        (crit("x", name="main", weight=2), ScoreResult(1.0)),
        (crit("x", name="info", weight=0, required=False), ScoreResult(0.0)),
        (crit("x", name="nice", weight=2, required=False), ScoreResult(0.5, passed=False)),
    )
    result = card.score("out", Case(id="a"))
    assert result.score == pytest.approx(0.75)  # (2*1 + 2*0.5) / 4; weight 0 left out
    assert result.passed is True  # only "main" is required
    assert [r.passed for r in result.criteria] == [True, False, False]


def test_required_informational_criterion_still_decides_pass():
    card = card_of(
        (crit("x", name="main"), ScoreResult(1.0)),
        (crit("x", name="gate", weight=0, required=True), ScoreResult(0.0)),
    )
    result = card.score("out", Case(id="a"))
    assert result.score == 1.0
    assert result.passed is False


def test_threshold_decides_pass_when_scorer_does_not():
    card = card_of(
        (crit("x", name="low", threshold=0.3), ScoreResult(0.4)),
        (crit("x", name="high", threshold=0.9), ScoreResult(0.4)),
        (crit("x", name="forced", threshold=0.9, required=False), ScoreResult(0.4, passed=True)),
    )
    result = card.score("out", Case(id="a"))
    assert [r.passed for r in result.criteria] == [True, False, True]
    assert result.passed is False


def test_raising_scorer_does_not_abort_the_case():
    card = card_of(
        (crit("x", name="bad", required=False), RuntimeError("network down")),
        (crit("x", name="good"), ScoreResult(1.0, details={"k": 1}, rationale="fine")),
        (crit("x", name="silent", required=False), KeyError("k")),
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
        (crit("x", name="err"), ScoreResult(1.0, passed=True, error="gave up")),
        (crit("x", name="range"), ScoreResult(-0.1)),
        (crit("x", name="junk"), "not a result"),
    )
    err, rng, junk = card.score("out", Case(id="a")).criteria
    assert (err.score, err.passed, err.error) == (0.0, False, "gave up")
    assert (rng.score, rng.passed) == (0.0, False)
    assert rng.error == "scorer returned score -0.1, outside [0, 1]"
    assert junk.error == "scorer returned str, not a ScoreResult"


def test_failed_request():
    card = card_of((crit("x"), ScoreResult(1.0)))
    assert card.failed("timeout") == CaseScore(criteria=[], score=0.0, passed=False)


def test_build_scorecard_reports_the_bad_criterion():
    with pytest.raises(ConfigError) as info:
        build_scorecard(
            [
                crit("exact", name="ok", where="scorecard[0]"),
                crit("regex", name="bad", where="scorecard[1]", pattern="[z-a]"),
            ],
            Path.cwd(),
            FILE,
        )
    assert info.value.where == "scorecard[1].pattern"
    assert "bad character range z-a" in info.value.message


def test_build_scorecard_rejects_duplicate_names():
    with pytest.raises(ConfigError, match="duplicate criterion name 'a'"):
        build_scorecard(
            [crit("exact", name="a"), crit("exact", name="a", where="scorecard[1]")],
            Path.cwd(),
            FILE,
        )


def test_scorecard_is_fast(tmp_path: Path):
    card = build_scorecard(
        [
            crit("exact", name="exact", where="scorecard[0]", case_sensitive=False),
            crit("regex", name="digits", where="scorecard[1]", pattern=r"\d+"),
            crit("json-schema", name="shape", where="scorecard[2]", schema=SCHEMA, extract=True),
        ],
        tmp_path,
        FILE,
    )
    cases = [Case(id=str(i), expected=f"answer {i}") for i in range(2000)]
    start = time.perf_counter()
    for case in cases:
        card.score(f"answer {case.id}", case)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"2000 cases x 3 scorers took {elapsed:.2f}s"
