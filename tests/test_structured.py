"""Structured outputs: JSON by schema asked natively (OpenAI response_format json_schema,
Anthropic a forced tool call) or by prompt, the wire formats asserted on the fake servers, the
mode recorded with the schema's pass rate, and the extension point for other providers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.errors import ConfigError
from tests.conftest import run_cli, write
from tests.fakes.servers import FakeLLMServer, reply

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def config(folder: Path, model: str, output: str = "", scorecard_extra: str = "") -> Path:
    return write(
        folder / "eval.yaml",
        f"""\
models:
  - {model}
variants:
  - id: v
    messages: [{{role: user, content: "Where is {{{{ q }}}}?"}}]
{output}
cases:
  - {{id: c1, vars: {{q: the Louvre}}}}
  - {{id: c2, vars: {{q: Big Ben}}}}
scorecard:
  - {{name: shape, type: json-schema, schema: {json.dumps(SCHEMA)}{scorecard_extra}}}
""",
    )


OUTPUT = f"""\
    output_schema:
      schema: {json.dumps(SCHEMA)}
      name: place
"""


def scores(out: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT case_id, passed, details ->> 'mode' FROM scores ORDER BY case_id"
        ).fetchall()
    finally:
        con.close()


@pytest.fixture
def server() -> FakeLLMServer:
    with FakeLLMServer() as s:
        yield s


def test_openai_is_asked_with_response_format_json_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = config(tmp_path, model, OUTPUT)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": SCHEMA, "strict": True},
    }
    assert "JSON Schema" not in json.dumps(body["messages"])  # native: no instruction
    assert scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    [criterion] = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").show(result.run_id)[
        "criteria"
    ]
    assert criterion["mode"] == "native" and criterion["pass_rate"] == 1.0


def test_anthropic_is_asked_with_a_forced_tool_call(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-test-000000")
    server.default = reply('{"city": "London"}')
    model = f"{{id: m, provider: anthropic, model: claude-3-5-haiku, base_url: '{server.url}'}}"
    cfg = config(tmp_path, model, OUTPUT)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["tools"] == [
        {
            "name": "place",
            "description": "Give the answer by calling this tool; its input is the answer.",
            "input_schema": SCHEMA,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "place"}
    assert scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    con = duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True)
    try:  # the tool call's input is the answer, as JSON text
        assert con.execute("SELECT DISTINCT output FROM cases").fetchall() == [
            ('{"city": "London"}',)
        ]
    finally:
        con.close()


def test_a_provider_without_native_support_is_asked_by_prompt(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.default = reply('{"city": 3}')  # the wrong type: the schema fails
    model = f"{{id: m, provider: openai-compatible, model: local, price: 0, base_url: '{server.openai_url}'}}"
    cfg = config(tmp_path, model, OUTPUT)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert "response_format" not in body
    last_user = body["messages"][-1]["content"]
    assert last_user.startswith("Where is Big Ben?") or last_user.startswith("Where is the Louvre?")
    assert "valid against this JSON Schema" in last_user and '"city"' in last_user
    assert scores(tmp_path / "out") == [("c1", False, "prompted"), ("c2", False, "prompted")]


def test_mode_prompted_prompts_even_where_native_is_supported(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = config(
        tmp_path, model, OUTPUT.replace("name: place", "name: place\n      mode: prompted")
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert "response_format" not in server.last.body
    assert "JSON Schema" in server.last.body["messages"][-1]["content"]
    assert {r[2] for r in scores(tmp_path / "out")} == {"prompted"}


def test_mode_native_refuses_a_provider_that_cannot(tmp_path: Path) -> None:
    model = "{id: m, provider: openai-compatible, model: local, price: 0, base_url: 'http://127.0.0.1:9'}"
    cfg = config(tmp_path, model, OUTPUT.replace("name: place", "name: place\n      mode: native"))
    with pytest.raises(ConfigError, match="cannot be asked for JSON by schema natively") as exc:
        evalwh.validate(cfg)
    assert exc.value.where == "variants[0].output_schema.mode"


def test_a_json_schema_criterion_may_ask_every_variant(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = config(tmp_path, model, scorecard_extra=", request: auto")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.last.body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert server.last.body["response_format"]["json_schema"]["name"] == "answer"
    assert {r[2] for r in scores(tmp_path / "out")} == {"native"}


def test_the_schema_is_part_of_the_request_hash(tmp_path: Path) -> None:
    """The bug it names: an answer cached without a schema served to a request with one."""
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    plain = config(tmp_path / "a", model)
    asked = config(tmp_path / "b", model, OUTPUT)
    other = config(tmp_path / "c", model, OUTPUT.replace('"city"', '"town"'))
    out = tmp_path / "out"
    first = evalwh.run_eval(plain, output_dir=out)
    second = evalwh.run_eval(asked, output_dir=out)
    third = evalwh.run_eval(other, output_dir=out)
    again = evalwh.run_eval(asked, output_dir=out)
    assert first.stats["requests"] == second.stats["requests"] == third.stats["requests"] == 2
    assert again.stats["cache_hits"] == 2


def test_criteria_table_shows_the_mode(tmp_path: Path) -> None:
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    cfg = config(tmp_path, model, OUTPUT)
    assert run_cli("run", str(cfg), "-o", str(tmp_path / "out"), cwd=tmp_path).returncode == 0
    done = run_cli("last", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "json-schema (native)" in done.stdout  # the mock takes the schema as asked


# --- the extension point: another provider (the google provider of issue 16) -----------------


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

    monkeypatch.setitem(providers.BUILTIN, "ext", f"tests.test_structured:{cls}")
    providers.available.cache_clear()
    seen_file = tmp_path / "seen.jsonl"
    monkeypatch.setenv("EVALWH_TEST_SEEN", str(seen_file))
    try:
        cfg = config(tmp_path, "{id: m, provider: ext}", OUTPUT)
        evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    finally:
        providers.available.cache_clear()
    first = json.loads(seen_file.read_text().splitlines()[0])
    output, text = first["output"], json.dumps(first["messages"])
    if native:
        assert output["schema"] == SCHEMA and output["name"] == "place"
        assert "JSON Schema" not in text
    else:
        assert output is None and "valid against this JSON Schema" in text
    mode = "native" if native else "prompted"
    assert scores(tmp_path / "out") == [("c1", True, mode), ("c2", True, mode)]


def test_requests_differing_only_in_output_schema_hash_apart() -> None:
    """The bug it names: the schema hashed through an attachment digest that is gone (issue 16
    took it out), so an OpenAI request (whose scope is otherwise empty) with schema A and one
    with schema B shared a hash. The schema and its mode are in the request's scope."""
    from evalwh.config.model import ModelSpec
    from evalwh.config.outputs import OutputSpec
    from evalwh.engine.plan import model_identity, request_hash, request_scope

    model = ModelSpec(id="m", provider="openai", model="gpt-4o-mini")
    messages = [{"role": "user", "content": [{"type": "text", "text": "Where?"}]}]
    a = OutputSpec(schema=SCHEMA)
    b = OutputSpec(schema={**SCHEMA, "required": []})

    def key(output: OutputSpec | None) -> str:
        scope = request_scope(model, "v", "c1", output)
        return request_hash(model_identity(model), messages, 0, scope=scope)

    keys = [key(None), key(a), key(b), key(OutputSpec(schema=SCHEMA, mode="prompted"))]
    assert len(set(keys)) == 4
    assert key(a) == key(OutputSpec(schema=dict(SCHEMA)))  # the same schema: the same key
    assert request_scope(model, "v", "c1") == ""  # no schema: other providers' keys unchanged


