"""Preparing a run (evalwh/engine/execute.py): thresholds checked against the scorecard,
and the request hashes of cells (an attachment's contents are part of them).

The checks a run makes of its config before anything is sent (check_config), each refusal
with its file, place and fix, and the secrets a config names (secret_names), which are loaded
before the first request. The estimate a run prints before it calls anything (estimate):
calls, tokens and cost per model and per judge, worked out by hand for a config with a priced
model, an unpriced one, an llm-judge criterion and a pairwise comparison (input = rendered
characters / 4, output = max_tokens or 512, a judge's 300 tokens of instructions, as
docs/running.md says). The reads of the response cache (cache_lookup, judge_cache, the
streaming run's bounded cache). How the engine and the writer take turns (_drive), with a
stand-in engine and writer: a batch that falls due while the engine waits is flushed at the
next 10 ms wake-up, one flush at a time and never an empty one mid-run, and a cancelled run is
cancelled, waited for and flushed to its last row. And what a run stores about itself: every
column of its `runs` row (docs/storage.md), the commit it records, the progress it reports,
its backpressure, its cost-cap stop, its writer's settings, an interruption, a failure before
the engine exists, a takeover mid-run, and the refusal of an attachment edited after planning."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh import __version__, load_config
from evalwh.api import validate
from evalwh.config.model import ModelSpec
from evalwh.engine import execute
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.execute import (
    _bounded,
    _drive,
    _finish,
    _output_tokens,
    cache_lookup,
    check_config,
    git_commit,
    judge_cache,
    secret_names,
    store_files,
)
from evalwh.engine.feed import BoundedCache
from evalwh.errors import ConfigError, UsageError
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.builders import BASE, PLACE_OUTPUT, ROWS_CONFIG, eval_for, git, only_row, place_config
from tests.config.test_datasets import KEY
from tests.conftest import run_cli, write


def test_threshold_for_unknown_criterion() -> None:
    cfg = write(
        Path("eval.yaml"), BASE + "thresholds:\n  criteria:\n    nope: {min_pass_rate: 0.5}\n"
    )
    with pytest.raises(ConfigError, match="unknown criterion 'nope'"):
        validate(cfg)


def test_attachment_contents_are_part_of_the_request_hash(tmp_path: Path) -> None:
    from evalwh.config.settings import resolve_settings
    from evalwh.engine.execute import prepare
    from evalwh.engine.plan import Filters

    (tmp_path / "cat.png").write_bytes(b"one")
    write(
        tmp_path / "p.yaml",
        "messages:\n  - role: user\n    content:\n      - {type: image, path: cat.png}\n",
    )
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: p.yaml\n",
        ),
    )
    settings = resolve_settings({}, None, None)
    first = prepare(load_config(cfg), settings, Filters(), 1).hashes
    (tmp_path / "cat.png").write_bytes(b"two")
    second = prepare(load_config(cfg), settings, Filters(), 1).hashes
    assert first != second and len(first) == len(second) == 1


# -- check_config and secret_names -----------------------------------------------------------

TWO_CRITERIA = ROWS_CONFIG + "  - {name: alpha, type: contains, value: a}\n"  # two criteria


def checked(tmp_path: Path, text: str) -> Any:
    """The config check_config returns for ``text`` (as eval.yaml in ``tmp_path``)."""
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    return check_config(load_config(tmp_path / "eval.yaml"))[1]


def refusal(tmp_path: Path, text: str) -> ConfigError:
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        check_config(load_config(tmp_path / "eval.yaml"))
    assert refused.value.file == str(tmp_path / "eval.yaml")
    return refused.value


def test_a_key_in_the_config_is_refused_where_it_is(tmp_path: Path) -> None:
    text = TWO_CRITERIA.replace("mock: {default: hi}}", f"mock: {{default: {KEY}}}}}")
    error = refusal(tmp_path, text)
    assert (error.message, error.fix) == (
        "this looks like an API key (openai); keys never belong in eval.yaml",
        "remove it, rotate the key if the file was shared, and set it in the environment or in"
        " .evalwh.secrets.yaml (see docs/secrets.md)",
    )
    assert error.where == "models[0].mock.default"


def test_a_threshold_for_an_unknown_criterion_names_the_known_ones(tmp_path: Path) -> None:
    error = refusal(
        tmp_path, TWO_CRITERIA + "thresholds: {criteria: {nope: {min_pass_rate: 0.5}}}\n"
    )
    assert (error.message, error.where, error.fix) == (
        "threshold for unknown criterion 'nope'",
        "thresholds.criteria.nope",
        "use a scorecard criterion name: alpha, has",
    )


def test_a_no_look_eval_with_pairwise_judging_is_refused(tmp_path: Path) -> None:
    text = TWO_CRITERIA.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n").replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: mock, mock: {default: hi}}\n  - {id: n, provider: mock}",
    ) + (
        "judges:\n  - {id: j, model: {id: jm, provider: mock, mock: {default: A}}}\n"
        "pairwise:\n  - {name: cmp, judge: j, baseline: {model: m}, candidate: {model: n}}\n"
    )
    error = refusal(tmp_path, text)
    assert (error.message, error.where, error.fix) == (
        "pairwise judging compares two stored answers, and a no-look run stores none",
        "pairwise",
        "remove `pairwise:` from this no-look eval, or run it without no-look",
    )


def test_a_native_schema_for_a_provider_without_one_is_refused(tmp_path: Path) -> None:
    text = TWO_CRITERIA.replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: command, command: [echo, hi]}",
    ).replace(
        '{{ q }}"}]}',
        '{{ q }}"}], output_schema: {schema: {type: object}, mode: native}}',
    )
    error = refusal(tmp_path, text)
    assert (error.message, error.where, error.fix) == (
        "model 'm' (provider command) cannot be asked for JSON by schema natively",
        "variants[0].output_schema.mode",
        "use mode: auto (prompted where native is not supported) or mode: prompted",
    )
    native = text.replace(
        "{id: m, provider: command, command: [echo, hi]}", "{id: m, provider: mock}"
    )
    (tmp_path / "eval.yaml").write_text(native, encoding="utf-8")
    check_config(load_config(tmp_path / "eval.yaml"))  # the mock takes a schema natively


def test_a_paid_model_with_no_known_price_is_refused(tmp_path: Path) -> None:
    text = TWO_CRITERIA.replace(
        "  - {id: m, provider: mock, mock: {default: hi}}",
        "  - {id: m, provider: openai, model: not-a-listed-model}",
    )
    error = refusal(tmp_path, text)
    assert error.message.startswith("no known price for openai model 'not-a-listed-model'")
    assert error.where == "models[0]"
    assert error.fix == (
        "add `price: {input_per_mtok: ..., output_per_mtok: ...}` to the model, or `price: 0`"
        " for a local model"
    )


def test_a_paid_judge_with_no_known_price_is_refused(tmp_path: Path) -> None:
    text = TWO_CRITERIA + (
        "judges:\n  - {id: j, model: {id: jm, provider: openai, model: not-a-listed-model}}\n"
    )
    error = refusal(tmp_path, text)
    assert error.message.startswith("no known price for openai model 'not-a-listed-model'")
    priced = text.replace("model: not-a-listed-model}", "model: not-a-listed-model, price: 0}")
    (tmp_path / "eval.yaml").write_text(priced, encoding="utf-8")
    _, checked = check_config(load_config(tmp_path / "eval.yaml"))
    assert checked.judges[0].model.price is not None


def test_the_secrets_a_config_names_are_its_key_variables_and_header_references(
    tmp_path: Path,
) -> None:
    text = (
        TWO_CRITERIA.replace(
            "  - {id: m, provider: mock, mock: {default: hi}}",
            "  - {id: m, provider: mock, mock: {default: hi}}\n"
            "  - {id: o, provider: openai, model: gpt-4o-mini}\n"
            "  - {id: g, provider: openai, model: gpt-4o-mini, api_key_env: GATEWAY_KEY,\n"
            "     headers: {X-Team: '${TEAM_TOKEN}', X-Org: 'org ${ORG_TOKEN}'}}",
        )
        + "judges:\n  - {id: j, model: {id: jm, provider: anthropic, model: claude-3-5-haiku-latest}}\n"
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    assert secret_names(load_config(tmp_path / "eval.yaml")) == [
        "OPENAI_API_KEY", "GATEWAY_KEY", "TEAM_TOKEN", "ORG_TOKEN", "ANTHROPIC_API_KEY",
    ]  # fmt: skip


def test_a_providers_own_refusal_names_the_config_file(tmp_path: Path) -> None:
    text = TWO_CRITERIA.replace(
        "{id: m, provider: mock, mock: {default: hi}}", "{id: m, provider: openai-compatible}"
    )
    error = refusal(tmp_path, text)  # refusal() checks the file
    assert (error.message, error.where) == (
        "provider 'openai-compatible' needs a base_url",
        "models[0].base_url",
    )


GEMINI_SCHEMA = TWO_CRITERIA.replace(
    "{id: m, provider: mock, mock: {default: hi}}",
    "{id: m, provider: google, model: gemini-2.5-flash}",
).replace(
    '{id: v, messages: [{role: user, content: "{{ q }}"}]}',
    '{id: v, messages: [{role: user, content: "{{ q }}"}], output_schema: '
    "{MODE schema: {type: object, properties: {a: {type: widget}}}}}",
)


def test_a_schema_the_provider_cannot_send_natively_is_refused_at_validation(
    tmp_path: Path,
) -> None:
    error = refusal(tmp_path, GEMINI_SCHEMA.replace("MODE ", ""))  # mode auto: native here
    assert (error.message, error.where, error.fix) == (
        "the output schema cannot be sent as Gemini's responseSchema: type 'widget' is not a "
        "JSON Schema type",
        "variants[0].output_schema",
        "simplify the schema, or ask for it by prompt (mode: prompted)",
    )
    # asked for by prompt, the same schema is never sent as Gemini's Schema: not refused
    checked(tmp_path, GEMINI_SCHEMA.replace("MODE ", "mode: prompted, "))


JUDGED = TWO_CRITERIA + (
    "  - {name: judged, type: llm-judge, judge: j}\njudges:\n  - {id: j, model: JUDGE, EXTRA}\n"
)


@pytest.mark.parametrize(
    ("model", "extra", "message", "where"),
    [
        (
            "{id: jm, provider: openai-compatible}",
            'rubric: "Is it right?"',
            "provider 'openai-compatible' needs a base_url",
            "judges[0].model.base_url",
        ),
        (
            "{id: jm, provider: mock}",
            'messages: [{role: user, content: "Is {{ output right?"}]',
            "template syntax error: expected token 'end of print statement', got 'right' "
            "(line 1 of the template)",
            "judges[0].messages[0].content[0]",
        ),
    ],
    ids=["provider", "template"],
)
def test_a_judges_refusal_names_the_config_file(
    tmp_path: Path, model: str, extra: str, message: str, where: str
) -> None:
    error = refusal(tmp_path, JUDGED.replace("JUDGE", model).replace("EXTRA", extra))
    assert (error.message, error.where) == (message, where)


def test_each_cases_check_is_parsed_and_a_case_without_one_keeps_none(tmp_path: Path) -> None:
    from evalwh.scoring.checks import CheckSpec

    text = TWO_CRITERIA.replace(
        "{id: c1, vars: {q: one}}", '{id: c1, vars: {q: one}, check: "true"}'
    )
    assert [c.check for c in checked(tmp_path, text).cases] == [CheckSpec(run="true"), None, None]
    # every case with a check: all parsed
    every = text.replace(
        "{id: c2, vars: {q: two}}", "{id: c2, vars: {q: two}, check: {run: 'false', timeout_s: 3}}"
    )
    every = every.replace(
        "{id: other, vars: {q: three}}", "{id: other, vars: {q: three}, check: x}"
    )
    assert [c.check for c in checked(tmp_path, every).cases] == [
        CheckSpec(run="true"),
        CheckSpec(run="false", timeout_s=3),
        CheckSpec(run="x"),
    ]


def test_a_scorecard_refusal_names_the_config_file(tmp_path: Path) -> None:
    error = refusal(tmp_path, TWO_CRITERIA + "  - {name: r, type: regex, pattern: '('}\n")
    assert error.where == "scorecard[2].pattern"


def test_the_checked_config_carries_each_models_and_judges_price(tmp_path: Path) -> None:
    from evalwh.providers.pricing import table_price

    text = TWO_CRITERIA.replace(
        "{id: m, provider: mock, mock: {default: hi}}",
        "{id: m, provider: openai, model: gpt-4o-mini}",
    ) + (
        "  - {name: judged, type: llm-judge, judge: j}\n"
        "judges:\n  - {id: j, model: {id: jm, provider: anthropic, model: claude-sonnet-4-5}}\n"
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    loaded = load_config(tmp_path / "eval.yaml")
    assert loaded.models[0].price is None and loaded.judges[0].model.price is None
    result = checked(tmp_path, text)
    assert result.models[0].price == table_price("openai", "gpt-4o-mini") is not None
    assert result.judges[0].model.price == table_price("anthropic", "claude-sonnet-4-5")
    assert result.judges[0].model.price is not None


# -- the estimate ----------------------------------------------------------------------------

ESTIMATE_CONFIG = """\
name: est
models:
  - id: base
    provider: mock
    params: {max_tokens: 10}
    price: {input_per_mtok: 1000000, output_per_mtok: 2000000}  # $1 and $2 a token
    mock: {default: fine}
  - {id: cand, provider: mock, mock: {default: fine}}  # no max_tokens (512), no price
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: abcdefghijklmnop}}  # 16 characters: 4 tokens
  - {id: c2, vars: {q: abcdefgh}}  # 8 characters: 2 tokens
