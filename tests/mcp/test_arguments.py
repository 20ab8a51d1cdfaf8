"""evalwh/mcp/arguments.py: which strings stand for integers, numbers and booleans, and the
argument model that takes them and nothing else."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from evalwh.mcp.arguments import coerce_strings, from_string, scalar_kind, strict_model


class Arguments(BaseModel):
    limit: Annotated[int | None, Field(ge=1, le=100)] = None
    page: int = 1
    no_cache: bool = False
    max_cost_usd: float | None = None
    run: str = "latest"
    detail: Literal["summary", "full"] = "summary"
    models: list[str] | None = None


def test_the_kinds_a_string_may_stand_for() -> None:
    fields = Arguments.model_fields
    kinds = {name: scalar_kind(field.annotation) for name, field in fields.items()}
    assert kinds == {
        "limit": int,
        "page": int,
        "no_cache": bool,
        "max_cost_usd": float,
        "run": None,
        "detail": None,
        "models": None,
    }
    assert scalar_kind(int | str) is None  # a union of two kinds: the string stays a string


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("2", int, 2),
        ("-3", int, -3),
        ("0", int, 0),
        ("true", bool, True),
        ("false", bool, False),
        ("0.5", float, 0.5),
        ("5", float, 5.0),
        ("1e-3", float, 0.001),
    ],
)
def test_exact_strings_become_their_value(text: str, kind: type, value: Any) -> None:
    got = from_string("x", text, kind)
    assert got == value and type(got) is kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("2.5", int),  # never rounded
        ("2.0", int),
        ("1e3", int),
        (" 2", int),
        ("2 ", int),
        ("+2", int),
        ("٢", int),  # an Arabic-Indic digit: Python's int() takes it, JSON does not
        ("0x10", int),
        ("", int),
        ("yes", bool),
        ("True", bool),
        ("1", bool),
        ("on", bool),
        ("nan", float),
        ("inf", float),
        (".5", float),
        ("0.5$", float),
    ],
)
def test_inexact_strings_are_refused_naming_the_argument(text: str, kind: type) -> None:
    with pytest.raises(
        ValueError,
        match=r"argument 'limit' must be (an integer|a boolean \(true or false\)|a number), got the string",
    ):
        from_string("limit", text, kind)


def test_only_the_scalar_arguments_are_coerced() -> None:
    kinds = {"limit": int, "no_cache": bool}
    given = {"limit": "2", "no_cache": "true", "run": "7", "models": '["a"]', "page": "3"}
    assert coerce_strings(given, kinds) == {
        "limit": 2,
        "no_cache": True,
        "run": "7",  # a string argument keeps its string
        "models": '["a"]',
        "page": "3",  # not in kinds: left to validation
    }
    assert coerce_strings(["not", "a", "mapping"], kinds) == ["not", "a", "mapping"]


def test_the_strict_model_takes_exact_strings_and_refuses_the_rest() -> None:
    model = strict_model(Arguments)
    got = model.model_validate(
        {"limit": "7", "page": "2", "no_cache": "false", "max_cost_usd": "0.25", "run": "x"}
    )
    assert got.model_dump() == {
        "limit": 7,
        "page": 2,
        "no_cache": False,
        "max_cost_usd": 0.25,
        "run": "x",
        "detail": "summary",
        "models": None,
    }
    schema = model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["limit"]["anyOf"][0]["type"] == "integer"  # published as it was
    for bad, says in (
        ({"limit": "2.5"}, "argument 'limit' must be an integer"),
        ({"limit": "101"}, "less than or equal to 100"),  # bounds hold after the string
        ({"limit": 2.0}, "valid integer"),  # strict: no float for an integer
        ({"limit": True}, "valid integer"),
        ({"no_cache": 1}, "valid boolean"),
        ({"run": 7}, "valid string"),  # a number for a string is not turned into one
        ({"detail": "ful"}, "'summary' or 'full'"),
        ({"limits": 2}, "Extra inputs are not permitted"),
    ):
        with pytest.raises(ValidationError, match=says):
            model.model_validate(bad)
