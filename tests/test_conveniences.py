"""The everyday conveniences of issue 20: --fake, --model lists and ad-hoc models, the
default spending cap for paid providers, `evalwh prices`, `evalwh last`, run references."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import evalwh
from evalwh import api
from evalwh.engine.budget import DEFAULT_PAID_CAP_USD, run_cap
from evalwh.engine.overrides import adhoc_models, split_models
from evalwh.errors import ConfigError, CostRefusedError
from tests.conftest import run_cli, write
from tests.fakes.servers import FakeLLMServer
from tests.test_providers_e2e import eval_for

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


# -- --fake ------------------------------------------------------------------------------------


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
    assert done.returncode == 3 and "ANTHROPIC_API_KEY is not set" in done.stdout
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


# -- --model lists and ad-hoc models -----------------------------------------------------------


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


# -- the default spending cap --------------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "setting", "paid", "expected"),
    [
        (0.5, 3.0, True, (0.5, "--max-cost")),
        (None, 3.0, True, (3.0, "settings.max_cost_usd")),
        (None, None, True, (DEFAULT_PAID_CAP_USD, "default")),
        (None, None, False, (None, "none")),
        (0.0, None, True, (0.0, "--max-cost")),
    ],
)
def test_run_cap_order(
    explicit: float | None,
    setting: float | None,
    paid: bool,
    expected: tuple[float | None, str],
) -> None:
    assert run_cap(explicit, setting, paid=paid) == expected


def test_paid_run_over_the_default_cap_exits_4_naming_the_flag(tmp_path: Path) -> None:
    # gpt-4o at $10/M output x 1000 max tokens x 201 calls ~ $2.01 > $2.00
    block = "  - {id: m, provider: openai, model: gpt-4o, params: {max_tokens: 1000}}"
    cfg = eval_for(tmp_path, block, 201)
    with pytest.raises(CostRefusedError, match=r"default cap \$2\.00") as exc:
        evalwh.validate(cfg)
    assert "--max-cost" in str(exc.value)
    done = run_cli("run", str(cfg), cwd=tmp_path, env={"OPENAI_API_KEY": "k"})
    assert done.returncode == 4 and "--max-cost" in done.stderr
    # with the cap raised, or the models faked (the mock is free), the estimate passes
    assert evalwh.validate(cfg, max_cost=5).requests == 201
    assert evalwh.validate(cfg, fake=True).requests == 201
    under = eval_for(tmp_path / "under", block, 199)
    assert evalwh.validate(under).requests == 199


@pytest.mark.parametrize(
    ("provider", "paid"),
    [
        ("anthropic", True),
        ("openai", True),
        ("openai-compatible", True),
        ("google", True),
        ("mock", False),
        ("command", False),
    ],
)
def test_the_default_cap_covers_the_documented_paid_providers(provider: str, paid: bool) -> None:
    """docs/providers.md names the providers the $2.00 default applies to: every HTTP one."""
    from evalwh.config.model import ModelSpec
    from evalwh.engine.budget import uses_paid_provider

    assert uses_paid_provider([ModelSpec(id="m", provider=provider, model="x")]) is paid


def test_default_cap_boundary_is_inclusive() -> None:
    from types import SimpleNamespace

    from evalwh.api.run import _check_cost

    _check_cost(SimpleNamespace(cost_usd=2.0, calls=1), DEFAULT_PAID_CAP_USD, "default")
    with pytest.raises(CostRefusedError, match="default cap"):
        _check_cost(SimpleNamespace(cost_usd=2.0001, calls=1), DEFAULT_PAID_CAP_USD, "default")
    with pytest.raises(CostRefusedError, match=r"\(settings\.max_cost_usd\)"):
        _check_cost(SimpleNamespace(cost_usd=1.0, calls=1), 0.5, "settings.max_cost_usd")


# -- evalwh prices, evalwh last ----------------------------------------------------------------


def test_prices_show_the_dated_table_and_a_configs_prices(quickstart: Path) -> None:
    table = api.prices()
    assert table["as_of"] == "2025-08-15" and "anthropic.com/pricing" in table["source"]
    sonnet = next(r for r in table["table"] if r["model"] == "claude-sonnet-4-5")
    assert (sonnet["input_per_mtok"], sonnet["output_per_mtok"]) == (3.0, 15.0)
    mine = api.prices(quickstart)["for"]
    assert [(m["id"], m["source"], m["input_per_mtok"]) for m in mine["models"]] == [
        ("mock-large", "config", 3.0),
        ("mock-small", "config", 0.25),
    ]
    assert mine["estimate"]["calls"] == 48 and mine["estimate"]["cost_usd"] > 0
    done = run_cli("prices", "--for", str(quickstart))
    assert done.returncode == 0 and "prices as of 2025-08-15" in done.stdout
    assert "estimate: 48 call(s)" in done.stdout and "mock-small" in done.stdout


def test_prices_for_a_config_over_its_cap_still_shows_the_estimate(tmp_path: Path) -> None:
    block = "  - {id: m, provider: openai, model: gpt-4o, params: {max_tokens: 1000}}"
    cfg = eval_for(tmp_path, block, 300)  # ~ $3, over the default cap: a run would refuse
    mine = api.prices(cfg)["for"]
    assert mine["models"][0]["source"] == "table" and mine["estimate"]["cost_usd"] > 2.0


def test_last_is_show_latest(quickstart: Path, tmp_path: Path) -> None:
    out = ("-o", str(tmp_path / "out"))
    assert run_cli("run", str(quickstart), "-q", "--label", "first", *out).returncode == 0
    last = run_cli("last", "--json", *out)
    latest = run_cli("show", "latest", "--json", *out)
    assert last.returncode == 0 and json.loads(last.stdout) == json.loads(latest.stdout)
    assert json.loads(last.stdout)["run"]["label"] == "first"
    failures = run_cli("last", "--failures", *out)
    assert "mock-small" in failures.stdout and "math-4" in failures.stdout


# -- run references: previous, latest~N, git:REF ----------------------------------------------


def git(folder: Path, *args: str) -> str:
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": __import__("os").environ["PATH"],
        "HOME": str(folder),
    }
    done = subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_previous_and_latest_tilde_n_stay_in_the_newest_runs_suite(
    quickstart: Path, tmp_path: Path
) -> None:
    from evalwh.errors import RunNotFoundError

    out = tmp_path / "out"
    ids = [evalwh.run_eval(quickstart, output_dir=out, label=f"r{i}").run_id for i in range(3)]
    view = evalwh.open_warehouse(out / "warehouse.duckdb")
    assert view.resolve("latest~0") == view.resolve("latest") == ids[2]
    assert view.resolve("previous") == view.resolve("latest~1") == ids[1]
    assert view.resolve("latest~2") == ids[0]
    with pytest.raises(RunNotFoundError, match="latest~3"):
        view.resolve("latest~3")
    # another suite's run becomes the newest: references follow its suite
    other = quickstart.parent / "other.yaml"
    other.write_text(quickstart.read_text().replace("name: quickstart", "name: other"))
    evalwh.run_eval(other, output_dir=out)
    with pytest.raises(RunNotFoundError, match="previous"):
        view.resolve("previous")
    done = run_cli("compare", "latest~1", "latest~0", "-o", str(out))
    assert done.returncode == 2 and "no run 'latest~1'" in done.stderr
    # a reference that names nothing lists the forms a reference may take
    with pytest.raises(RunNotFoundError, match="'previous', 'latest~N', 'git:REF'"):
        view.resolve("nope")


def test_git_ref_finds_the_run_of_that_commit_or_its_nearest_ancestor(
    quickstart: Path, tmp_path: Path
) -> None:
    from evalwh.errors import RunNotFoundError, UsageError

    repo = quickstart.parent
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "out"
    run_one = evalwh.run_eval(quickstart, output_dir=out).run_id
    git(repo, "tag", "v1")
    (repo / "notes.txt").write_text("two\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")  # no run at this commit
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "notes.txt").write_text("three\n")
    git(repo, "commit", "-q", "-am", "three")
    run_three = evalwh.run_eval(quickstart, output_dir=out).run_id
    view = evalwh.open_warehouse(config=quickstart, output_dir=out)
    assert view.resolve("git:v1") == run_one
    assert view.resolve(f"git:{first[:10]}") == run_one
    assert view.resolve("git:main") == run_one  # main's head has no run: its parent has
    assert view.resolve("git:feature") == run_three
    with pytest.raises(RunNotFoundError, match="cannot resolve"):
        view.resolve("git:no-such-branch")
    # the attack: a ref that is an option of git is refused before git runs
    with pytest.raises(UsageError, match="not a git ref"):
        view.resolve("git:--output=/tmp/pwned")
    assert not Path("/tmp/pwned").exists()
    # usable as --baseline of a run
    done = run_cli("gate", "latest", "--baseline", "git:v1", "-c", str(quickstart), "-o", str(out))
    assert done.returncode in (0, 1) and "error" not in done.stderr.lower()


# -- --cache-dir -------------------------------------------------------------------------------


def test_cache_dir_keeps_the_response_cache_apart_from_the_warehouse(
    quickstart: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "ci-cache"
    first = run_cli(
        "run", str(quickstart), "-q", "-o", str(tmp_path / "a"), "--cache-dir", str(shared)
    )
    assert first.returncode == 0, first.stderr
    assert (shared / "cache.duckdb").is_file()
    con = duckdb.connect(str(tmp_path / "a" / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM response_cache").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (48,)
    finally:
        con.close()
    # another job, another warehouse, the same cache folder (the environment variable): all hits
    second = run_cli(
        "run", str(quickstart), "--json", "-o", str(tmp_path / "b"),
        env={"EVALWH_CACHE_DIR": str(shared)},
    )  # fmt: skip
    stats = json.loads(second.stdout)["stats"]
    assert stats["cache_hits"] == 46 and stats["requests"] == 2  # math-4 errors are not cached
    info = run_cli("cache", "info", "--json", "--cache-dir", str(shared), "-o", str(tmp_path / "b"))
    assert json.loads(info.stdout)["warehouse"] == str(shared / "cache.duckdb")
    assert json.loads(info.stdout)["entries"] == 46
    # without it, the second warehouse's own cache is empty: nothing was cached there
    own = run_cli("cache", "info", "--json", "-o", str(tmp_path / "b"))
    assert json.loads(own.stdout)["entries"] == 0


def test_cache_clear_deletes_one_models_older_or_all_entries(
    quickstart: Path, tmp_path: Path
) -> None:
    """`evalwh cache clear`: by provider model name, by age, then everything; the count it
    reports is what left the cache, and stored runs stay."""
    shared = tmp_path / "cc"
    where = ("--cache-dir", str(shared), "-o", str(tmp_path / "out"))
    assert run_cli("run", str(quickstart), "-q", *where).returncode == 0

    def entries() -> dict[str, int]:
        info = json.loads(run_cli("cache", "info", "--json", *where).stdout)
        by_model = {r["model"]: r["entries"] for r in info["by_model"]}
        assert sum(by_model.values()) == info["entries"]
        return by_model

    assert entries() == {"mock-large": 24, "mock-small": 22}

    def clear(*args: str) -> int:
        done = run_cli("--json", "cache", "clear", *args, *where)
        assert done.returncode == 0, done.stderr
        return int(json.loads(done.stdout)["removed"])

    assert clear("--model", "mock-small") == 22
    assert entries() == {"mock-large": 24}
    assert clear("--model", "no-such-model") == 0
    assert clear("--older-than", "1") == 0  # every entry is minutes old
    assert entries() == {"mock-large": 24}
    said = run_cli("cache", "clear", "--older-than", "0", *where)
    assert said.stdout == "removed 24 cached answer(s)\n"
    assert entries() == {}
    assert clear() == 0
    runs = json.loads(run_cli("list", "--json", "-o", str(tmp_path / "out")).stdout)["runs"]
    assert len(runs) == 1  # the run history is untouched
    # no cache warehouse yet: nothing to clear, and none is created
    fresh = ("--cache-dir", str(tmp_path / "none"), "-o", str(tmp_path / "out2"))
    assert json.loads(run_cli("--json", "cache", "clear", *fresh).stdout) == {"removed": 0}
    assert not (tmp_path / "none" / "cache.duckdb").exists()


def test_cache_dir_setting_resolves_against_the_config_folder(quickstart: Path) -> None:
    from evalwh.config.settings import resolve_settings

    s = resolve_settings({}, {"cache_dir": "cache"}, quickstart.parent)
    assert s.cache_path == quickstart.parent / "cache" / "cache.duckdb"
    assert resolve_settings({}, {}, quickstart.parent).cache_path == s.warehouse


# -- config: defaults:, $EVALWH_SECRETS, a folder of case files --------------------------------

BASE = """\
name: s
models:
  - {id: a, provider: mock, params: {max_tokens: 64}}
  - {id: b, provider: mock, timeout_s: 5, params: {temperature: 0.7}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
scorecard:
  - {name: echo, type: contains}
"""


def test_suite_defaults_apply_to_every_model_and_a_models_own_value_wins(tmp_path: Path) -> None:
    from tests.conftest import write

    cfg = write(
        tmp_path / "eval.yaml",
        BASE
        + "defaults: {params: {temperature: 0, max_tokens: 256}, timeout_s: 20, max_retries: 1}\n"
        + "cases:\n  - {id: c1, vars: {q: hi}, expected: hi}\n",
    )
    loaded = evalwh.load_config(cfg)
    a, b = loaded.models
    assert a.params == {"temperature": 0, "max_tokens": 64}  # merged key by key
    assert b.params == {"temperature": 0.7, "max_tokens": 256}
    assert (a.timeout_s, b.timeout_s, a.max_retries, b.max_retries) == (20.0, 5.0, 1, 1)
    # without defaults, nothing changes
    plain = write(tmp_path / "plain.yaml", BASE + "cases:\n  - {id: c1, vars: {q: hi}}\n")
    a, b = evalwh.load_config(plain).models
    assert a.params == {"max_tokens": 64} and a.timeout_s == 60.0
    # an unknown key under defaults is an error naming it
    bad = write(tmp_path / "bad.yaml", BASE + "defaults: {temprature: 0}\ncases:\n  - {id: c1}\n")
    with pytest.raises(ConfigError, match="temprature"):
        evalwh.load_config(bad)


def test_evalwh_secrets_names_a_secrets_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.config import secrets

    named = tmp_path / "ci.secrets.yaml"
    named.write_text("MY_SERVICE_KEY: from-named-file-0001\n")
    (tmp_path / ".evalwh.secrets.yaml").write_text("MY_SERVICE_KEY: from-project-file-01\n")
    env = {"EVALWH_SECRETS": str(named)}
    assert secrets.get_secret("MY_SERVICE_KEY", env=env, cwd=tmp_path) == "from-named-file-0001"
    assert secrets.get_secret("MY_SERVICE_KEY", env={}, cwd=tmp_path) == "from-project-file-01"
    # the environment still wins over any file
    env_wins = {**env, "MY_SERVICE_KEY": "from-env-000000001"}
    assert secrets.get_secret("MY_SERVICE_KEY", env=env_wins, cwd=tmp_path) == "from-env-000000001"
    # a name that is not a file is an error before a run, naming the variable
    with pytest.raises(ConfigError, match="EVALWH_SECRETS names"):
        secrets.check_secret_files(env={"EVALWH_SECRETS": str(tmp_path / "nope.yaml")})
    # the variable holds a path, not a secret: it is not redacted from messages
    monkeypatch.setenv("EVALWH_SECRETS", str(named))
    assert str(named) in secrets.redact(f"reading {named}")


def test_a_folder_of_case_files_is_one_source(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.conftest import write

    shards = tmp_path / "shards"
    write(shards / "a.jsonl", '{"id": "j1", "q": "one", "expected": "one"}\n')
    write(shards / "b.csv", "id,q,expected\nc1,two,two\nc2,three,three\n")
    pq.write_table(
        pa.table({"id": ["p1"], "q": ["four"], "expected": ["four"]}), shards / "c.parquet"
    )
    write(shards / "notes.txt", "not a case file")
    cfg = write(tmp_path / "eval.yaml", BASE + "cases:\n  - {file: shards}\n")
    assert [c.id for c in evalwh.load_config(cfg).cases] == ["j1", "c1", "c2", "p1"]
    only_csv = write(tmp_path / "csv.yaml", BASE + "cases:\n  - {file: shards, format: csv}\n")
    assert [c.id for c in evalwh.load_config(only_csv).cases] == ["c1", "c2"]
    limited = write(tmp_path / "lim.yaml", BASE + "cases:\n  - {file: shards, limit: 2}\n")
    assert [c.id for c in evalwh.load_config(limited).cases] == ["j1", "c1"]
    empty = tmp_path / "empty"
    empty.mkdir()
    none = write(tmp_path / "none.yaml", BASE + "cases:\n  - {file: empty}\n")
    with pytest.raises(ConfigError, match="holds no case files"):
        evalwh.load_config(none)


def test_a_case_folder_may_not_link_outside_itself(tmp_path: Path) -> None:
    """The attack: a shard folder with a symlink to a file elsewhere (a key store, say)."""
    from tests.conftest import write

    outside = write(tmp_path / "private" / "keys.csv", "id,q\nk1,secret\n")
    shards = tmp_path / "shards"
    write(shards / "a.csv", "id,q\nc1,x\n")
    (shards / "b.csv").symlink_to(outside)
    cfg = write(tmp_path / "eval.yaml", BASE + "cases:\n  - {file: shards}\n")
    with pytest.raises(ConfigError, match="outside"):
        evalwh.load_config(cfg)


def test_a_folder_source_directly_format_limit_order_and_errors(tmp_path: Path) -> None:
    """datasets.load_file_source on a folder: only case files (of ``format`` when given), in
    name order, ``limit`` over the whole folder, and each refusal with its place and fix."""
    import os
    from typing import Any

    from evalwh.config.datasets import load_file_source
    from evalwh.errors import ConfigError
    from tests.conftest import write

    shards = tmp_path / "shards"
    shards.mkdir()
    write(shards / "b.jsonl", '{"id": "b1"}\n{"id": "b2"}\n')
    write(shards / "a.CSV", "id\na1\na2\n")
    write(shards / "c.ndjson", '{"id": "c1"}\n')
    write(shards / "notes.txt", "not cases\n")
    (shards / "sub.jsonl").mkdir()  # a folder with a case file's name is no case file

    def ids(**spec: Any) -> list[str]:
        cases = load_file_source({"file": "shards", **spec}, tmp_path, "cases[0]", "e.yaml")
        return [c.id for c in cases]

    assert ids() == ["a1", "a2", "b1", "b2", "c1"]
    assert ids(format="jsonl") == ["b1", "b2", "c1"]
    assert ids(limit=3) == ["a1", "a2", "b1"]
    assert ids(limit=2) == ["a1", "a2"]  # the next file is not read
    assert ids(format="jsonl", limit=1) == ["b1"]

    def refusal(**spec: Any) -> tuple[str, str | None, str | None, str | None]:
        with pytest.raises(ConfigError) as info:
            load_file_source({"file": "shards", **spec}, tmp_path, "cases[0]", "e.yaml")
        return info.value.message, info.value.file, info.value.where, info.value.fix

    folder = shards.resolve()
    fix = "point file: at a folder of .csv, .jsonl or .parquet files, or at one file"
    assert refusal(format="parquet") == (
        f"the folder {folder} holds no case files (parquet)",
        "e.yaml",
        "cases[0].file",
        fix,
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as info:
        load_file_source({"file": "empty"}, tmp_path, "cases[0]", "e.yaml")
    assert info.value.message == (
        f"the folder {empty.resolve()} holds no case files (.csv, .jsonl, .ndjson, .parquet, .pq)"
    )
    outside = write(tmp_path / "outside.jsonl", '{"id": "x"}\n')
    os.symlink(outside, shards / "d.jsonl")
    assert refusal() == (
        f"d.jsonl in the case folder resolves to {outside.resolve()}, outside {folder}",
        "e.yaml",
        "cases[0].file",
        "copy the file into the folder instead of linking it",
    )