judges:
  - id: j
    model:
      id: jm
      provider: mock
      params: {max_tokens: 7}
      price: {input_per_mtok: 3000000, output_per_mtok: 0}
      mock: {default: "5"}
scorecard:
  - {name: judged, type: llm-judge, judge: j}
pairwise:
  - {name: cmp, judge: j, baseline: {model: base}, candidate: {model: cand}}
"""


def test_the_estimate_counts_each_models_calls_tokens_and_cost_and_each_judges(
    tmp_path: Path,
) -> None:
    (tmp_path / "eval.yaml").write_text(ESTIMATE_CONFIG, encoding="utf-8")
    run = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    first = run.estimate
    # what it then sent: the four answers, and the judge's calls less those it had asked
    # already in this run (both models answer "fine", so the two answers of a case make the
    # same judge prompt, and a pair reads the same in both orders)
    assert run.stats == {
        "requests": 4 + 2 + 2, "cache_hits": 2 + 2, "retries": 0, "errors": 0,
        "commit_retries": 0,  # a file's writers take turns: nothing to retry
    }  # fmt: skip
    base = {"model": "base", "calls": 2, "cached": 0, "input_tokens": 4 + 2,
            "output_tokens": 2 * 10, "cost_usd": 6 * 1.0 + 20 * 2.0}  # fmt: skip
    cand = {"model": "cand", "calls": 2, "cached": 0, "input_tokens": 4 + 2,
            "output_tokens": 2 * 512, "cost_usd": None}  # fmt: skip
    # one judge call per answer: its prompt, the answer at max_tokens, 300 of instructions
    pointwise = (4 + 10 + 300) + (2 + 10 + 300) + (4 + 512 + 300) + (2 + 512 + 300)
    # two per pair (both orders), each reading both answers
    pairs = 2 * (4 + 10 + 512 + 300) + 2 * (2 + 10 + 512 + 300)
    judge = {"model": "jm (judge j)", "calls": 4 + 4, "cached": 0,
             "input_tokens": pointwise + pairs, "output_tokens": 8 * 7,
             "cost_usd": (pointwise + pairs) * 3.0}  # fmt: skip
    assert first["by_model"] == [base, cand, judge]
    assert {k: first[k] for k in ("cells", "cached", "calls", "datasources")} == {
        "cells": 4, "cached": 0, "calls": 12, "datasources": False,
    }  # fmt: skip
    assert first["input_tokens"] == 6 + 6 + pointwise + pairs
    assert first["output_tokens"] == 20 + 1024 + 56
    assert first["cost_usd"] == base["cost_usd"] + judge["cost_usd"]

    # the answers are cached now: no model call, no new judgement; a pair is judged again
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", cases=["c1"])
    pair = 2 * (4 + 10 + 512 + 300)
    assert again.estimate["by_model"] == [
        {"model": "base", "calls": 0, "cached": 1, "input_tokens": 0, "output_tokens": 0,
         "cost_usd": 0.0},
        {"model": "cand", "calls": 0, "cached": 1, "input_tokens": 0, "output_tokens": 0,
         "cost_usd": None},
        {"model": "jm (judge j)", "calls": 2, "cached": 0, "input_tokens": pair,
         "output_tokens": 14, "cost_usd": pair * 3.0},
    ]  # fmt: skip
    assert (again.estimate["cells"], again.estimate["cached"]) == (2, 2)
    assert (again.stats["requests"], again.stats["cache_hits"]) == (0, 6)  # all stored before

    # without the candidate's cells there is no pair to judge
    alone = evalwh.run_eval(
        tmp_path / "eval.yaml", output_dir=tmp_path / "alone", models=["base"]
    ).estimate
    assert [r["model"] for r in alone["by_model"]] == ["base", "jm (judge j)"]
    assert alone["by_model"][1]["calls"] == 2  # the two pointwise judgements alone


def test_a_cell_that_is_its_own_counterpart_is_passed_over_not_the_end_of_the_count(
    tmp_path: Path,
) -> None:
    # baseline: every cell of variant v; candidate: model base. base's own cells (listed
    # first) are their own counterparts, so only cand's cells make pairs: two, both orders
    config = ESTIMATE_CONFIG.replace(
        "  - {name: judged, type: llm-judge, judge: j}\n",
        "  - {name: ok, type: contains, value: f}\n",
    ).replace(
        "baseline: {model: base}, candidate: {model: cand}",
        "baseline: {variant: v}, candidate: {model: base}",
    )
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    estimate = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out").estimate
    pairs = 2 * (4 + 512 + 10 + 300) + 2 * (2 + 512 + 10 + 300)
    assert estimate["by_model"][-1] == {
        "model": "jm (judge j)", "calls": 4, "cached": 0, "input_tokens": pairs,
        "output_tokens": 4 * 7, "cost_usd": pairs * 3.0,
    }  # fmt: skip


def test_answers_cached_for_a_variant_with_an_output_schema_are_estimated_as_cached(
    tmp_path: Path,
) -> None:
    # the estimate looks each cell up by the hash the engine will send, the schema included
    config = """\
