"""Tests that kill mutants mutmut found alive in the command provider and the HTTP transports (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers import http_aiohttp as aio
from evalwh.providers.base import Completion, ProviderError
from evalwh.providers.command import CommandProvider
from evalwh.providers.http import EXCERPT_CHARS, excerpt

MISSING_FIX = 'add command: the program to run, e.g. command: "python my_model.py"'
BAD_FIX = (
    'write the program and its arguments, e.g. "python my_model.py --flag" '
    '(or a list: ["python", "my_model.py"])'
)


def spec_for(command: Any) -> ModelSpec:
    options: dict[str, Any] = {} if command is None else {"command": command}
    return ModelSpec(
        id="cmd", provider="command", model="my-model", options=options, where="models[2]"
    )


def parse(stdout: str) -> Completion:
    return CommandProvider(spec_for(["my-model-program"]))._parse(stdout)


def parse_failure(stdout: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        parse(stdout)
    return info.value


# --- the program's stdout: JSON ---------------------------------------------------------


def test_json_reply_keeps_its_text_token_counts_and_extra() -> None:
    got = parse(
        '{"text": "hi", "input_tokens": 12, "output_tokens": 3, '
        '"extra": {"finish_reason": "stop", "cost_usd": 0.25}}\n'
    )
    assert got == Completion(
        text="hi",
        input_tokens=12,
        output_tokens=3,
        extra={"finish_reason": "stop", "cost_usd": 0.25},
    )


def test_output_key_works_like_text_and_a_non_object_extra_is_dropped() -> None:
    got = parse('{"output": "hello", "extra": ["not", "a", "dict"]}')
    assert got == Completion(text="hello", input_tokens=None, output_tokens=None, extra={})


def test_token_counts_that_are_not_integers_are_not_recorded() -> None:
    """A string or a boolean is no token count: stored as unknown (None), not as "12" or True."""
    got = parse('{"text": "hi", "input_tokens": "12", "output_tokens": true}')
    assert (got.input_tokens, got.output_tokens) == (None, None)
    got = parse('{"text": "hi", "input_tokens": 1.5, "output_tokens": false}')
    assert (got.input_tokens, got.output_tokens) == (None, None)


def test_non_string_text_names_the_key_and_the_type_it_got() -> None:
    err = parse_failure('{"text": 42}')
    assert str(err) == 'command: "text" must be a string, got int'
    assert err.kind == "bad_response" and err.retryable is False
    err = parse_failure('{"output": ["a", "b"]}')
    assert str(err) == 'command: "output" must be a string, got list'


def test_an_error_reply_without_retryable_is_not_retried() -> None:
    err = parse_failure('{"error": "model crashed"}')
    assert str(err) == "command: model crashed"
    assert err.retryable is False


def test_an_error_reply_says_whether_it_is_retryable() -> None:
    assert parse_failure('{"error": "busy", "retryable": true}').retryable is True
    assert parse_failure('{"error": "bad", "retryable": false}').retryable is False


# --- the program's stdout: plain text -------------------------------------------------------


def test_plain_text_loses_only_its_trailing_newlines() -> None:
    """Trailing spaces and tabs are part of the answer; only line ends are removed."""
    assert parse("hello  \t\n\r\n").text == "hello  \t"
    assert parse("  indented\n").text == "  indented"


def test_plain_text_ending_in_capital_x_keeps_it() -> None:
    assert parse("RELAX\n").text == "RELAX"
    assert parse("XX\r\n").text == "XX"


def test_invalid_json_is_taken_as_plain_text() -> None:
    assert parse('{"text": "unfinished\n').text == '{"text": "unfinished'


# --- config validation ----------------------------------------------------------------------


def config_error(command: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        CommandProvider.check(spec_for(command), file="eval.yaml")
    return info.value


def test_a_missing_command_says_what_to_add_and_where() -> None:
    err = config_error(None)
    assert (err.message, err.file, err.where, err.fix) == (
        "provider 'command' needs a command",
        "eval.yaml",
        "models[2].command",
        MISSING_FIX,
    )
    assert str(err) == (
        f"eval.yaml: models[2].command: provider 'command' needs a command\n  fix: {MISSING_FIX}"
    )


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (42, "command must be a string or a list of strings"),
        (["python", 3], "command must be a string or a list of strings"),
        ("", "command is empty"),
        ([], "command is empty"),
    ],
)
def test_an_unusable_command_names_the_file_place_and_fix(command: Any, reason: str) -> None:
    err = config_error(command)
    assert (err.message, err.file, err.where, err.fix) == (
        f"bad command: {reason}",
        "eval.yaml",
        "models[2].command",
        BAD_FIX,
    )
    assert str(err) == f"eval.yaml: models[2].command: bad command: {reason}\n  fix: {BAD_FIX}"


def test_a_usable_command_passes_the_check() -> None:
    CommandProvider.check(spec_for("python my_model.py --flag"), file="eval.yaml")
    CommandProvider.check(spec_for(["python", "my_model.py"]), file="eval.yaml")


# --- excerpts of a provider's bad reply -------------------------------------------------------


def test_an_empty_or_blank_body_is_shown_as_empty_body() -> None:
    assert excerpt("") == "(empty body)"
    assert excerpt(" \n\t \r\n") == "(empty body)"


def test_an_excerpt_is_one_line_cut_at_exactly_its_limit() -> None:
    assert excerpt("a" * EXCERPT_CHARS) == "a" * EXCERPT_CHARS
    assert excerpt("a" * (EXCERPT_CHARS + 1)) == "a" * EXCERPT_CHARS + "..."
    assert excerpt("<html>\n  <b>bad   gateway</b>\n</html>") == "<html> <b>bad gateway</b> </html>"
    assert excerpt("abcdef", limit=3) == "abc..."


# --- aiohttp failures as the httpx errors httpcore raises -----------------------------------


def test_a_mapped_aiohttp_error_keeps_its_message() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    mapped = aio._mapped(aiohttp.ServerTimeoutError("read timed out after 5s"))
    assert type(mapped) is httpx.ReadTimeout and str(mapped) == "read timed out after 5s"
    mapped = aio._mapped(aiohttp.ServerDisconnectedError())
    assert type(mapped) is httpx.RemoteProtocolError and str(mapped) == "Server disconnected"


def test_a_mapped_aiohttp_error_without_a_message_is_named_by_its_class() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    mapped = aio._mapped(asyncio.TimeoutError())
    assert type(mapped) is httpx.ReadTimeout and str(mapped) == "TimeoutError"
    mapped = aio._mapped(aiohttp.ConnectionTimeoutError())
    assert type(mapped) is httpx.ConnectTimeout and str(mapped) == "ConnectionTimeoutError"


class _Cut:
    """A response body stream that yields one chunk, then fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"partial": '
        raise self.error

    async def aclose(self) -> None:
        return None


