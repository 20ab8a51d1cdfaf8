"""The run's command-line overrides (evalwh/engine/overrides.py): ``--fake`` answers every model
with the deterministic mock under the same ids and never mixes its answers into a real run;
``--model`` takes comma lists and repeats, and ``provider/model`` adds an ad-hoc model to the
matrix (refused when its price or provider is unknown)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

import evalwh
from evalwh.config.loader import load_config
from evalwh.config.model import Price
from evalwh.engine.overrides import adhoc_models, fake_models, fake_spec, split_models
from evalwh.errors import ConfigError
from tests.builders import eval_for
from tests.conftest import run_cli, write
from tests.fakes.servers import FakeLLMServer

PAID = (
    "  - {id: big, provider: anthropic, model: claude-sonnet-4-5, params: {max_tokens: 100}}\n"
    "  - {id: small, provider: openai, model: gpt-4o-mini, params: {max_tokens: 100}}"
)


def cases_of(db: Path) -> list[tuple[str, str, str | None]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT model, output, error FROM cases ORDER BY model, case_id"
        ).fetchall()
    finally:
        con.close()


def test_fake_answers_every_model_with_the_mock_under_the_same_ids(tmp_path: Path) -> None:
    cfg = eval_for(tmp_path, PAID, 3)
    # no key, no network: the paid providers are never created
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out", fake=True)
    assert result.status == "completed" and result.totals["n_errors"] == 0
    rows = cases_of(tmp_path / "out" / "warehouse.duckdb")
    assert {r[0] for r in rows} == {"big", "small"}
    assert [r[1] for r in rows if r[0] == "big"] == ["question 0", "question 1", "question 2"]
    # the stored snapshot says the run was faked, so it is not mistaken for a real one
    snap = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").run(result.run_id)
    stored = json.loads(snap["config_snapshot"])
    assert stored["fake"] is True and stored["models"][0]["faked_provider"] == "anthropic"
    # the prices stay those of the real models, so the estimate still means something
    by_model = {r["model"]: r for r in result.estimate["by_model"]}
    assert by_model["big"]["cost_usd"] > by_model["small"]["cost_usd"] > 0


def test_without_fake_the_same_config_needs_its_keys(tmp_path: Path) -> None:
    cfg = eval_for(tmp_path, PAID, 1)
    env = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    done = run_cli("run", str(cfg), cwd=tmp_path, env=env)
    # refused before the run (exit 2, nothing written), not a run of auth errors (exit 3)
    assert done.returncode == 2, done.stderr
    assert "big (anthropic) needs ANTHROPIC_API_KEY" in done.stderr
    assert "small (openai) needs OPENAI_API_KEY" in done.stderr
    assert not (tmp_path / ".evalwh").exists()
    fake = run_cli("run", str(cfg), "--fake", cwd=tmp_path, env=env)
    assert fake.returncode == 0, fake.stderr
    assert "errors 0/2" in fake.stdout


def test_fake_answers_are_never_served_to_a_real_run(tmp_path: Path) -> None:
    """The bug it names: a cached mock answer returned later as the real model's answer."""
    with FakeLLMServer() as server:
        block = (
            f"  - {{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
        )
        cfg = eval_for(tmp_path, block, 2)
        evalwh.run_eval(cfg, output_dir=tmp_path / "out", fake=True)
        assert server.count == 0
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("OPENAI_API_KEY", "k-test-0000")
            real = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
        assert server.count == 2 and real.stats["cache_hits"] == 0


def test_split_models_takes_commas_and_repeats() -> None:
    assert split_models(["a,b", " c ", "a", ",", ""]) == ["a", "b", "c"]


def test_model_comma_list_selects_like_repeats(quickstart: Path, tmp_path: Path) -> None:
    both = evalwh.validate(quickstart, models=["mock-large,mock-small"])
    one = evalwh.validate(quickstart, models=["mock-small"])
    assert both.models == ["mock-large", "mock-small"] and one.models == ["mock-small"]
    done = run_cli("validate", str(quickstart), "--model", "mock-large,mock-small", "--json")
    assert json.loads(done.stdout)["models"] == ["mock-large", "mock-small"]
    done = run_cli("validate", str(quickstart), "--models", "mock-small", "--json")
    assert json.loads(done.stdout)["models"] == ["mock-small"]  # --models: the same option


def test_adhoc_provider_model_joins_the_matrix(quickstart: Path) -> None:
    plan = evalwh.validate(quickstart, models=["anthropic/claude-sonnet-4-5"], fake=True)
    assert plan.models == ["mock-large", "mock-small", "anthropic/claude-sonnet-4-5"]
    # beside a filter, the filter picks among the config's models
    plan = evalwh.validate(
        quickstart, models=["mock-small", "anthropic/claude-sonnet-4-5"], fake=True
    )
    assert plan.models == ["mock-small", "anthropic/claude-sonnet-4-5"]
    # the shipped price of the added model is used
    row = next(r for r in plan.estimate["by_model"] if r["model"].startswith("anthropic/"))
    assert row["cost_usd"] and row["cost_usd"] > 0