models:
  - {id: m, provider: mock, mock: {default: '{"ok": true}'}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
    output_schema: {schema: {type: object}}
cases:
  - {id: c1, vars: {q: one}}
  - {id: c2, vars: {q: two}}
scorecard:
  - {name: ok, type: contains, value: ok}
"""
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    assert (first.estimate["cached"], first.estimate["calls"]) == (0, 2)
    assert (again.estimate["cached"], again.estimate["calls"]) == (2, 0)
    assert again.stats["cache_hits"] == 2  # as the engine then found them


def test_input_tokens_are_whole_quarters_of_the_characters_and_a_datasource_is_flagged(
    tmp_path: Path,
) -> None:
    # 10 characters: 2 tokens (characters // 4), not 2.5; a datasource's rows are not known
    # before the run, so its estimate says it counts only what the config holds
    head = """\
models: [{id: m, provider: mock, mock: {default: x}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: ok, type: contains, value: x}]
"""
    (tmp_path / "eval.yaml").write_text(
        head + "cases: [{id: c1, vars: {q: abcdefghij}}]\n", encoding="utf-8"
    )
    plain = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out").estimate
    assert plain["by_model"][0]["input_tokens"] == 2 and plain["input_tokens"] == 2
    assert isinstance(plain["input_tokens"], int) and plain["datasources"] is False
    source = "cases: [{source: duckdb, params: {query: \"SELECT 'c2' AS id, 'hello' AS q\"}}]\n"
    (tmp_path / "eval.yaml").write_text(head + source, encoding="utf-8")
    streamed = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out").estimate
    assert streamed["datasources"] is True


# -- the response cache's reads --------------------------------------------------------------

NOW = datetime(2026, 12, 2, tzinfo=timezone.utc)


def warehouse(tmp_path: Path) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        for h, provider, model, out, i, o, lat in [
            ("h1", "mock", "small", "one", 10, 2, 5.5),
            ("h2", "mock", "small", "two", None, None, None),
            ("h3", "mock", "judge", '{"score": 1}', 30, 4, 7.0),
            ("h4", "openai", "judge", '{"score": 0}', 31, 5, 8.0),
        ]:
            con.execute(
                "INSERT INTO response_cache (request_hash, provider, model, output, input_tokens,"
                " output_tokens, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [h, provider, model, out, i, o, lat, NOW],
            )
    return Warehouse(path)


def test_the_cache_answers_exactly_the_planned_requests_with_their_counts(tmp_path: Path) -> None:
    store = warehouse(tmp_path)
    assert cache_lookup(store, ["h1", "h2", "nope"]) == {
        "h1": CachedAnswer("one", 10, 2, 5.5),
        "h2": CachedAnswer("two", None, None, None),
    }
    assert cache_lookup(store, []) == {}
    assert cache_lookup(Warehouse(tmp_path / "none.duckdb"), ["h1"]) == {}  # nothing run yet


def test_the_cache_read_waits_for_another_writer_without_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run never fails because another process is flushing into the same warehouse: it
    # waits as long as a flush of its own would (wait_s=None), not the readers' 30 s
    from evalwh.warehouse import connect

    waits: list[float | None] = []
    real = connect.read_connection

    def spy(path: Any, *, wait_s: float | None = 30.0) -> Any:
        waits.append(wait_s)
        return real(path, wait_s=wait_s)

    monkeypatch.setattr(connect, "read_connection", spy)
    assert set(cache_lookup(warehouse(tmp_path), ["h1"])) == {"h1"}
    assert waits == [None]


def test_a_cached_rerun_reads_the_cache_in_one_query_not_one_per_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the whole plan's hashes are joined with the response cache in one statement
    # (sql/cache_lookup.sql), however many cases and flushes (batch_size 20: 5 flushes here)

    (tmp_path / "eval.yaml").write_text(
        "settings: {batch_size: 20}\n"
        "models: [{id: m, provider: mock, mock: {default: x}}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases:\n"
        + "".join(f"  - {{id: c{i}, vars: {{q: '{i}'}}}}\n" for i in range(100))
        + "scorecard: [{name: ok, type: contains, value: x}]\n",
        encoding="utf-8",
    )
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    assert first.stats["requests"] == 100
    asked = queries_asked(monkeypatch)
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    assert (again.stats["cache_hits"], again.stats["requests"]) == (100, 0)
    assert asked.count("cache_lookup") == 1
    assert "cache_for_model" not in asked  # no per-model (or per-case) reads either


def test_a_judge_models_cached_replies_are_read_by_provider_and_model(tmp_path: Path) -> None:
    store = warehouse(tmp_path)
    judge = ModelSpec(id="j", provider="mock", model="judge")
    assert judge_cache(store, [judge]) == {"h3": CachedAnswer('{"score": 1}', 30, 4, 7.0)}
    other = ModelSpec(id="k", provider="openai", model="judge")
    assert set(judge_cache(store, [judge, other])) == {"h3", "h4"}
    assert judge_cache(Warehouse(tmp_path / "none.duckdb"), [judge]) == {}


def test_a_streaming_runs_cache_keeps_every_answer_found_before_it_starts() -> None:
    found = {f"h{i}": CachedAnswer(str(i), None, None, None) for i in range(5)}
    bounded = _bounded(found)
    assert isinstance(bounded, BoundedCache)
    assert bounded.limit == 5 + BoundedCache.default_limit
    assert dict(bounded) == found


def test_an_estimate_assumes_max_tokens_or_the_default_output() -> None:
    assert (
        _output_tokens(ModelSpec(id="m", provider="mock", model="m", params={"max_tokens": 64}))
        == 64
    )
    assert (
        _output_tokens(ModelSpec(id="m", provider="mock", model="m"))
        == execute.DEFAULT_OUTPUT_TOKENS
    )


# -- the engine and the writer taking turns --------------------------------------------------


class Writer:
    """RunWriter's side of the turn-taking: rows pend until a batch is due, a flush takes
    ``takes`` seconds in a thread, and two flushes must never overlap."""

    def __init__(self, batch_size: int, takes: float = 0.0) -> None:
        self.batch_size, self.takes = batch_size, takes
        self.pending: list[Any] = []
        self.batches: list[Any] = []
        self._flushing = threading.Lock()

    def due(self) -> bool:
        return len(self.pending) >= self.batch_size

    def full(self) -> bool:  # the engine's backpressure: no more rows until a flush
        return len(self.pending) >= self.batch_size

    def take_batch(self) -> list[Any]:
        batch, self.pending = self.pending, []
        return batch

    def flush(self, batch: Any) -> None:
        assert self._flushing.acquire(blocking=False), "two flushes at once"
        try:
            time.sleep(self.takes)
            self.batches.append(batch)
        finally:
            self._flushing.release()


class Engine:
    """Adds ``rows`` rows, waiting (as the workers do) while the writer is full."""

    def __init__(self, writer: Writer, rows: int | None) -> None:
        self.writer, self.rows = writer, rows
        self.cancelled = False

    async def run(self) -> str:
        row = 0
        try:
            while self.rows is None or row < self.rows:
                while self.writer.full():
                    await asyncio.sleep(0.005)
                self.writer.pending.append(row)
                row += 1
                await asyncio.sleep(0.001 if self.rows is None else 0)
        except asyncio.CancelledError:
            self.cancelled = True
            self.writer.pending.append("the cell in flight")  # finished while stopping
            raise
        return "stats"


def flushed_in_turn(batches: list[Any]) -> bool:
    """Each full batch once, in order, and no empty flush but the one after the run (the last
    batch falls due as the run ends: the run's own last flush may take it)."""
    return [b for b in batches if b] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]] and (
        [] not in batches[:-1]
    )


