"""Validating eval.yaml against its JSON Schema (evalwh/config/validate.py,
evalwh/config/eval.schema.json): errors that name the line, the key and the fix, and what the
schema accepts and refuses.

How a JSON Schema violation becomes the config error a user reads is checked kind by kind
against small schemas (message, place, line, column and fix exactly); the same errors are
checked against eval.yaml's own schema in-process, and through `evalwh run`
(tests.builders.expect_error: exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from evalwh import load_config
from evalwh.config.validate import _to_config_error, validate_document
from evalwh.config.yamlpos import load_yaml
from evalwh.errors import ConfigError
from tests.builders import BASE, expect_error
from tests.builders import eval_config as config
from tests.conftest import ROOT, write


# -- eval.schema.json: params keys are checked ------------------------------------------------
def test_a_misspelled_key_under_params_is_a_config_error(tmp_path: Path) -> None:
    # bug: unknown keys under params accepted (a typo silently sends no temperature)
    cfg = config(tmp_path, "  - id: a\n    provider: mock\n    params: {temprature: 0.2}")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    message = str(info.value)
    assert "eval.yaml:5:" in message and "models[0].params" in message
    assert "unknown key 'temprature'" in message and "did you mean 'temperature'" in message
    # provider-specific fields have their place: params.extra is passed through unchecked
    ok = config(tmp_path, "  - {id: a, provider: mock, params: {extra: {seed: 7, x: 1}}}")
    assert load_config(ok).models[0].params == {"extra": {"seed": 7, "x": 1}}


SCHEMA_PATH = ROOT / "evalwh" / "config" / "eval.schema.json"


def schema_errors(criterion: dict) -> list[str]:
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/criterion"})
    return [e.message for e in validator.iter_errors(criterion)]


@pytest.mark.parametrize(
    "criterion",
    [
        {"name": "b", "type": "bleu"},
        {
            "name": "b",
            "type": "bleu",
            "reference": ["x", "y"],
            "max_n": 2,
            "smoothing": "floor",
            "smooth_value": 0.2,
            "effective_order": False,
            "lowercase": True,
            "keep_punctuation": False,
            "threshold": 0.3,
        },
        {"name": "r", "type": "rouge-l", "beta": 1.5, "reference": "x", "lowercase": False},
        {"name": "s", "type": "semantic", "embedder": "emb.py:embed", "reference": "x"},
    ],
)
def test_schema_accepts_similarity_criteria(criterion):
    assert schema_errors(criterion) == []


@pytest.mark.parametrize(
    "criterion",
    [
        {"name": "b", "type": "bleu", "smoothing": "method1"},
        {"name": "b", "type": "bleu", "max_ngram": 4},
        {"name": "b", "type": "bleu", "beta": 1},
        {"name": "r", "type": "rouge-l", "beta": 0},
        {"name": "r", "type": "rouge-l", "embedder": "x:y"},
        {"name": "s", "type": "semantic"},
        {"name": "s", "type": "semantic", "embedder": "x:y", "max_n": 2},
    ],
)
def test_schema_rejects_bad_similarity_criteria(criterion):
    assert schema_errors(criterion)


KEYS = {"type": "object", "properties": {"id": {}, "max_concurrency": {}}}


TYPE_FIX = "change the value's type (see docs/configuration.md)"


SEE = "see docs/configuration.md"


CASES: dict[str, tuple[dict[str, Any], str, tuple[Any, ...]]] = {
    "unknown key, a close one allowed": (
        {**KEYS, "additionalProperties": False},
        "id: 1\nmax_concurency: 3\n",
        ("unknown key 'max_concurency'", "(top level)", 2, 1,
         "did you mean 'max_concurrency'? allowed keys here: id, max_concurrency"),
    ),
    "unknown key, none close": (
        {**KEYS, "additionalProperties": False},
        "id: 1\nzzz: 3\n",
        ("unknown key 'zzz'", "(top level)", 2, 1, "allowed keys here: id, max_concurrency"),
    ),
    "unknown key, no key allowed": (
        {"type": "object", "additionalProperties": False},
        "a: 1\n",
        ("unknown key 'a'", "(top level)", 1, 1, "remove it"),
    ),
    "unevaluated key that a then-branch names": (
        {
            "properties": {"type": {}},
            "if": {"properties": {"type": {"const": "x"}}},
            "then": {"properties": {"b": {}}},
            "unevaluatedProperties": False,
        },
        "type: y\nb: 1\n",
        ("unknown key 'b'", "(top level)", 2, 1, "did you mean 'b'? allowed keys here: b, type"),
    ),
    "unevaluated key beside an allOf branch that applies": (
        {
            "properties": {"type": {}},
            "allOf": [
                {"if": {"properties": {"type": {"const": "x"}}}, "then": {"properties": {"bb": {}}}}
            ],
            "unevaluatedProperties": False,
        },
        "type: x\ncc: 1\n",
        ("unknown key 'cc'", "(top level)", 2, 1, "allowed keys here: bb, type"),
    ),
    "unevaluated key beside an allOf branch that does not apply": (
        {
            "properties": {"type": {}},
            "allOf": [
                {"if": {"properties": {"type": {"const": "x"}}}, "then": {"properties": {"bb": {}}}}
            ],
            "unevaluatedProperties": False,
        },
        "type: y\ncc: 1\n",
        ("unknown key 'cc'", "(top level)", 2, 1, "allowed keys here: type"),
    ),
    "missing required key, nested": (
        {"properties": {"m": {"type": "array", "items": {"required": ["id"]}}}},
        "m:\n  - name: q\n",
        ("missing required key 'id'", "m[0]", 2, 5, "add it (see docs/configuration.md)"),
    ),
    "one of two keys, both given": (
        {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "a: 1\nb: 2\n",
        ("needs exactly one of 'a' or 'b'", "(top level)", 1, 1,
         "give either 'a' or 'b', not both and not neither"),
    ),
    "one of options that are not single keys": (
        {"oneOf": [{"required": ["a", "b"]}, {"required": ["c"]}]},
        "a: 1\nb: 2\nc: 3\n",
        ("{'a': 1, 'b': 2, 'c': 3} is valid under each of {'required': ['c']}, "
         "{'required': ['a', 'b']}", "(top level)", 1, 1, SEE),
    ),
    "one of types, the closest reported": (
        {"properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}}},
        "v: -1\n",
        ("-1 is less than the minimum of 0", "v", 1, 4, SEE),
    ),
    "enum, a close value": (
        {"properties": {"p": {"enum": ["openai", "anthropic"]}}},
        "p: opnai\n",
        ('"opnai" is not allowed', "p", 1, 4,
         "did you mean 'openai'? use one of: \"openai\", \"anthropic\""),
    ),
    "enum, none close": (
        {"properties": {"p": {"enum": ["openai", "anthropic"]}}},
        "p: zz\n",
        ('"zz" is not allowed', "p", 1, 4, 'use one of: "openai", "anthropic"'),
    ),
    "type": ({"properties": {"n": {"type": "integer"}}}, "n: x\n",
             ("expected integer, got a string", "n", 1, 4, TYPE_FIX)),
    "types": ({"properties": {"n": {"type": ["integer", "null"]}}}, "n: [1]\n",
              ("expected integer or null, got a list", "n", 1, 4, TYPE_FIX)),
    "a mapping": ({"properties": {"n": {"type": "string"}}}, "n: {a: 1}\n",
                  ("expected string, got a mapping", "n", 1, 4, TYPE_FIX)),
    "a boolean": ({"properties": {"n": {"type": "string"}}}, "n: true\n",
                  ("expected string, got a boolean", "n", 1, 4, TYPE_FIX)),
    "a float": ({"properties": {"n": {"type": "string"}}}, "n: 1.5\n",
                ("expected string, got float", "n", 1, 4, TYPE_FIX)),
    "null": ({"properties": {"n": {"type": "string"}}}, "n: null\n",
             ("expected string, got null", "n", 1, 4, TYPE_FIX)),
    "any other rule": ({"properties": {"n": {"minimum": 3}}}, "x: 0\nn: 1\n",
                       ("1 is less than the minimum of 3", "n", 2, 4, SEE)),
}  # fmt: skip


@pytest.mark.parametrize(("schema", "text", "expected"), CASES.values(), ids=list(CASES))
def test_each_violation_reads_as_a_config_error(
    schema: dict[str, Any], text: str, expected: tuple[Any, ...]
) -> None:
    error = best_match(Draft202012Validator(schema).iter_errors(yaml.safe_load(text)))
    found = _to_config_error(error, yaml.compose(text), "f.yaml")
    assert (found.message, found.where, found.line, found.column, found.fix) == expected
    assert found.file == "f.yaml"


def test_without_a_yaml_node_there_is_no_line() -> None:
    schema = {"properties": {"n": {"type": "integer"}}}
    error = best_match(Draft202012Validator(schema).iter_errors({"n": "x"}))
    found = _to_config_error(error, None, "f.yaml")
    assert (found.message, found.where, found.line, found.column) == (
        "expected integer, got a string", "n", None, None,
    )  # fmt: skip


def _schema_error(tmp_path: Path, text: str) -> ConfigError:
    path = write(tmp_path / "eval.yaml", text)
    data, node = load_yaml(path)
    with pytest.raises(ConfigError) as caught:
        validate_document(data, node, str(path))
    return caught.value


SCHEMA_BASE = """\
models:
  - {id: m, provider: mock}
