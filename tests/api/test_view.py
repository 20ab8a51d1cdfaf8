"""Reading the warehouse (evalwh/api/view.py): the next step of a run that did not complete,
which for a failed run names the cause its stored errors give (a refused or missing key, an
endpoint nothing answered at)."""

from __future__ import annotations

from typing import Any

from evalwh.api.hints import failure_causes, next_step

URL = "http://127.0.0.1:9/v1/chat/completions"


def errors(*rows: tuple[str, str, int]) -> list[dict[str, Any]]:
    """Rows as the ``errors`` query gives them: error, error_kind, n."""
    return [{"error": e, "error_kind": k, "n": n, "examples": []} for e, k, n in rows]


def test_each_cause_is_named_once_most_frequent_first() -> None:
    rows = errors(
        ("anthropic: HTTP 401 (check ANTHROPIC_API_KEY): authentication_error: bad key", "auth", 2),
        (f"openai-compatible: cannot connect to {URL} (ConnectError: refused)", "connection", 5),
        (
            f"endpoint unreachable: the first 5 connection attempts to model 'm' failed "
            f"(openai-compatible: cannot connect to {URL} (ConnectError: refused)); ...",
            "unreachable",
            20,
        ),
        ("openai: HTTP 500: server_error: boom", "server", 9),  # no cause to name
    )
    assert failure_causes(rows) == [
        f"nothing answered at {URL}: start the server there or correct the model's base_url",
        "the API key in ANTHROPIC_API_KEY was refused (HTTP 401): check its value",
    ]


def test_a_key_that_is_not_set_or_not_named_is_said_as_such() -> None:
    rows = errors(
        (
            "google: GEMINI_API_KEY is not set; export it or put it in .evalwh.secrets.yaml",
            "auth",
            1,
        ),
        ("openai-compatible: HTTP 403: forbidden", "auth", 1),
    )
    assert failure_causes(rows) == [
        "GEMINI_API_KEY is not set: set it in the environment or a secrets file (docs/secrets.md)",
        "the endpoint refused the request (HTTP 403): it needs an API key, named with the "
        "model's api_key_env",
    ]
    # a connection that dropped after it was made names no endpoint
    assert (
        failure_causes(errors(("x: connection failed (ReadError: reset)", "connection", 3))) == []
    )


def test_the_next_step_puts_the_cause_before_the_command() -> None:
    run = {"run_id": "r1", "status": "failed", "config_path": "eval.yaml"}
    refused = errors(("anthropic: HTTP 401 (check ANTHROPIC_API_KEY): nope", "auth", 4))
    assert next_step(run, refused) == (
        "failed: the API key in ANTHROPIC_API_KEY was refused (HTTP 401): check its value; "
        "then re-run the errored cells with `evalwh run eval.yaml --retry-errors r1`"
    )
    outage = errors(("openai: HTTP 503: overloaded", "server", 4))
    assert next_step(run, outage) == (
        "failed: once the endpoint is back, re-run the errored cells with "
        "`evalwh run eval.yaml --retry-errors r1`"
    )
    assert (
        next_step(run)
        == "failed: re-run the errored cells with `evalwh run eval.yaml --retry-errors r1`"
    )
    # a datasource run is started again, its cause said first
    source = {**run, "datasources": '[{"name": "jsonl"}]'}
    said = next_step(source, refused)
    assert said is not None and said.startswith(
        "failed: the API key in ANTHROPIC_API_KEY was refused (HTTP 401): check its value; "
        "the stored rows are kept; a datasource run cannot be resumed"
    )
    # a run that completed has no next step, whatever errors it stored
    assert next_step({**run, "status": "completed"}, refused) is None