def test_batches_due_while_the_engine_waits_are_flushed_in_turn_and_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wakeups: list[float | None] = []  # the timeout of each wait of the driving loop
    real_wait = asyncio.wait

    async def noted(futures: Any, *, timeout: float | None = None, **kw: Any) -> Any:
        wakeups.append(timeout)
        return await real_wait(futures, timeout=timeout, **kw)

    monkeypatch.setattr(execute.asyncio, "wait", noted)
    writer = Writer(batch_size=2)
    stats = asyncio.run(asyncio.wait_for(_drive(Engine(writer, 10), writer), timeout=30))  # type: ignore[arg-type]
    assert stats == "stats"
    assert flushed_in_turn(writer.batches)
    # a due batch waits for the next 10 ms wake-up, not for a second
    assert wakeups and set(wakeups) == {0.01}
    slower = Writer(batch_size=2, takes=0.01)  # the engine waits while a flush runs
    asyncio.run(asyncio.wait_for(_drive(Engine(slower, 10), slower), timeout=30))  # type: ignore[arg-type]
    assert flushed_in_turn(slower.batches)


def test_a_cancelled_run_is_cancelled_waited_for_and_flushed_to_its_last_row() -> None:
    writer = Writer(batch_size=10_000)  # no batch falls due: every row is in the last flush
    engine = Engine(writer, rows=None)

    async def cancel_midway() -> None:
        driving = asyncio.ensure_future(_drive(engine, writer))  # type: ignore[arg-type]
        while len(writer.pending) < 5:
            await asyncio.sleep(0.001)
        driving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driving

    asyncio.run(asyncio.wait_for(cancel_midway(), timeout=30))
    assert engine.cancelled
    assert len(writer.batches) == 1
    last = writer.batches[0]
    assert last[-1] == "the cell in flight" and last[:-1] == list(range(len(last) - 1))


# -- what a run stores about itself ----------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def runs_row(warehouse: Path) -> dict[str, Any]:
    return only_row(
        warehouse,
        "SELECT * EXCLUDE (started_at, finished_at, heartbeat_at), "
        "started_at <= heartbeat_at AND heartbeat_at <= finished_at AS in_order, "
        "CAST(config_snapshot AS VARCHAR) AS config_snapshot, "
        "CAST(filters AS VARCHAR) AS filters, CAST(totals AS VARCHAR) AS totals FROM runs",
    )


