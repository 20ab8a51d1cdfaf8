"""Tests that kill mutants mutmut found alive (issue 21) in the Anthropic wire format
(evalwh/providers/anthropic.py), what a no-look run shows (evalwh/analysis/nolook.py), the
read-only attach of a DuckLake for ``evalwh sql`` (evalwh/analysis/readonly.py) and the
alias-bomb bound of the YAML loader (evalwh/config/yamlpos.py). They call the code directly
and assert whole results, so they are cheap enough for mutmut to run first; each test's name
says the user-visible behaviour it pins."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from evalwh import __version__
from evalwh.analysis.nolook import minimal
from evalwh.analysis.readonly import QueryBounds, _attach_lake
from evalwh.config import attachments, secrets, yamlpos
from evalwh.config.model import Case, ModelSpec
from evalwh.config.yamlpos import BoundedLoader, parse_yaml
from evalwh.errors import ConfigError
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.base import Request
from evalwh.warehouse import lake

ANTHROPIC_KEY = "sk-ant-survivor-test-key-0123456789"
AGENT = {"user-agent": f"evalwh/{__version__}"}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setattr(secrets, "_loaded", set())


def claude(params: Any = None, **options: Any) -> AnthropicProvider:
    spec = ModelSpec(
        id="c",
        provider="anthropic",
        model="claude-test",
        params=dict(params or {}),
        options=options,
        where="models[0]",
    )
    return AnthropicProvider(spec)


def text(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": value}


def body_for(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    prov = claude(params)
    return prov.build_body(Request(prov.spec, messages, Case(id="c1"), "v"))


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def system(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "system", "content": list(parts)}


# ---- anthropic: text parts and the system field --------------------------------------------


def test_an_empty_or_missing_text_part_becomes_an_empty_anthropic_text_block() -> None:
    prov = claude()
    for value in ("", None):
        assert prov._part(text(value)) == {"type": "text", "text": ""}
    assert prov._part(text("hi")) == {"type": "text", "text": "hi"}


def test_empty_text_blocks_are_dropped_from_an_anthropic_message_and_the_rest_kept() -> None:
    image = {"type": "image", "url": "https://example.invalid/cat.jpg"}
    body = body_for([user(text("hi"), text(""), image, text(None))])
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://example.invalid/cat.jpg"},
                    },
                ],
            }
        ],
    }


def test_a_message_of_only_empty_text_keeps_its_block_so_the_content_is_never_empty() -> None:
    body = body_for([user(text(""))])
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": ""}]}]


def test_system_messages_go_to_the_system_field_joined_by_a_blank_line() -> None:
    body = body_for(
        [system(text("Be brief.")), system(text("Answer in French.")), user(text("Bonjour"))]
    )
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Bonjour"}]}],
        "system": "Be brief.\n\nAnswer in French.",
    }


def test_an_empty_system_text_part_sends_no_system_field_and_adds_nothing() -> None:
    for value in ("", None):
        body = body_for([system(text(value)), user(text("hi"))])
        assert body == {
            "model": "claude-test",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        }
    body = body_for([system(text("Be brief."), text(None)), user(text("hi"))])
    assert body["system"] == "Be brief.\n\n"


def test_a_text_file_that_is_not_utf8_is_sent_with_replacement_characters(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"caf\xe9 au lait\n")
    found = attachments.load(path, "notes")
    part = {**found.part("file"), "media_type": "text/plain"}
    assert claude()._part(part) == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "caf\ufffd au lait\n"},
    }


# ---- anthropic: headers ----------------------------------------------------------------------


def test_the_anthropic_key_and_version_headers_have_their_lower_case_wire_names() -> None:
    prov = claude()
    assert prov.auth_headers("k") == {"x-api-key": "k"}
    assert prov.base_headers() == {"anthropic-version": "2023-06-01"}
    assert prov._resolve_headers() == {
        **AGENT,
        "anthropic-version": "2023-06-01",
        "x-api-key": ANTHROPIC_KEY,
    }


def test_a_configured_header_replaces_the_anthropic_key_and_version_not_adds_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "gw-survivor-secret")
    prov = claude(headers={"anthropic-version": "2024-01-01", "x-api-key": "${GATEWAY_KEY}"})
    assert prov._resolve_headers() == {
        **AGENT,
        "anthropic-version": "2024-01-01",
        "x-api-key": "gw-survivor-secret",
    }
    # names in another case replace them too: a header sent twice (both values) was the bug
    prov = claude(headers={"Anthropic-Version": "2024-01-01", "X-Api-Key": "${GATEWAY_KEY}"})
    assert prov._resolve_headers() == {
        **AGENT,
        "Anthropic-Version": "2024-01-01",
        "X-Api-Key": "gw-survivor-secret",
    }
    prov = claude(headers={"User-Agent": "gateway-probe"})
    assert prov._resolve_headers() == {
        "User-Agent": "gateway-probe",
        "anthropic-version": "2023-06-01",
        "x-api-key": ANTHROPIC_KEY,
    }


# ---- no-look: criteria ---------------------------------------------------------------------


def test_a_no_look_row_drops_hidden_keys_from_its_criteria_and_keeps_other_entries() -> None:
    tone = {"name": "tone", "score": 1.0, "rationale": "polite", "details": {"x": 1}}
    row = {
        "case_id": "c1",
        "output": "secret answer",
        "score": 0.5,
        "criteria": [
            tone,
            "legacy",
            None,
        ],
    }
    assert minimal(row) == {
        "case_id": "c1",
        "score": 0.5,
        "criteria": [{"name": "tone", "score": 1.0}, "legacy", None],
    }
    assert tone["rationale"] == "polite"  # the caller's row is left as it was


# ---- evalwh sql on a DuckLake --------------------------------------------------------------


def test_evalwh_sql_attaches_a_lake_read_only_bounded_and_locked(tmp_path: Path) -> None:
    target = lake.parse_target(
        "ducklake:meta.ducklake", {"data_path": "data"}, base=tmp_path, where="w"
    )
    writer = lake.cursor(target, read_only=False, memory_limit="256MB")
    writer.execute("CREATE TABLE t (a INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    writer.close()
    con = _attach_lake(target, QueryBounds(threads=1, memory_limit="300MB"))
    try:
        assert con.execute("SELECT a FROM t").fetchall() == [(1,)]
        with pytest.raises(duckdb.Error, match="attached in read-only mode"):
            con.execute("INSERT INTO t VALUES (2)")
        settings = con.execute(
            "SELECT current_setting('threads'), current_setting('enable_external_access'), "
            "current_setting('lock_configuration'), current_setting('allowed_directories')"
        ).fetchone()
        assert settings is not None
        assert settings[:3] == (1, False, True)
        assert target.data_path in settings[3]
        with pytest.raises(duckdb.Error, match="configuration has been locked"):
            con.execute("SET threads = 2")
        outside = tmp_path / "outside.csv"
        outside.write_text("a\n1\n")
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_csv('{outside}')")
    finally:
        con.close()
        lake.release(target)


# ---- YAML: the alias-bomb bound --------------------------------------------------------------

SEQ = "a: &a [1, 2]\nb: *a\n"  # the alias adds the list and its two items: 3 nodes
MAP = "m: &m {k: [1, 2]}\nn: *m\n"  # the mapping, its key and its list of two: 5 nodes


def alias_nodes(text: str) -> int:
    loader = BoundedLoader(text, "t.yaml")
    try:
        loader.get_single_node()
        return int(loader.alias_nodes)
    finally:
        loader.dispose()


def test_an_alias_counts_every_node_it_adds_to_the_expanded_document() -> None:
    assert alias_nodes("a: &a x\nb: *a\n") == 1
    assert alias_nodes(SEQ) == 3
    assert alias_nodes(MAP) == 5
    assert alias_nodes("m: &m {k: v}\nn: *m\no: *m\n") == 6
    assert alias_nodes("a: &a [1, 2]\nb: &b [*a, *a]\nc: *b\n") == 3 + 3 + 7


def test_aliases_may_add_exactly_the_bound_and_one_node_more_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 5)
    assert parse_yaml(MAP, "t.yaml")[0] == {"m": {"k": [1, 2]}, "n": {"k": [1, 2]}}
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 4)
    with pytest.raises(ConfigError) as info:
        parse_yaml(MAP, "t.yaml")
    assert str(info.value) == (
        "t.yaml:2:4: YAML aliases expand to more than 4 nodes (the alias *m and those before "
        "it)\n  fix: write the data out instead of nesting anchors and aliases (an alias bomb "
        "is refused)"
    )
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 3)
    assert parse_yaml(SEQ, "t.yaml")[0] == {"a": [1, 2], "b": [1, 2]}
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 2)
    with pytest.raises(ConfigError, match="more than 2 nodes"):
        parse_yaml(SEQ, "t.yaml")


class CountingLoader(BoundedLoader):
    """Counts the times each node is asked its size."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream, "t.yaml")
        self.asked: Counter[str] = Counter()

    def _size(self, node: yaml.Node) -> int:
        self.asked[str(node.value) if isinstance(node, yaml.ScalarNode) else node.tag] += 1
        return int(super()._size(node))


def test_a_shared_node_is_sized_once_however_many_aliases_name_it() -> None:
    # an alias bomb composes to shared nodes; sizing each one again per alias would take
    # time exponential in its depth before the bound could refuse it
    loader = CountingLoader("a: &a [1, 2]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n")
    try:
        loader.get_single_node()
        assert loader.alias_nodes == 3 * 3 + 3 * 10
        # the aliases ask a (the list) 3 times and b 3 times; b's first sizing asks a 3
        # times more; a's items are walked once, when a is first sized
        assert loader.asked == {"tag:yaml.org,2002:seq": 9, "1": 1, "2": 1}
    finally:
        loader.dispose()