def _read(error: Exception) -> tuple[list[bytes], Exception]:
    async def go() -> tuple[list[bytes], Exception]:
        chunks: list[bytes] = []
        try:
            async for chunk in aio._Body(_Cut(error)):
                chunks.append(chunk)
        except Exception as exc:  # the test inspects what was raised
            return chunks, exc
        raise AssertionError("the body did not fail")

    return asyncio.run(go())


def test_a_body_cut_short_by_a_raw_aiohttp_error_is_a_protocol_error() -> None:
    """aiohttp's own payload error (not wrapped by httpx-aiohttp) is still mapped."""
    aiohttp = pytest.importorskip("aiohttp")
    chunks, raised = _read(aiohttp.ClientPayloadError("response payload is not completed"))
    assert chunks == [b'{"partial": ']
    assert type(raised) is httpx.RemoteProtocolError
    assert str(raised) == "response payload is not completed"


def test_a_body_error_wrapped_by_httpx_aiohttp_is_mapped_from_its_cause() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    wrapped = httpx.ReadTimeout("wrapped")
    wrapped.__cause__ = aiohttp.ServerDisconnectedError()
    _chunks, raised = _read(wrapped)
    assert type(raised) is httpx.RemoteProtocolError and str(raised) == "Server disconnected"


def test_a_body_error_that_is_not_a_transport_error_is_raised_as_it_is() -> None:
    error = ValueError("a bug, not the network")
    _chunks, raised = _read(error)
    assert raised is error
