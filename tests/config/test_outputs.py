"""Structured output specs (evalwh/config/outputs.py): `output_schema:` of a variant and
`request:` of a json-schema criterion, schema files (read as UTF-8 whatever the locale, their
errors naming the schema file and line), each bad spec refused with file, place and fix, the
JSON instruction a prompted request appends, the digest a spec adds to the cache key, and the
mode chosen per provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh import providers
from evalwh.config.loader import load_config
from evalwh.config.outputs import OutputSpec, parse_output_spec, prompted_messages, read_schema_file
from evalwh.errors import ConfigError
from tests.builders import BASE, PLACE_OUTPUT, PLACE_SCHEMA, place_config, place_scores
from tests.config.test_datasets import refusal
from tests.conftest import write
from tests.fakes.servers import FakeLLMServer, reply


def test_prompted_schema_instruction_is_appended_to_the_last_user_message() -> None:
    spec = OutputSpec(schema={"type": "object", "required": ["b", "a"]})
    instruction = spec.instruction()
    assert instruction.endswith('{"required": ["b", "a"], "type": "object"}')  # sorted keys
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    ]
    out = prompted_messages(messages, spec)
    assert out[0]["content"][-1] == {"type": "text", "text": "\n\n" + instruction}
    assert out[1] == messages[1]


def test_prompted_schema_instruction_becomes_a_user_message_when_there_is_none() -> None:
    spec = OutputSpec(schema={"type": "string"})
    system = {"role": "system", "content": [{"type": "text", "text": "be brief"}]}
    assert prompted_messages([system], spec) == [
        system,
        {"role": "user", "content": [{"type": "text", "text": spec.instruction()}]},
    ]


@pytest.mark.parametrize("name", ["s.json", "s.yaml"])
def test_a_utf8_schema_file_is_read_the_same_under_a_non_utf8_locale(
    tmp_path: Path, ascii_locale: None, name: str
) -> None:
    """A schema whose descriptions are not ASCII loads whatever the user's locale."""
    text = (
        '{"type": "object", "description": "Café – naïve 東京"}'
        if name.endswith(".json")
        else "type: object\ndescription: Café – naïve 東京\n"
    )
    (tmp_path / name).write_bytes(text.encode("utf-8"))
    schema = read_schema_file(name, tmp_path, "variants[0].output_schema.schema_file", "e.yaml")
    assert schema == {"type": "object", "description": "Café – naïve 東京"}


def test_malformed_yaml_in_a_schema_file_names_the_schema_file_and_its_line(
    tmp_path: Path,
) -> None:
    """The error points at the schema file (not the config, not 'None') and the bad line."""
    write(tmp_path / "schemas" / "s.yaml", "type: object\nproperties: [a, b\nrequired: x\n")
    with pytest.raises(ConfigError) as caught:
        read_schema_file("schemas/s.yaml", tmp_path, "variants[0].output_schema", "e.yaml")
    error = caught.value
    schema = str((tmp_path / "schemas" / "s.yaml").resolve())
    assert error.message.startswith("malformed YAML: ")
    assert error.file == schema
    assert error.line is not None
    assert str(error).startswith(f"{schema}:{error.line}:")