@needs_git
def test_a_runs_row_holds_what_it_ran_where_and_how_it_went(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "eval.yaml")
    git(tmp_path, "commit", "-q", "-m", "the eval")
    head = git(tmp_path, "rev-parse", "HEAD")
    result = evalwh.run_eval(
        tmp_path / "eval.yaml", output_dir=tmp_path / "out", label="first", cases=["c*"],
        repeat=2,
    )  # fmt: skip
    row = runs_row(tmp_path / "out" / "warehouse.duckdb")
    config = load_config(tmp_path / "eval.yaml")
    assert {k: row[k] for k in ("run_id", "label", "suite", "status", "git_commit")} == {
        "run_id": result.run_id, "label": "first", "suite": "rows", "status": "completed",
        "git_commit": head,
    }  # fmt: skip
    assert (row["config_path"], row["config_hash"], row["dataset_hash"]) == (
        str(tmp_path / "eval.yaml"), config.config_hash, config.dataset_hash,
    )  # fmt: skip
    assert json.loads(row["config_snapshot"]) == config.raw
    assert json.loads(row["filters"]) == {"cases": ["c*"], "repeat": 2}
    assert row["n_planned"] == 4  # two cases, two repeats
    assert json.loads(row["totals"]) == {
        "requests": 4, "cache_hits": 0, "retries": 0, "errors": 0, "judge_requests": 0,
        "commit_retries": 0,
        "rows": 4,
    }  # fmt: skip
    assert (row["pid"], row["evalwh_version"], row["no_look"]) == (os.getpid(), __version__, False)
    assert row["host"] and row["in_order"] is True
    assert (row["lease_token"], row["datasources"]) == (None, None)  # released; no datasource


@needs_git
def test_the_commit_is_heads_of_the_configs_folder_and_none_without_one(
    tmp_path: Path,
) -> None:
    repo, empty, plain = tmp_path / "repo", tmp_path / "empty", tmp_path / "plain"
    for folder in (repo, empty, plain):
        folder.mkdir()
    (repo / "f").write_text("x", encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "one")
    git(empty, "init", "-q")  # `git rev-parse HEAD` prints "HEAD" there, and fails
    assert os.getcwd() != str(repo)  # the folder asked about, not the working one
    assert git_commit(repo) == git(repo, "rev-parse", "HEAD")
    assert git_commit(repo / ".git" / "..") == git(repo, "rev-parse", "HEAD")
    assert git_commit(empty) is None
    assert git_commit(plain) is None


def test_a_git_that_hangs_costs_a_run_five_seconds_not_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a credential prompt or a dead network mount: the run goes on without a commit
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\necho 0123abcd\n", encoding="utf-8")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    # stopped at its time bound: the fake git, waited for, would print a commit after 30 s
    assert git_commit(tmp_path) is None


def test_without_git_a_run_records_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert git_commit(tmp_path) is None