variants:
  - {id: v, messages: [{role: user, content: hi}]}
cases:
  - {id: c1, expected: x}
scorecard:
  - name: r
    type: regex
"""


def test_unknown_criterion_key_is_named_not_a_known_key_whose_value_is_bad(
    tmp_path: Path,
) -> None:
    """A known option with a bad value makes the schema call it unevaluated too: the error
    still names the unknown key, at its line."""
    error = _schema_error(tmp_path, SCHEMA_BASE + "    pattern: 5\n    zzz: 1\n")
    assert error.message == "unknown key 'zzz'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 11, 5)


def test_unknown_key_with_an_apostrophe_is_named_at_its_line(tmp_path: Path) -> None:
    """jsonschema quotes such a key with double quotes ("it's"): the error still names it and
    its line (it used to say unknown key '?')."""
    error = _schema_error(tmp_path, SCHEMA_BASE + "    pattern: a\n    it's: 1\n")
    assert error.message == "unknown key 'it's'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 11, 5)


def test_a_known_key_with_a_bad_value_in_a_conditional_block_names_its_value(
    tmp_path: Path,
) -> None:
    """`request:` of a json-schema criterion is checked in the schema's `if type: json-schema`
    block; a bad value there failed the block, so jsonschema reported the key itself as
    unevaluated, and the error read "unknown key 'request'", "did you mean 'request'?"."""
    text = SCHEMA_BASE.replace("type: regex\n", "type: json-schema\n    schema: {type: object}\n")
    error = _schema_error(tmp_path, text + "    request: natve\n")
    assert error.message == '"natve" is not allowed'
    assert error.fix == 'did you mean \'native\'? use one of: "auto", "native", "prompted"'
    assert (error.where, error.line, error.column) == ("scorecard[0].request", 11, 14)
    # a key that is truly unknown beside it is still reported as one
    error = _schema_error(tmp_path, text + "    request: auto\n    sceham: 1\n")
    assert error.message == "unknown key 'sceham'"
    assert error.fix is not None and error.fix.startswith("did you mean 'schema'?")


def test_unknown_key_that_is_not_text_points_at_its_mapping(tmp_path: Path) -> None:
    """A number as a key is not quoted in the schema's message: the error says '?' and points
    at the mapping that holds it."""
    error = _schema_error(tmp_path, SCHEMA_BASE + "    pattern: a\n    1: x\n")
    assert error.message == "unknown key '?'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 8, 5)


def test_a_variant_that_is_not_a_mapping_is_a_type_error(tmp_path: Path) -> None:
    """A variant written as a string says it must be an object, not that it needs messages or
    prompt (the variant's one-of rule), at its line."""
    text = SCHEMA_BASE.replace("  - {id: v, messages: [{role: user, content: hi}]}", "  - hello")
    error = _schema_error(tmp_path, text)
    assert error.message == "expected object, got a string"
    assert (error.where, error.line, error.column) == ("variants[0]", 4, 5)


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace("    provider: mock\n", "    provider: mock\n    max_concurency: 3\n"),
    )
    message = expect_error(cfg, "eval.yaml:4:5", "models[0]", "unknown key 'max_concurency'")
    assert "did you mean 'max_concurrency'" in message


def test_unknown_key_inside_a_criterion(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE + "    case_sensitve: false\n")
    expect_error(
        cfg, "scorecard[0]", "unknown key 'case_sensitve'", "did you mean 'case_sensitive'"
    )


def test_key_of_another_scorer_type_is_unknown(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE + "    pattern: 'x'\n")
    expect_error(cfg, "scorecard[0]", "unknown key 'pattern'")


def test_enum_value_suggestion(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("type: exact", "type: exakt"))
    expect_error(cfg, "scorecard[0].type", "did you mean 'exact'")