def test_adhoc_model_of_unknown_price_or_provider_is_refused(quickstart: Path) -> None:
    with pytest.raises(ConfigError, match="no known price") as exc:
        evalwh.validate(quickstart, models=["anthropic/claude-nope-1"])
    assert "--model anthropic/claude-nope-1" in str(exc.value)
    # an unknown provider before the slash is not an ad-hoc model: it filters, and matches none
    with pytest.raises(Exception, match="nope/x"):
        evalwh.validate(quickstart, models=["nope/x"])
    # nor is the command provider: a program to run needs its own entry in eval.yaml
    with pytest.raises(Exception, match="command/ls"):
        evalwh.validate(quickstart, models=["command/ls"])


def test_adhoc_model_names_may_hold_slashes_and_a_config_id_is_a_filter(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: openai/gpt-4o-mini, provider: mock}\n  - {id: m2, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: hi}]}\n"
        "cases:\n  - {id: c1}\nscorecard:\n  - {name: ok, type: json-valid}\n",
    )
    config = evalwh.load_config(cfg)
    # a hosted model's name often holds a slash (org/model): the provider is before the first
    added, filters = adhoc_models(
        config, ["openai-compatible/meta-llama/Llama-3.1-8B", "openai/gpt-4o-mini", "openai/*"]
    )
    assert [(m.id, m.provider, m.model, m.where, m.root) for m in added] == [
        (
            "openai-compatible/meta-llama/Llama-3.1-8B",
            "openai-compatible",
            "meta-llama/Llama-3.1-8B",
            "--model openai-compatible/meta-llama/Llama-3.1-8B",
            config.root,
        )
    ]
    # provider/model values that name (or match) a model of the config select it
    assert filters == ["openai/gpt-4o-mini", "openai/*"]


FAKE_CONFIG = """\
models:
  - id: big
    provider: anthropic
    model: claude-sonnet-4-5
    price: {input_per_mtok: 1.0, output_per_mtok: 2.0}
    timeout_s: 45
    max_retries: 6
    params: {max_tokens: 100}
  - {id: small, provider: openai, model: gpt-4o-mini, params: {max_tokens: 100}}
variants:
  - id: v
    messages:
      - {role: user, content: "{{ q }}"}
cases:
  - {id: c1, vars: {q: "what is 2+2"}, expected: "4"}
judges:
  - id: j
    rubric: The answer is the number four.
    scale: {min: 1, max: 5}
    messages:
      - {role: user, content: "Grade {{ output }} against {{ rubric }}"}
    model:
      id: j
      provider: anthropic
      model: claude-sonnet-4-5
      timeout_s: 90
      max_retries: 4
scorecard:
  - {name: judged, type: llm-judge, judge: j}
"""


def test_fake_keeps_each_judge_as_written_but_answered_by_the_mock(tmp_path: Path) -> None:
    """`--fake` answers a judge with the mock, and keeps the judge's rubric, custom prompt,
    scale and place in eval.yaml (its prompt errors still name judges[0])."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    (real,) = config.judges
    (faked,) = fake_models(config).judges
    assert faked.model.provider == "mock" and faked.model.options == {"faked_provider": "anthropic"}
    assert faked.rubric == "The answer is the number four."
    assert faked.messages == real.messages and faked.messages is not None
    assert faked.scale == (1.0, 5.0)
    assert faked.where == real.where == "judges[0]"
    assert faked == replace(real, model=fake_spec(real.model))


def test_fake_run_stores_a_snapshot_saying_each_model_was_mocked(tmp_path: Path) -> None:
    """The stored config snapshot of a `--fake` run: every model's provider is ``mock`` and
    ``faked_provider`` names the provider it stands for, so the run is never mistaken for a
    real one."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    raw = fake_models(config).raw
    assert raw["fake"] is True
    assert [(m["id"], m["provider"], m["faked_provider"]) for m in raw["models"]] == [
        ("big", "mock", "anthropic"),
        ("small", "mock", "openai"),
    ]
    assert "fake" not in config.raw and config.raw["models"][0]["provider"] == "anthropic"
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", fake=True)
    snap = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").run(result.run_id)
    stored = json.loads(snap["config_snapshot"])
    assert {m["id"]: m["provider"] for m in stored["models"]} == {"big": "mock", "small": "mock"}


def test_a_faked_model_keeps_its_own_price_and_gets_a_short_timeout_and_no_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--fake`: a model's own ``price:`` beats the shipped table (the estimate is that of
    the real run); the shipped price fills in when none is given; the mock answers at once,
    so a faked model (or judge) gets a 10 s timeout and no retries whatever eval.yaml says."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    big, small = fake_models(config).models
    assert big.price == Price(1.0, 2.0)  # the table says 3.0 / 15.0 for claude-sonnet-4-5
    assert small.price == Price(
        0.15, 0.6, 0.075
    )  # the table's price of gpt-4o-mini (cached input 0.075)
    for spec in (big, small, fake_models(config).judges[0].model):
        assert (spec.timeout_s, spec.max_retries) == (10.0, 0)
    assert (config.models[0].timeout_s, config.models[0].max_retries) == (45.0, 6)
    # the estimate of the fake dry run prices `big` by its own price, not the table's
    plan = evalwh.validate(tmp_path / "eval.yaml", fake=True)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):  # the real one checks its keys
        monkeypatch.setenv(name, "test-key-never-sent")
    real = evalwh.validate(tmp_path / "eval.yaml")
    cost = {r["model"]: r["cost_usd"] for r in plan.estimate["by_model"]}
    assert cost == {r["model"]: r["cost_usd"] for r in real.estimate["by_model"]}