def test_an_attachment_edited_after_planning_refuses_the_run(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    planned = b"the bytes the run planned with"
    photo.write_bytes(b"the bytes someone saved since")
    prepared = SimpleNamespace(
        files={hashlib.sha256(planned).hexdigest(): [photo]},
        config=SimpleNamespace(no_look=False, path=tmp_path / "eval.yaml"),
        settings=SimpleNamespace(local_dir=tmp_path / ".evalwh"),
    )
    with pytest.raises(ConfigError) as refused:
        store_files(prepared)  # type: ignore[arg-type]
    error = refused.value
    assert (error.file, error.fix) == (
        str(tmp_path / "eval.yaml"),
        "run again to use the new content",
    )
    assert str(photo) in error.message and "changed" in error.message


def test_progress_counts_the_cells_against_the_runs_total(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    seen: list[tuple[int, int]] = []
    evalwh.run_eval(
        tmp_path / "eval.yaml", output_dir=tmp_path / "out",
        progress=lambda done, total, result: seen.append((done, total)),
    )  # fmt: skip
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


def test_a_no_look_run_keeps_no_answer_in_the_response_cache(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(
        ROWS_CONFIG.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n"),
        encoding="utf-8",
    )
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    stored = only_row(
        tmp_path / "out" / "warehouse.duckdb", "SELECT count(*) AS n FROM response_cache"
    )
    assert stored == {"n": 0}
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    stored = only_row(
        tmp_path / "out" / "warehouse.duckdb", "SELECT count(*) AS n FROM response_cache"
    )
    assert stored == {"n": 3}  # a run that may look keeps its answers


def test_the_engine_waits_once_a_whole_batch_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the backpressure execute hands the engine: full at exactly max_pending unwritten cases
    # (RunWriter.max_pending), not one case later
    from evalwh.engine import execute as execute_module
    from evalwh.warehouse import writer as writer_module

    seen: dict[str, Any] = {}

    class Writer(writer_module.RunWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen["writer"] = self

    class Engine(execute_module.Engine):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen["full"] = kwargs["backpressure"]

    monkeypatch.setattr(writer_module, "RunWriter", Writer)
    monkeypatch.setattr(execute_module, "Engine", Engine)
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    writer, full = seen["writer"], seen["full"]
    writer.add_case((None,) * len(writer_module.CASE_COLUMNS))  # one unwritten case
    writer.max_pending = 2
    assert (writer.pending, full()) == (1, False)
    writer.max_pending = 1
    assert full() is True


def test_a_run_of_its_own_cases_stopped_at_its_cost_cap_keeps_its_planned_size(
    tmp_path: Path,
) -> None:
    # n_planned is the plan's cell count; only a datasource run's (known at its end) is the
    # count its feed queued, which for a stopped run is a handful, not the plan
    cases = "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}}}\n" for i in range(30))
    config = (
        ROWS_CONFIG.replace(
            "mock: {default: hi}",
            "params: {max_tokens: 5}, price: {input_per_mtok: 1000, output_per_mtok: 1000}, "
            "mock: {default: " + "hi " * 100 + "}",  # the estimate counts 5 tokens out, not 100
        )
        .split("cases:\n")[0]
        .replace("name: rows\n", "name: rows\nsettings: {concurrency: 1, max_cost_usd: 0.5}\n")
        + "cases:\n"
        + cases
        + "scorecard:\n  - {name: has, type: contains, value: hi}\n"
    )
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(
        tmp_path / "out" / "warehouse.duckdb",
        "SELECT status, n_planned, (SELECT count(*) FROM cases) AS answered FROM runs",
    )
    assert result.status == "stopped" and row["status"] == "stopped"
    assert row["n_planned"] == 30 and 0 < row["answered"] < 30


def test_a_run_stopped_at_its_cost_cap_judges_no_pairs(tmp_path: Path) -> None:
    # the pairwise judge runs after the matrix, and only after a whole one: a run the cap
    # stopped compares nothing (its answered cells are not the matrix the pairs were meant for)
    priced = (
        "params: {max_tokens: 5}, price: {input_per_mtok: 1000, output_per_mtok: 1000}, "
        "mock: {latency_ms: 5, default: " + "hi " * 100 + "}"  # both models take turns
    )
    cases = "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}}}\n" for i in range(30))
    config = f"""\
name: pairs
settings: {{concurrency: 1, max_cost_usd: 0.5}}
models:
  - {{id: a, provider: mock, {priced}}}
  - {{id: b, provider: mock, {priced}}}
variants:
  - {{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}
judges:
  - id: j
    model: {{id: j, provider: mock, mock: {{default: '{{"winner": "A"}}'}}}}
pairwise:
  - {{name: ab, judge: j, baseline: {{model: a}}, candidate: {{model: b}}}}
scorecard:
  - {{name: has, type: contains, value: hi}}
cases:
{cases}"""
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(
        tmp_path / "out" / "warehouse.duckdb",
        "SELECT (SELECT count(*) FROM pairs) AS pairs, "
        "(SELECT count(*) FROM (SELECT case_id FROM cases GROUP BY case_id "
        "HAVING count(DISTINCT model) = 2)) AS both_answered, "
        "CAST(totals->>'judge_requests' AS INTEGER) AS judge_requests FROM runs",
    )
    assert result.status == "stopped"
    assert row["both_answered"] > 0  # there was something a judge could have compared
    assert (row["pairs"], row["judge_requests"]) == (0, 0)


def test_the_run_writer_takes_the_runs_settings_lease_and_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import writer as writer_module

    seen: list[Any] = []

    class Writer(writer_module.RunWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self)

    monkeypatch.setattr(writer_module, "RunWriter", Writer)
    settings = "settings: {batch_size: 7, stale_after_s: 40, cache_dir: answers}\n"
    (tmp_path / "eval.yaml").write_text(
        ROWS_CONFIG.replace("name: rows\n", "name: rows\n" + settings), encoding="utf-8"
    )
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", no_cache=True)
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", retry_errors=first.run_id)
    written, fresh, retried = seen
    assert retried.replace is True  # a retry's new rows replace the stored errors
    cache = (tmp_path / "answers" / "cache.duckdb").resolve()
    assert (written.batch_size, written.heartbeat_s, written.cache_path) == (7, 10.0, cache)
    assert (written.refresh_cache, fresh.refresh_cache) == (False, True)  # --no-cache: rewrite
    assert written.replace is False and (written.run_id, fresh.run_id) == (
        first.run_id,
        again.run_id,
    )
    # each run's writer holds the run's own lease, which every flush checks is still its own
    assert isinstance(written.token, str) and isinstance(fresh.token, str)
    assert written.token != fresh.token


def test_a_keyboard_interrupt_inside_the_run_is_stored_and_reported_as_sigint(
    tmp_path: Path,
) -> None:
    # a KeyboardInterrupt no handler turned into a stop (here raised by the progress callback,
    # as Ctrl-C in an embedding program would be) ends the run as interrupted by SIGINT
    interrupted = interrupt_run(tmp_path)
    assert interrupted.signal_name == "SIGINT"
    assert_continue_hint(
        interrupted, f"`evalwh run {tmp_path / 'eval.yaml'} --resume {interrupted.run_id}`"
    )
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT run_id, status FROM runs")
    assert row == {"run_id": interrupted.run_id, "status": "interrupted"}


def test_an_interrupted_datasource_run_says_to_start_again_not_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bug: the hint said `--resume RUN`, which then refused the run (a datasource run has no
    # resume); what the hint says instead holds: --resume is refused, `evalwh show` says the
    # same, and starting again asks the model again for every datasource case (no cache hit)
    from evalwh.engine.signals import RunInterrupted
    from tests.inprocess import evalwh_inprocess

    query = "SELECT 'c' || i AS id, 'q' || i AS q FROM range(3) t(i)"
    config = tmp_path / "eval.yaml"
    config.write_text(
        ROWS_CONFIG.split("cases:")[0]
        + f'cases: [{{source: duckdb, params: {{query: "{query}"}}}}]\n'
        "scorecard:\n  - {name: has, type: contains, value: hi}\n",
        encoding="utf-8",
    )

    def ctrl_c(done: int, total: int, result: Any) -> None:
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with pytest.raises(RunInterrupted) as info:
        evalwh.run_eval(config, output_dir=out, progress=ctrl_c)
    interrupted = info.value
    hint = (
        f"a datasource run cannot be resumed: start it again with `evalwh run {config}` (every "
        "datasource case is asked again: the response cache does not hold them), or export the "
        "source to a file and run that, which can be resumed"
    )
    assert re.fullmatch(
        rf"interrupted \(SIGINT\): run {re.escape(interrupted.run_id)} stopped after flushing "
        rf"\d answered row\(s\); {re.escape(hint)}",
        str(interrupted),
    ), str(interrupted)
    assert "--resume" not in str(interrupted)
    with pytest.raises(UsageError, match=r"--resume refused: run .* reads cases from a datasource"):
        evalwh.run_eval(config, output_dir=out, resume=interrupted.run_id)
    code, shown, _ = evalwh_inprocess(capsys, "show", interrupted.run_id, "--json", "-o", str(out))
    assert (
        code == 0 and json.loads(shown)["next"] == f"interrupted: the stored rows are kept; {hint}"
    )
    again = evalwh.run_eval(config, output_dir=out)
    assert again.status == "completed"
    assert (again.stats["requests"], again.stats["cache_hits"]) == (3, 0)


def assert_continue_hint(interrupted: Any, hint: str) -> None:
    """``interrupted``'s message: stopped by SIGINT after flushing its rows, then ``hint``."""
    assert re.fullmatch(
        rf"interrupted \(SIGINT\): run {re.escape(interrupted.run_id)} stopped after flushing "
        rf"\d answered row\(s\); continue it with {re.escape(hint)}",
        str(interrupted),
    ), str(interrupted)


def interrupt_run(tmp_path: Path, **options: Any) -> Any:
    """Run ROWS_CONFIG with a progress callback that raises KeyboardInterrupt at the first answer;
    the RunInterrupted the run raised."""
    from evalwh.engine.signals import RunInterrupted

    def ctrl_c(done: int, total: int, result: Any) -> None:
        raise KeyboardInterrupt

    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    with pytest.raises(RunInterrupted) as info:
        evalwh.run_eval(
            tmp_path / "eval.yaml", output_dir=tmp_path / "out", progress=ctrl_c, **options
        )
    return info.value


def test_a_run_that_fails_before_its_engine_exists_reports_that_error_and_is_stored_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the judges' cached answers are read before the engine is built: a failure there is the
    # run's error (not one of the bookkeeping after it), and the run is stored as failed
    from evalwh.engine import execute as execute_module

    def unreadable(*args: Any) -> Any:
        raise OSError("the cache file is unreadable")

    monkeypatch.setattr(execute_module, "judge_cache", unreadable)
    judged = ROWS_CONFIG.replace(
        "scorecard:\n",
        "judges:\n  - {id: j, model: {id: jm, provider: mock, mock: {default: '5'}}}\n"
        "scorecard:\n  - {name: judged, type: llm-judge, judge: j}\n",
    )
    (tmp_path / "eval.yaml").write_text(judged, encoding="utf-8")
    with pytest.raises(OSError, match="the cache file is unreadable"):
        evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT status, totals FROM runs")
    assert row["status"] == "failed"
    assert json.loads(row["totals"])["requests"] == 0


def test_a_run_taken_over_mid_run_leaves_the_new_holders_row_alone(tmp_path: Path) -> None:
    # another process took the run over (`--resume RUN --force`) while this one was running:
    # this one's next flush stops it, and its last word (the run's end) is written only under
    # its own lease, so the new holder's status and lease stay as that process set them

    from evalwh.warehouse.writer import LeaseLostError

    db = tmp_path / "out" / "warehouse.duckdb"

    def take_over(done: int, total: int, result: Any) -> None:
        if done == 1:
            with duckdb.connect(str(db)) as con:
                con.execute(
                    "UPDATE runs SET status = 'running', host = 'ci-runner-7', pid = 6257, "
                    "lease_token = 'theirs'"
                )

    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    with pytest.raises(LeaseLostError, match="taken over by another process"):
        evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", progress=take_over)
    row = only_row(
        db, "SELECT status, host, pid, lease_token, finished_at IS NULL AS open, totals FROM runs"
    )
    assert row == {
        "status": "running", "host": "ci-runner-7", "pid": 6257, "lease_token": "theirs",
        "open": True, "totals": None,
    }  # fmt: skip


def test_an_interrupted_shard_says_to_rerun_its_shard_and_leaves_the_runs_status_alone(
    tmp_path: Path,
) -> None:
    # the other shards may still be writing the run: the hint is the shard's own command (not
    # `--resume`, which would claim the whole run), and its status is not this shard's to set
    interrupted = interrupt_run(tmp_path, shard=(1, 1), run_id="nightly")
    assert_continue_hint(interrupted, "the same `evalwh run ... --shard K/N --run-id RUN` command")
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT run_id, status FROM runs")
    assert row == {"run_id": "nightly", "status": "running"}


def test_the_engine_waits_for_the_writer_once_a_batch_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays bounded by one batch waiting plus the one being written: while a slow
    flush runs, the engine stops answering once `batch_size` cases are pending (a million-case
    run peaked at 364 MB when four batches could wait, 282 MB with one)."""
    from evalwh.warehouse import writer as w

    monkeypatch.setenv(w.FLUSH_PAUSE_ENV, "0.05")  # every flush holds the file 50 ms
    seen: list[int] = []
    real = w.RunWriter.add_case

    def add_case(self: w.RunWriter, row: object) -> None:
        real(self, row)  # type: ignore[arg-type]
        seen.append(self.pending)

    monkeypatch.setattr(w.RunWriter, "add_case", add_case)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        "models: [{id: m, provider: mock}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases: [" + ", ".join(f"{{id: c{i}, vars: {{q: x{i}}}}}" for i in range(300)) + "]\n"
        "scorecard: [{name: has, type: contains, value: x}]\n"
        "settings: {cache: false, batch_size: 10, concurrency: 4}\n",
        encoding="utf-8",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n"] == 300
    # a worker checks after storing its answer, so the others' answers in flight may land too
    assert max(seen) <= 10 + 4, max(seen)
    assert max(seen) >= 10  # the engine did race ahead of the slow writer up to the bound


def test_a_runs_end_is_recorded_with_everything_the_engine_knows() -> None:
    calls: list[tuple[Any, ...]] = []
    store = SimpleNamespace(finish_run=lambda *a, **k: calls.append((a, k)))
    _finish(store, "r-1", "completed", "tok", {"n": 1}, [{"name": "src"}], 5)
    assert calls == [
        (
            ("r-1", "completed", {"n": 1}),
            {"token": "tok", "datasources": [{"name": "src"}], "n_planned": 5},
        )
    ]


def test_a_failed_runs_end_that_cannot_be_recorded_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError("No space left on device")

    store = SimpleNamespace(finish_run=full_disk)
    with caplog.at_level(logging.WARNING, logger="evalwh.engine"):
        _finish(store, "r-1", "failed", None, {})
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("evalwh.engine", "WARNING", "could not mark run r-1 failed: No space left on device")
    ]
    with pytest.raises(OSError, match="No space"):
        _finish(store, "r-1", "completed", None, {})


@pytest.mark.parametrize(
    ("env", "uvloop_expected"),
    [
        ({}, True),
        ({"EVALWH_EVENT_LOOP": "asyncio"}, False),
        ({"EVALWH_HTTP_TRANSPORT": "httpx"}, False),  # uvloop measured slower with httpcore
    ],
)
def test_runs_use_uvloop_only_with_the_fast_http_path(
    env: dict[str, str], uvloop_expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvloop")
    if sys.version_info < (3, 11):
        pytest.skip("uvloop is used on Python 3.11+ (asyncio.Runner's loop_factory)")
    from evalwh.engine.execute import run_loop

    for name in ("EVALWH_EVENT_LOOP", "EVALWH_HTTP_TRANSPORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run_loop(which()).startswith("uvloop") is uvloop_expected


def test_mode_native_refuses_a_provider_that_cannot(tmp_path: Path) -> None:
    model = "{id: m, provider: openai-compatible, model: local, price: 0, base_url: 'http://127.0.0.1:9'}"
    cfg = place_config(
        tmp_path, model, PLACE_OUTPUT.replace("name: place", "name: place\n      mode: native")
    )
    with pytest.raises(ConfigError, match="cannot be asked for JSON by schema natively") as exc:
        evalwh.validate(cfg)
    assert exc.value.where == "variants[0].output_schema.mode"


def test_key_shaped_string_in_config_is_refused(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "A" * 40
    block = f"  - {{id: m, provider: mock, mock: {{default: '{key}'}}}}"
    cfg = eval_for(tmp_path, block, 1)
    result = run_cli("run", str(cfg), cwd=tmp_path)
    assert result.returncode == 2 and "looks like an API key" in result.stderr
    assert key not in result.stderr + result.stdout


def test_the_estimate_counts_each_embedding_an_answer_and_a_reference_need(
    tmp_path: Path,
) -> None:
    """One call per answer not cached (at its max_tokens) and one per distinct reference
    (characters / 4), priced at the embedding model's price."""
    config = """\
models:
  - {id: m, provider: mock, params: {max_tokens: 10}}
  - {id: embed, provider: mock, price: {input_per_mtok: 2.0, output_per_mtok: 0}}
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: one}, expected: "Paris, France."}
  - {id: c2, vars: {q: two}, expected: "Paris, France."}
  - {id: c3, vars: {q: three}, expected: [Madrid, Spain]}
scorecard:
  - {name: meaning, type: semantic, embedder: {model: embed}}
"""
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    run = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    tokens = 3 * 10 + len("Paris, France.") // 4 + 1 + 1  # Madrid 6 // 4, Spain 5 // 4
    assert run.estimate["by_model"][-1] == {
        "model": "embed (embedder of meaning)", "calls": 3 + 3, "cached": 0,
        "input_tokens": tokens, "output_tokens": 0, "cost_usd": tokens * 2.0 / 1e6,
    }  # fmt: skip
    assert [r["model"] for r in run.estimate["by_model"]] == ["m", "embed (embedder of meaning)"]


REPLAY_CONFIG = (
    "models:\n"
    "  - {id: a, provider: mock}\n"
    "  - id: b\n"
    "    provider: mock\n"
    "    mock: {rules: [{rate: 0.5, reply: 'no idea'}], default: '{{ expected }}!'}\n"
    "variants:\n"
    '  - {id: v, messages: [{role: user, content: "{{ q }}"}]}\n'
    "  - id: w\n"
    '    messages: [{role: system, content: "Be brief"}, {role: user, content: "Q: {{ q }}"}]\n'
    "cases:\n"
    + "".join(
        f"  - {{id: c{i}, vars: {{q: 'what is {i}?'}}, expected: '{2 * i}', "
        f"metadata: {{topic: t{i % 3}}}}}\n"
        for i in range(12)
    )
    + "scorecard:\n"
    "  - {name: exact, type: exact}\n"
    "  - {name: mentions, type: contains, required: false}\n"
    "  - {name: digits, type: regex, pattern: '^\\d+$', required: false}\n"
)
# what a cached rerun stores differently from the run that asked: its own run, time and
# whether it asked (cached, attempts, queued_ms); run_key is read from run_id
RUN_OWN = {"run_id", "run_key", "created_at", "cached", "attempts", "queued_ms"}


def queries_asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the name of every sql/ query run through ``queries.run_query``."""
    from evalwh.warehouse import queries

    asked: list[str] = []
    real = queries.run_query

    def counted(con: Any, name: str, **params: Any) -> Any:
        asked.append(name)
        return real(con, name, **params)

    monkeypatch.setattr(queries, "run_query", counted)
    return asked


def cells_through_workers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the case id of every cell that goes through a worker (Engine._cell)."""
    from evalwh.engine import runner

    worked: list[str] = []
    cell = runner.Engine._cell

    async def through_a_worker(self: Any, *args: Any) -> Any:
        worked.append(args[2].id)
        return await cell(self, *args)

    monkeypatch.setattr(runner.Engine, "_cell", through_a_worker)
    return worked


def _stored(db: Path, run_id: str, table: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        names = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "ORDER BY ordinal_position",
                [table],
            ).fetchall()
            if r[0] not in RUN_OWN
        ]
        keys = "variant, model, case_id, repeat" + (", criterion" if table == "scores" else "")
        return con.execute(
            f"SELECT {', '.join(names)} FROM {table} WHERE run_id = ? ORDER BY {keys}", [run_id]
        ).fetchall()


def test_a_cached_rerun_stores_the_rows_the_run_that_asked_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the replay path (the plan's hashes reused, no request hashed in the engine) changes no
    # stored value: every cases and scores column but the run's own is the same
    from evalwh.engine import runner

    (tmp_path / "eval.yaml").write_text(REPLAY_CONFIG, encoding="utf-8")
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", repeat=2)
    assert first.stats["requests"] == 96
    hashed: list[str] = []
    real = runner.request_hash

    def counted(*args: Any, **kwargs: Any) -> str:
        hashed.append(real(*args, **kwargs))
        return hashed[-1]

    monkeypatch.setattr(runner, "request_hash", counted)
    worked = cells_through_workers(monkeypatch)
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", repeat=2)
    assert (again.stats["cache_hits"], again.stats["requests"]) == (96, 0)
    assert hashed == []  # every key came from the plan
    assert worked == []  # every hit was replayed in bulk, none through a worker
    totals = ("requests", "cache_hits", "errors", "retries")
    assert {k: again.stats[k] for k in totals} == {k: 0 for k in totals} | {"cache_hits": 96}
    db = tmp_path / "out" / "warehouse.duckdb"
    for table in ("cases", "scores"):
        before = _stored(db, first.run_id, table)
        assert len(before) == (96 if table == "cases" else 288)
        assert _stored(db, again.run_id, table) == before
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "SELECT count(*) FILTER (WHERE cached), count(*) FILTER (WHERE output = 'no idea') "
            "FROM cases WHERE run_id = ?",
            [again.run_id],
        ).fetchone() == (96, pytest.approx(24, abs=20))


def test_a_rerun_with_new_cases_replays_the_hits_and_asks_only_the_new_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the bulk replay takes the cached cells; the workers run the others, each cell once
    # (a replayed cell is never asked again, a new one never skipped)

    (tmp_path / "eval.yaml").write_text(REPLAY_CONFIG, encoding="utf-8")
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    more = "".join(
        f"  - {{id: n{i}, vars: {{q: 'new {i}?'}}, expected: '{i}'}}\n" for i in range(3)
    )
    text = REPLAY_CONFIG.replace("scorecard:\n", more + "scorecard:\n")
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    worked = cells_through_workers(monkeypatch)
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    assert first.stats["requests"] == 48
    assert (again.stats["cache_hits"], again.stats["requests"]) == (48, 12)
    assert sorted(worked) == sorted(f"n{i}" for i in range(3) for _ in range(4))
    db = tmp_path / "out" / "warehouse.duckdb"
    stored = _stored(db, again.run_id, "cases")
    assert len(stored) == len({r[:4] for r in stored}) == 60  # each cell once
    old = [r for r in stored if not r[2].startswith("n")]
    assert old == _stored(db, first.run_id, "cases")


def test_a_replayed_answer_is_redacted_with_the_secrets_known_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attack: a cached answer quoting a value that has since become a secret (an API key set
    # in the environment) is stored in the rerun's rows in clear. It is redacted as a live
    # answer is: the bulk replay hands its cells to the same rows.
    leaked = "plain-words-now-a-secret"
    monkeypatch.delenv("REPLAY_TEST_API_KEY", raising=False)
    (tmp_path / "eval.yaml").write_text(
        f"models: [{{id: m, provider: mock, mock: {{default: 'the key is {leaked}'}}}}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases: [{id: c1, vars: {q: a}}, {id: c2, vars: {q: b}}]\n"
        "scorecard: [{name: ok, type: contains, value: key}]\n"
        "privacy: {redact_outputs: false}\n",
        encoding="utf-8",
    )
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    text = (tmp_path / "eval.yaml").read_text(encoding="utf-8")
    (tmp_path / "eval.yaml").write_text(text.replace("privacy: {redact_outputs: false}\n", ""))
    monkeypatch.setenv("REPLAY_TEST_API_KEY", leaked)
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    assert again.stats["cache_hits"] == 2
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = dict(con.execute("SELECT run_id, list(output) FROM cases GROUP BY 1").fetchall())
    assert rows[first.run_id] == [f"the key is {leaked}"] * 2
    assert rows[again.run_id] == ["the key is ***"] * 2


def test_the_engine_hashes_a_request_as_the_plan_did(tmp_path: Path) -> None:
    # the keys the engine takes from the plan are the ones it would compute itself
    from evalwh.config.settings import resolve_settings
    from evalwh.engine.execute import prepare
    from evalwh.engine.plan import Filters
    from evalwh.engine.runner import Ask, Endpoint
    from evalwh.providers import create

    (tmp_path / "eval.yaml").write_text(REPLAY_CONFIG, encoding="utf-8")
    config = load_config(tmp_path / "eval.yaml")
    prepared = prepare(config, resolve_settings({}, None, None), Filters(), 2)
    endpoints = {m.id: Endpoint.for_model(m, create(m)) for m in prepared.plan.models}
    cases = {c.id: c for c in prepared.plan.cases}
    variants = {v.variant.id: v for v in prepared.plan.variants}
    assert len(prepared.hashes) == 96
    for (variant, model, case, repeat), key in zip(prepared.cells, prepared.hashes, strict=True):
        compiled = variants[variant]
        asked = Ask(
            endpoints[model],
            compiled.render(cases[case]),
            cases[case],
            variant,
            repeat,
            compiled.variant.output,
        )
        assert asked.key() == key
