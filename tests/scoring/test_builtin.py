"""The built-in scorers (evalwh/scoring/builtin.py): exact, contains and not-contains, regex,
json-valid and json-schema. What each scores and the details it keeps, and every config error
of their options with its file, option, message and fix; flags that add up rather than replace
each other, case folding of a case's expected values, the length at which a shown value is
clipped, and the bounds of a json-schema answer's error list (the errors of an answer are read
no further than the one that says there are more).
"""

from __future__ import annotations

import locale
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.builtin import (
    CLIP,
    MAX_SCHEMA_ERRORS,
    clip,
    contains,
    exact,
    json_schema,
    not_contains,
    regex,
)
from tests.builders import BASE, expect_error
from tests.conftest import write
from tests.scoring.test_base import FILE, build_error, crit, run


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


def criterion(**options: Any) -> Criterion:
    return Criterion(name="js", type="json-schema", options=options, where="scorecard[1]")


def schema_config_error(tmp_path: Path, **options: Any) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        json_schema(criterion(**options), tmp_path, FILE)
    assert caught.value.file == FILE
    return caught.value


@pytest.mark.parametrize(
    ("options", "both"), [({}, ""), ({"schema": {}, "schema_file": "s.json"}, " (both are set)")]
)
def test_neither_or_both_schema_options_name_the_choice_and_how_to_make_it(
    tmp_path: Path, options: dict[str, Any], both: str
) -> None:
    error = schema_config_error(tmp_path, **options)
    assert error.message == (
        f"criterion 'js' (json-schema): set exactly one of 'schema' and 'schema_file'{both}"
    )
    assert error.where == "scorecard[1].schema"
    assert error.fix == (
        "give the schema inline under `schema:` or as a file path under `schema_file:`"
    )


def test_a_schema_that_is_not_an_object_names_its_type_and_its_option(tmp_path: Path) -> None:
    error = schema_config_error(tmp_path, schema=["type", "object"])
    assert error.message == (
        "criterion 'js' (json-schema): the JSON schema must be an object (or true/false), got list"
    )
    assert error.where == "scorecard[1].schema"
    assert (
        error.fix == 'write a JSON schema object, e.g. {"type": "object", "required": ["answer"]}'
    )
    (tmp_path / "s.json").write_text('"object"')
    assert schema_config_error(tmp_path, schema_file="s.json").where == "scorecard[1].schema_file"


def test_an_invalid_schema_says_where_in_it_and_which_draft_applies(tmp_path: Path) -> None:
    nested = schema_config_error(tmp_path, schema={"properties": {"a": {"type": 5}}})
    assert nested.message.startswith(
        "criterion 'js' (json-schema): invalid JSON schema at $.properties.a.type: "
    )
    assert nested.fix == (
        "fix the schema; it must be a valid JSON Schema (draft 2020-12 unless `$schema` "
        "names another draft)"
    )
    top = schema_config_error(tmp_path, schema={"type": 5})
    assert top.message.startswith("criterion 'js' (json-schema): invalid JSON schema at $.type: ")
    whole = schema_config_error(tmp_path, schema={"required": "answer"})
    assert whole.message.startswith("criterion 'js' (json-schema): invalid JSON schema")


def test_a_schema_without_dollar_schema_is_read_as_draft_2020_12(tmp_path: Path) -> None:
    # prefixItems is a 2020-12 keyword that earlier drafts ignore
    score = json_schema(criterion(schema={"prefixItems": [{"type": "integer"}]}), tmp_path, FILE)
    assert score('["x"]', CASE).score == 0.0
    assert score("[1]", CASE).score == 1.0


def test_an_answer_lists_at_most_the_first_errors_and_says_there_were_more(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(9)}}
    score = json_schema(criterion(schema=schema), tmp_path, FILE)
    exactly = {f"k{i}": "x" for i in range(MAX_SCHEMA_ERRORS)}
    result = score(str(exactly).replace("'", '"'), CASE)
    assert len(result.details["errors"]) == MAX_SCHEMA_ERRORS
    assert "more_errors" not in result.details
    more = {f"k{i}": "x" for i in range(MAX_SCHEMA_ERRORS + 1)}
    result = score(str(more).replace("'", '"'), CASE)
    assert len(result.details["errors"]) == MAX_SCHEMA_ERRORS
    assert result.details["more_errors"] is True


def test_an_errors_message_is_cut_to_300_characters(tmp_path: Path) -> None:
    score = json_schema(criterion(schema={"const": "y" * 400}), tmp_path, FILE)
    (error,) = score('"x"', CASE).details["errors"]
    assert error["path"] == "$"
    assert error["message"] == ("'" + "y" * 299) + "…"  # 300 characters and the cut mark


def test_an_error_at_the_root_of_the_schema_names_no_place(tmp_path: Path) -> None:
    # draft 4's meta-schema ties exclusiveMaximum to maximum at the schema's root ("$")
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMaximum": True}
    error = schema_config_error(tmp_path, schema=draft4)
    assert error.message == (
        "criterion 'js' (json-schema): invalid JSON schema: "
        "'maximum' is a dependency of 'exclusiveMaximum'"
    )