def test_an_answer_to_one_schema_is_not_served_to_another(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end on the fake OpenAI server: the same prompt with another schema is sent
    again (no shared cache entry), the same schema a second time is a cache hit."""
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    out = tmp_path / "out"
    first = config(tmp_path / "a", model, OUTPUT)
    other = config(tmp_path / "b", model, OUTPUT.replace('"city"', '"town"'))
    one = evalwh.run_eval(first, output_dir=out)
    two = evalwh.run_eval(other, output_dir=out)
    again = evalwh.run_eval(first, output_dir=out)
    assert (one.stats["requests"], two.stats["requests"]) == (2, 2)
    assert server.count == 4
    assert [r.body["response_format"]["json_schema"]["schema"] for r in server.requests[2:]] == [
        json.loads(json.dumps(SCHEMA).replace('"city"', '"town"'))
    ] * 2
    assert (again.stats["requests"], again.stats["cache_hits"]) == (0, 2)
    con = duckdb.connect(str(out / "warehouse.duckdb"), read_only=True)
    try:
        # one entry per (case, schema): 2 cases x 2 schemas, none shared
        assert con.execute(
            "SELECT count(*), count(DISTINCT request_hash) FROM response_cache"
        ).fetchone() == (4, 4)
    finally:
        con.close()


# --- Gemini: responseSchema -------------------------------------------------------------------

GEMINI_ASKED = {
    "type": "OBJECT",
    "properties": {"city": {"type": "STRING"}},
    "required": ["city"],
    "propertyOrdering": ["city"],
}  # SCHEMA as the API's Schema: additionalProperties (not a Schema field) left out


def test_google_is_asked_with_response_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake refuses what the real API refuses (a JSON Schema keyword its Schema lacks, a
    lower-case type, a schema without responseMimeType), so the run passing shows the request
    is one the API takes."""
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: g, provider: google, model: gemini-2.5-flash, base_url: '{server.url}'}}"
    cfg = config(tmp_path, model, OUTPUT)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseSchema": GEMINI_ASKED,
    }
    assert "JSON Schema" not in json.dumps(body["contents"])  # native: no instruction added
    assert [r.behavior for r in server.requests] == ["reply", "reply"]
    assert scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    assert result.exit_code == 0


