"""The json-schema scorer, pinned where mutation testing found it loose (docs/testing.md):
each config error with its option, message and fix, and the errors an answer's score lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.builtin import MAX_SCHEMA_ERRORS, json_schema

FILE = "eval.yaml"
CASE = Case(id="c1")


def criterion(**options: Any) -> Criterion:
    return Criterion(name="js", type="json-schema", options=options, where="scorecard[1]")


def config_error(tmp_path: Path, **options: Any) -> ConfigError:
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
    error = config_error(tmp_path, **options)
    assert error.message == (
        f"criterion 'js' (json-schema): set exactly one of 'schema' and 'schema_file'{both}"
    )
    assert error.where == "scorecard[1].schema"
    assert error.fix == (
        "give the schema inline under `schema:` or as a file path under `schema_file:`"
    )


def test_a_schema_that_is_not_an_object_names_its_type_and_its_option(tmp_path: Path) -> None:
    error = config_error(tmp_path, schema=["type", "object"])
    assert error.message == (
        "criterion 'js' (json-schema): the JSON schema must be an object (or true/false), got list"
    )
    assert error.where == "scorecard[1].schema"
    assert (
        error.fix == 'write a JSON schema object, e.g. {"type": "object", "required": ["answer"]}'
    )
    (tmp_path / "s.json").write_text('"object"')
    assert config_error(tmp_path, schema_file="s.json").where == "scorecard[1].schema_file"


def test_an_invalid_schema_says_where_in_it_and_which_draft_applies(tmp_path: Path) -> None:
    nested = config_error(tmp_path, schema={"properties": {"a": {"type": 5}}})
    assert nested.message.startswith(
        "criterion 'js' (json-schema): invalid JSON schema at $.properties.a.type: "
    )
    assert nested.fix == (
        "fix the schema; it must be a valid JSON Schema (draft 2020-12 unless `$schema` "
        "names another draft)"
    )
    top = config_error(tmp_path, schema={"type": 5})
    assert top.message.startswith("criterion 'js' (json-schema): invalid JSON schema at $.type: ")
    whole = config_error(tmp_path, schema={"required": "answer"})
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
    error = config_error(tmp_path, schema=draft4)
    assert error.message == (
        "criterion 'js' (json-schema): invalid JSON schema: "
        "'maximum' is a dependency of 'exclusiveMaximum'"
    )


def test_a_schema_too_deep_to_check_is_a_config_error_not_a_crash(tmp_path: Path) -> None:
    # a schema file nested 400 levels deep: json reads it, jsonschema's check recurses past
    # Python's limit; the RecursionError is reported at the option like any invalid schema
    depth = 400
    (tmp_path / "deep.json").write_text('{"items": ' * depth + "{}" + "}" * depth)
    error = config_error(tmp_path, schema_file="deep.json")
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