def test_a_control_character_in_a_yaml_schema_file_names_the_schema_file(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.yml", "type: object\ndescription: a\x01b\n")
    with pytest.raises(ConfigError) as caught:
        read_schema_file("s.yml", tmp_path, "w", "e.yaml")
    assert caught.value.file == str((tmp_path / "s.yml").resolve())
    assert caught.value.line == 2


SCHEMA_FIX = "write `schema: {type: object, properties: {...}}` or give `schema_file:`"


def config_with(tmp_path: Path, variant_extra: str = "", scorecard_extra: str = "") -> Path:
    text = BASE.replace(
        '        content: "{{ question }}"\n', '        content: "{{ question }}"\n' + variant_extra
    )
    return write(tmp_path / "eval.yaml", text + scorecard_extra)


def test_a_schema_file_that_is_not_an_object_is_refused_with_file_place_and_fix(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.json", "[1, 2]")
    cfg = config_with(tmp_path, "    output_schema:\n      schema_file: s.json\n")
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "the output schema must be a JSON Schema object, got list",
        str(cfg),
        "variants[0].output_schema.schema",
        SCHEMA_FIX,
    )
    assert str(e) == (
        f"{cfg}: variants[0].output_schema.schema: the output schema must be a JSON Schema "
        f"object, got list\n  fix: {SCHEMA_FIX}"
    )


def test_a_criterion_schema_file_that_is_a_string_is_refused_naming_its_type(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.json", '"an object please"')
    crit = "  - name: shape\n    type: json-schema\n    schema_file: s.json\n    request: auto\n"
    cfg = config_with(tmp_path, scorecard_extra=crit)
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "the output schema must be a JSON Schema object, got str",
        str(cfg),
        "scorecard[1].request.schema",
        SCHEMA_FIX,
    )


def test_an_unknown_mode_is_refused_with_file_place_and_the_modes_to_use() -> None:
    # a config file's mode is refused earlier by the config schema; this is the spec
    # reader's own refusal, the one every other caller of parse_output_spec gets
    with pytest.raises(ConfigError) as err:
        parse_output_spec({"schema": {"type": "object"}, "mode": "sideways"}, "v.out", "e.yaml")
    e = err.value
    assert (e.message, e.file, e.where, e.fix) == (
        "unknown mode 'sideways'",
        "e.yaml",
        "v.out.mode",
        "use one of: auto, native, prompted",
    )
    assert (
        str(e)
        == "e.yaml: v.out.mode: unknown mode 'sideways'\n  fix: use one of: auto, native, prompted"
    )


def test_the_schema_is_read_from_the_spec_itself_when_not_given_from_a_file() -> None:
    spec = parse_output_spec({"schema": {"type": "array"}, "name": "items"}, "v.out", "e.yaml")
    assert spec == OutputSpec(schema={"type": "array"}, mode="auto", name="items", strict=True)
    # a schema read from a file wins over the mapping's own
    from_file = parse_output_spec({"schema": {"type": "array"}}, "w", "f", schema={"type": "null"})
    assert from_file.schema == {"type": "null"}


def test_strict_false_and_the_mode_are_kept_from_the_config(tmp_path: Path) -> None:
    cfg = config_with(
        tmp_path,
        "    output_schema:\n      schema: {type: object}\n      strict: false\n      mode: prompted\n",
    )
    config = load_config(cfg)
    assert config.variants[0].output == OutputSpec(
        schema={"type": "object"}, mode="prompted", name="answer", strict=False
    )


ASKS = "  - {{name: {name}, type: json-schema, schema: {{type: object}}, request: {mode}}}\n"


def test_a_second_criterion_asking_for_a_schema_is_refused_at_its_request(
    tmp_path: Path,
) -> None:
    cfg = config_with(
        tmp_path,
        scorecard_extra=ASKS.format(name="a", mode="auto") + ASKS.format(name="b", mode="auto"),
    )
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "more than one json-schema criterion has `request:`",
        str(cfg),
        "scorecard[2].request",
        "ask for one schema per run (or give the variants their own output_schema)",
    )


def test_a_criterion_asks_every_variant_for_its_schema_in_the_mode_it_names(
    tmp_path: Path,
) -> None:
    cfg = config_with(tmp_path, scorecard_extra=ASKS.format(name="a", mode="native"))
    assert load_config(cfg).variants[0].output == OutputSpec(
        schema={"type": "object"}, mode="native", name="answer", strict=True
    )


def test_without_an_output_schema_or_a_request_a_variant_asks_for_no_json(
    tmp_path: Path,
) -> None:
    assert load_config(config_with(tmp_path)).variants[0].output is None


@pytest.mark.parametrize(
    ("variant", "criterion", "where"),
    [
        ("    output_schema: {schema: {type: object}, schema_file: s.json}\n", "",
         "variants[0].output_schema"),
        ("    output_schema: {mode: native}\n", "", "variants[0].output_schema"),
        ("", "  - {name: a, type: json-schema, schema: {type: object}, schema_file: s.json}\n",
         "scorecard[1]"),
        ("", "  - {name: a, type: json-schema, request: auto}\n", "scorecard[1]"),
    ],
)  # fmt: skip
def test_a_place_giving_both_or_neither_of_schema_and_schema_file_is_refused_saying_so(
    tmp_path: Path, variant: str, criterion: str, where: str
) -> None:
    """Not an unknown-key error about a key the place allows (a criterion with both used to
    be refused as "unknown key 'request'; did you mean 'request'?")."""
    write(tmp_path / "s.json", '{"type": "array"}')
    cfg = config_with(tmp_path, variant, criterion)
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "needs exactly one of 'schema' or 'schema_file'",
        str(cfg),
        where,
        "give either 'schema' or 'schema_file', not both and not neither",
    )