def test_google_prompted_mode_sends_no_response_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: g, provider: google, model: gemini-2.5-flash, base_url: '{server.url}'}}"
    cfg = config(tmp_path, model, OUTPUT + "      mode: prompted\n")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert "generationConfig" not in server.last.body
    assert "valid against this JSON Schema" in json.dumps(server.last.body["contents"])
    assert {r[2] for r in scores(tmp_path / "out")} == {"prompted"}


JSON = "application/json"


@pytest.mark.parametrize(
    ("config_", "refusal"),
    [
        ({"responseSchema": {"type": "OBJECT"}}, "response_mime_type"),
        ({"responseMimeType": "text/plain", "responseSchema": {"type": "OBJECT"}}, "mime"),
        ({"responseMimeType": JSON, "responseSchema": SCHEMA}, "response_schema.type"),
        (
            {"responseMimeType": JSON, "responseSchema": {**GEMINI_ASKED, "$schema": "x"}},
            'Unknown name "$schema"',
        ),
        (
            {"responseMimeType": JSON, "responseSchema": {"type": "ARRAY", "items": {"const": 1}}},
            "Unknown name \"const\" at 'generation_config.response_schema.items'",
        ),
        (
            {
                "responseMimeType": JSON,
                "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "string"}}},
            },
            "response_schema.properties[a].value.type",
        ),
        (
            {"responseMimeType": JSON, "responseSchema": {"anyOf": [{"type": "STRING"}, 3]}},
            "response_schema.any_of[1]",
        ),
        ({"responseMimeType": JSON, "responseSchema": {"required": "city"}}, "list of strings"),
    ],
)
def test_the_fake_gemini_server_refuses_what_the_api_refuses(
    server: FakeLLMServer, config_: dict[str, Any], refusal: str
) -> None:
    """The fake's check of generationConfig (the API's published Schema fields and Type
    names): a provider that sent raw JSON Schema would fail here as it would for real."""
    import httpx

    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": config_}
    url = f"{server.url}/v1beta/models/gemini-2.5-flash:generateContent"
    answer = httpx.post(url, json=body, headers={"x-goog-api-key": "k"})
    assert answer.status_code == 400
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert refusal in answer.json()["error"]["message"]


