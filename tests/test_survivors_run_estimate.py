"""The estimate a run prints before it calls anything (evalwh.engine.execute.estimate): calls,
tokens and cost per model and per judge, worked out by hand below for a config with a priced
model, an unpriced one, an llm-judge criterion and a pairwise comparison; then the same config
again, its answers cached, and with the pairwise candidate filtered out.

Written from mutants that survived the mutation run (docs/testing.md). The rule (input =
rendered characters / 4, output = max_tokens or 512, a judge's 300 tokens of instructions) is
in docs/running.md.
"""

from __future__ import annotations

from pathlib import Path

import evalwh

CONFIG = """\
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
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    run = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    first = run.estimate
    # what it then sent: the four answers, and the judge's calls less those it had asked
    # already in this run (both models answer "fine", so the two answers of a case make the
    # same judge prompt, and a pair reads the same in both orders)
    assert run.stats == {"requests": 4 + 2 + 2, "cache_hits": 2 + 2, "retries": 0, "errors": 0}
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
    config = CONFIG.replace(
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