def test_the_stored_spec_names_its_mode_and_strict() -> None:
    spec = OutputSpec(schema={"type": "string"}, mode="native", name="n", strict=True)
    assert spec.to_dict() == {
        "schema": {"type": "string"},
        "mode": "native",
        "name": "n",
        "strict": True,
    }


def test_the_digest_is_the_compact_canonical_json_of_the_spec() -> None:
    # pinned: a change of this text changes every structured request's cache key, so a
    # warehouse's cached answers would all miss after an upgrade
    spec = OutputSpec(schema={"type": "object", "required": ["a"]}, mode="auto")
    assert spec.digest_text() == (
        '{"mode":"auto","name":"answer","schema":{"required":["a"],"type":"object"},"strict":true}'
    )


def test_reordering_the_keys_of_a_schema_keeps_its_digest() -> None:
    one = OutputSpec(schema={"type": "object", "properties": {"a": {}, "b": {}}})
    two = OutputSpec(schema={"properties": {"b": {}, "a": {}}, "type": "object"})
    assert one.digest_text() == two.digest_text()


@pytest.mark.parametrize(
    "change",
    [
        {"schema": {"type": "array"}},
        {"mode": "prompted"},
        {"mode": "native"},
        {"name": "other"},
        {"strict": False},
    ],
)
def test_changing_any_part_of_the_spec_changes_its_digest(change: dict[str, Any]) -> None:
    base = {"schema": {"type": "object"}, "mode": "auto", "name": "answer", "strict": True}
    same = OutputSpec(**json.loads(json.dumps(base)))
    assert OutputSpec(**base).digest_text() == same.digest_text()
    assert OutputSpec(**{**base, **change}).digest_text() != same.digest_text()


@pytest.mark.parametrize(
    ("provider", "mode", "chosen"),
    [
        ("openai", "auto", "native"),
        ("openai", "prompted", "prompted"),
        ("anthropic", "native", "native"),
        ("mock", "auto", "native"),
        ("openai-compatible", "auto", "prompted"),
        ("command", "auto", "prompted"),  # declares no structured_output at all
        ("command", "native", "prompted"),
    ],
)
def test_the_mode_chosen_per_provider(provider: str, mode: str, chosen: str) -> None:
    spec = OutputSpec(schema={"type": "object"}, mode=mode)
    assert spec.mode_for(providers.provider_class(provider)) == chosen


def test_a_provider_class_without_the_flag_is_prompted() -> None:
    class Plugin:
        """A third-party provider that says nothing about structured output."""

    assert OutputSpec(schema={}).mode_for(Plugin) == "prompted"