def test_response_schema_translates_json_schema_to_the_apis_schema() -> None:
    from evalwh.providers.gemini_schema import response_schema
    from tests.fakes.servers import _gemini_schema_problem

    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": ["string", "null"], "description": "who", "maxLength": 40},
            "age": {"type": ["integer", "string"]},
            "kind": {"const": "person"},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 1},
            "size": {"enum": [1, 2]},
            "where": {"oneOf": [{"type": "string"}, {"$ref": "#/definitions/point"}]},
            "nothing": {"type": "null"},
            "free": True,
        },
        "required": ["name"],
        "$defs": {"tag": {"type": "string", "enum": ["a", "b"], "not": {"const": "c"}}},
        "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    asked = response_schema(schema)
    assert asked == {
        "type": "OBJECT",
        "required": ["name"],
        "propertyOrdering": ["name", "age", "kind", "tags", "size", "where", "nothing", "free"],
        "properties": {
            "name": {"type": "STRING", "description": "who", "maxLength": 40, "nullable": True},
            "age": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
            "kind": {"type": "STRING", "enum": ["person"]},
            "tags": {
                "type": "ARRAY",
                "minItems": 1,
                "items": {"type": "STRING", "enum": ["a", "b"]},
            },
            "size": {},  # numbers are not an enum the API takes: left to the criterion
            "where": {
                "anyOf": [
                    {"type": "STRING"},
                    {
                        "type": "OBJECT",
                        "properties": {"x": {"type": "NUMBER"}},
                        "propertyOrdering": ["x"],
                    },
                ]
            },
            "nothing": {"type": "NULL"},
            "free": {},
        },
    }
    assert _gemini_schema_problem(asked, "response_schema") is None  # the fake API takes it
    assert response_schema({"type": ["null", "string"], "propertyOrdering": ["b", "a"]}) == {
        "type": "STRING",
        "nullable": True,
        "propertyOrdering": ["b", "a"],
    }
    assert response_schema({"type": ["integer", "null", "string"]}) == {
        "anyOf": [{"type": "INTEGER"}, {"type": "STRING"}],
        "nullable": True,
    }
    assert response_schema({"type": ["null"]}) == {"type": "NULL", "nullable": True}


def test_response_schema_nests_up_to_its_limit_and_refuses_beyond() -> None:
    from evalwh.providers.gemini_schema import MAX_DEPTH, response_schema

    def nested(levels: int) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "string"}
        for _ in range(levels):
            node = {"type": "array", "items": node}
        return node

    deepest = response_schema(nested(MAX_DEPTH))
    for _ in range(MAX_DEPTH):
        deepest = deepest["items"]
    assert deepest == {"type": "STRING"}
    with pytest.raises(ConfigError, match=f"deeper than {MAX_DEPTH} levels"):
        response_schema(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}, "names nothing"),
        ({"$ref": "https://example.com/s.json"}, "names nothing"),
        ({"$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"}, "recursive"),
        ({"type": "text"}, "'text' is not a JSON Schema type"),
    ],
)
def test_a_schema_gemini_cannot_take_is_refused_at_validation(
    tmp_path: Path, schema: dict[str, Any], why: str
) -> None:
    output = f"    output_schema:\n      schema: {json.dumps(schema)}\n"
    model = "{id: g, provider: google, model: gemini-2.5-flash}"
    cfg = config(tmp_path, model, output)
    with pytest.raises(ConfigError, match=why) as exc:
        evalwh.validate(cfg)
    assert exc.value.where == "variants[0].output_schema"
    assert "mode: prompted" in (exc.value.fix or "")
    prompted = config(tmp_path / "p", model, output + "      mode: prompted\n")
    evalwh.validate(prompted)  # asked by prompt: the schema is never sent as responseSchema


def test_an_output_schema_file_is_read_as_json_or_yaml_and_refused_with_its_place(
    tmp_path: Path,
) -> None:
    from evalwh.config.outputs import read_schema_file

    write(tmp_path / "s.json", json.dumps(SCHEMA))
    write(tmp_path / "s.yaml", "type: object\nrequired: [city]\n")
    assert read_schema_file("s.json", tmp_path, "w", "e.yaml") == SCHEMA
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
        f"schema file {(tmp_path / 'bad.JSON').resolve()} is not valid JSON: Expecting value",
        *at, "fix the JSON syntax of the schema file",
    )  # fmt: skip
    (tmp_path / "latin.json").write_bytes(b'{"title": "caf\xe9"}')  # not UTF-8: an error, no crash
    message, *where, fix = refused("latin.json")
    assert message.startswith(f"cannot read schema file {(tmp_path / 'latin.json').resolve()}: ")
    assert (tuple(where), fix) == (at, "make the schema file a readable UTF-8 JSON or YAML file")
    # in a config: a variant's own schema_file, and a criterion's that asks with `request:`
    write(tmp_path / "cfg" / "place.json", json.dumps(SCHEMA))
    own = config(
        tmp_path / "cfg",
        "{id: m, provider: mock}",
        "    output_schema: {schema_file: place.json}\n",
    )
    assert evalwh.load_config(own).variants[0].output.schema == SCHEMA
    asked = config(
        tmp_path / "cfg", "{id: m, provider: mock}", "",
        scorecard_extra=""", request: native}\n  - {name: f, type: json-schema, schema_file: place.json, request: native""",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="more than one json-schema criterion has `request:`"):
        evalwh.load_config(asked)