def test_a_schema_too_deep_to_check_is_a_config_error_not_a_crash(tmp_path: Path) -> None:
    # a schema file nested 400 levels deep: json reads it, jsonschema's check recurses past
    # Python's limit; the RecursionError is reported at the option like any invalid schema
    depth = 400
    (tmp_path / "deep.json").write_text('{"items": ' * depth + "{}" + "}" * depth)
    error = schema_config_error(tmp_path, schema_file="deep.json")
    assert error.message.startswith(
        "criterion 'js' (json-schema): invalid JSON schema: RecursionError: maximum recursion"
    )
    assert error.where == "scorecard[1].schema_file"
    assert error.fix == "fix the schema; it must be a valid JSON Schema"


def test_an_answer_with_many_errors_is_read_only_to_the_first_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bound in time: the errors of an answer are produced one by one and read no further
    than the one that says there are more (a million-item answer is not walked)."""
    from jsonschema import validators
    from jsonschema.exceptions import ValidationError

    pulled: list[int] = []

    class Counting:  # a validator class as the scorer uses one
        @classmethod
        def check_schema(cls, schema: Any) -> None:
            pass

        def __init__(self, schema: Any) -> None:
            pass

        def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
            for i in range(10_000):
                pulled.append(i)
                yield ValidationError(f"bad item {i}")

    monkeypatch.setattr(validators, "validator_for", lambda schema, default=None: Counting)
    score = json_schema(criterion(schema={"type": "array"}), tmp_path, FILE)
    result = score("[1, 2, 3]", CASE)
    assert len(pulled) == MAX_SCHEMA_ERRORS + 1
    assert [e["message"] for e in result.details["errors"]] == [
        f"bad item {i}" for i in range(MAX_SCHEMA_ERRORS)
    ]


def test_bad_regex(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace("    type: exact\n", "    type: regex\n    pattern: '(unclosed'\n"),
    )
    expect_error(cfg, "scorecard[0].pattern")


def test_invalid_json_schema(tmp_path: Path) -> None:
    text = BASE.replace("    type: exact\n", "    type: json-schema\n    schema: {type: 12}\n")
    cfg = write(tmp_path / "eval.yaml", text)
    expect_error(cfg, "scorecard[0].schema")


def test_an_empty_expected_list_fails_the_case_with_the_fix() -> None:
    from evalwh.scoring.builtin import contains, exact

    want = ScoreResult(
        0.0,
        passed=False,
        error="case 'c1' has an empty list as expected value; "
        "list at least one value, or set `value` on the criterion",
    )
    case = Case(id="c1", expected=[])
    assert exact(Criterion(name="e", type="exact"), Path("."), FILE)("x", case) == want
    assert contains(Criterion(name="c", type="contains"), Path("."), FILE)("x", case) == want


def test_an_unreadable_schema_file_names_the_config_file_and_the_option(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_bytes(b'{"type": "object"}\xff\n')
    error = schema_config_error(tmp_path, schema_file="schema.json")
    assert error.message.startswith(
        f"criterion 'js' (json-schema): cannot read schema file {tmp_path / 'schema.json'}: "
    )
    assert (error.file, error.where) == (FILE, "scorecard[1].schema_file")
    assert error.fix == "make the schema file a readable UTF-8 JSON or YAML file"


def test_a_schema_file_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    from evalwh.scoring.builtin import json_schema

    if sys.flags.utf8_mode:
        pytest.skip("in UTF-8 mode every file is read as UTF-8")
    write(tmp_path / "schema.json", '{"type": "string", "description": "café"}\n')
    old = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale: UTF-8 bytes do not decode
        score = json_schema(criterion(schema_file="schema.json"), tmp_path, FILE)
    finally:
        locale.setlocale(locale.LC_CTYPE, old)
    assert score('"ok"', Case(id="a")).score == 1.0


def test_a_schema_yaml_with_a_control_character_is_a_config_error_with_its_place(
    tmp_path: Path,
) -> None:
    """Bug found by the survey: PyYAML's reader refused it before the parse, uncaught."""
    write(tmp_path / "schema.yaml", "type: object\x01\n")
    error = schema_config_error(tmp_path, schema_file="schema.yaml")
    path = (tmp_path / "schema.yaml").resolve()
    assert error.message == (
        f"criterion 'js' (json-schema): schema file {path} is not valid YAML: malformed YAML: "
        "unacceptable character #x0001 (special characters are not allowed) (line 1, column 13)"
    )
    assert (error.file, error.where) == (FILE, "scorecard[1].schema_file")
    assert error.fix == (
        "remove the character, or write it as an escape (\\x01) in a double-quoted string"
    )


def test_a_yaml_error_without_a_place_or_fix_gets_no_line_and_the_default_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.config import yamlpos

    def fails(text: str, file: str) -> Any:
        raise ConfigError("malformed YAML: odd", file=file)

    monkeypatch.setattr(yamlpos, "parse_yaml", fails)
    write(tmp_path / "schema.yaml", "type: object\n")
    error = schema_config_error(tmp_path, schema_file="schema.yaml")
    path = (tmp_path / "schema.yaml").resolve()
    assert error.message == (
        f"criterion 'js' (json-schema): schema file {path} is not valid YAML: malformed YAML: odd"
    )
    assert error.fix == "fix the YAML syntax of the schema file (or write it as .json)"