def test_a_provider_without_native_support_is_asked_by_prompt(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.default = reply('{"city": 3}')  # the wrong type: the schema fails
    model = f"{{id: m, provider: openai-compatible, model: local, price: 0, base_url: '{server.openai_url}'}}"
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert "response_format" not in body
    last_user = body["messages"][-1]["content"]
    assert last_user.startswith("Where is Big Ben?") or last_user.startswith("Where is the Louvre?")
    assert "valid against this JSON Schema" in last_user and '"city"' in last_user
    assert place_scores(tmp_path / "out") == [("c1", False, "prompted"), ("c2", False, "prompted")]


def test_mode_prompted_prompts_even_where_native_is_supported(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = place_config(
        tmp_path, model, PLACE_OUTPUT.replace("name: place", "name: place\n      mode: prompted")
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert "response_format" not in server.last.body
    assert "JSON Schema" in server.last.body["messages"][-1]["content"]
    assert {r[2] for r in place_scores(tmp_path / "out")} == {"prompted"}


def test_a_json_schema_criterion_may_ask_every_variant(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = place_config(tmp_path, model, scorecard_extra=", request: auto")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.last.body["response_format"]["json_schema"]["schema"] == PLACE_SCHEMA
    assert server.last.body["response_format"]["json_schema"]["name"] == "answer"
    assert {r[2] for r in place_scores(tmp_path / "out")} == {"native"}


class SchemaAware:
    """A provider that declares native support: it is handed request.output."""

    structured_output = True

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    async def complete(self, request: Any) -> Any:
        import os  # pytest may import this module twice: what it saw goes to a file

        from evalwh.providers.base import Completion

        seen = {"output": request.output and request.output.to_dict(), "messages": request.messages}
        with open(os.environ["EVALWH_TEST_SEEN"], "a", encoding="utf-8") as fh:
            fh.write(json.dumps(seen) + "\n")
        return Completion(text=json.dumps({"city": "Oslo"}), input_tokens=1, output_tokens=1)

    async def aclose(self) -> None:
        return None


class SchemaBlind(SchemaAware):
    structured_output = False


@pytest.mark.parametrize(("cls", "native"), [("SchemaAware", True), ("SchemaBlind", False)])
def test_a_provider_declaring_structured_output_receives_the_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cls: str, native: bool
) -> None:
    from evalwh import providers

    monkeypatch.setitem(providers.BUILTIN, "ext", f"tests.config.test_outputs:{cls}")
    providers.available.cache_clear()
    seen_file = tmp_path / "seen.jsonl"
    monkeypatch.setenv("EVALWH_TEST_SEEN", str(seen_file))
    try:
        cfg = place_config(tmp_path, "{id: m, provider: ext}", PLACE_OUTPUT)
        evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    finally:
        providers.available.cache_clear()
    first = json.loads(seen_file.read_text().splitlines()[0])
    output, text = first["output"], json.dumps(first["messages"])
    if native:
        assert output["schema"] == PLACE_SCHEMA and output["name"] == "place"
        assert "JSON Schema" not in text
    else:
        assert output is None and "valid against this JSON Schema" in text
    mode = "native" if native else "prompted"
    assert place_scores(tmp_path / "out") == [("c1", True, mode), ("c2", True, mode)]


def test_an_output_schema_file_is_read_as_json_or_yaml_and_refused_with_its_place(
    tmp_path: Path,
) -> None:
    from evalwh.config.outputs import read_schema_file

    write(tmp_path / "s.json", json.dumps(PLACE_SCHEMA))
    write(tmp_path / "s.yaml", "type: object\nrequired: [city]\n")
    assert read_schema_file("s.json", tmp_path, "w", "e.yaml") == PLACE_SCHEMA
    assert read_schema_file("s.yaml", tmp_path, "w", "e.yaml") == {
        "type": "object", "required": ["city"],
    }  # fmt: skip

    def refused(name: str) -> tuple[str, str | None, str | None, str | None]:
        with pytest.raises(ConfigError) as exc:
            read_schema_file(name, tmp_path, "variants[0].output_schema.schema_file", "e.yaml")
        return exc.value.message, exc.value.file, exc.value.where, exc.value.fix

    at = ("e.yaml", "variants[0].output_schema.schema_file")
    assert refused("gone.json") == (
        f"schema file not found: {(tmp_path / 'gone.json').resolve()}", *at,
        "check the path; it is relative to the config file's folder",
    )  # fmt: skip
    write(tmp_path / "bad.JSON", '{"type": ')
    assert refused("bad.JSON") == (
        f"schema file {(tmp_path / 'bad.JSON').resolve()} is not valid JSON: Expecting value "
        "(line 1, column 10)", *at, "fix the JSON syntax of the schema file",
    )  # fmt: skip
    (tmp_path / "latin.json").write_bytes(b'{"title": "caf\xe9"}')  # not UTF-8: an error, no crash
    message, *where, fix = refused("latin.json")
    assert message.startswith(f"cannot read schema file {(tmp_path / 'latin.json').resolve()}: ")
    assert (tuple(where), fix) == (at, "make the schema file a readable UTF-8 JSON or YAML file")
    # in a config: a variant's own schema_file, and a criterion's that asks with `request:`
    write(tmp_path / "cfg" / "place.json", json.dumps(PLACE_SCHEMA))
    own = place_config(
        tmp_path / "cfg",
        "{id: m, provider: mock}",
        "    output_schema: {schema_file: place.json}\n",
    )
    assert evalwh.load_config(own).variants[0].output.schema == PLACE_SCHEMA
    asked = place_config(
        tmp_path / "cfg", "{id: m, provider: mock}", "",
        scorecard_extra=""", request: native}\n  - {name: f, type: json-schema, schema_file: place.json, request: native""",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="more than one json-schema criterion has `request:`"):
        evalwh.load_config(asked)
