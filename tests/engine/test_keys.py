"""API keys checked before a run (evalwh/engine/keys.py): every model and judge the run will
call has its key set somewhere, else one error (exit code 2) names each of them, the variable
to set and its place in eval.yaml; the mock, the command provider, ``--fake``, a keyless
``openai-compatible`` server, a key in a secrets file and a model answered from the cache pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import evalwh
from evalwh.errors import ConfigError, MissingKeysError
from tests.builders import stored
from tests.conftest import write
from tests.fakes.servers import FakeLLMServer

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GW_KEY")

REST = """\
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: one}, expected: one}
  - {id: c2, vars: {q: two}, expected: two}
scorecard:
  - {name: exact, type: exact}
"""

CLAUDE = "  - {id: claude, provider: anthropic, model: claude-sonnet-4-5}\n"
GEMINI = "  - {id: gem, provider: google, model: gemini-2.5-flash}\n"
MOCK = "  - {id: m, provider: mock}\n"


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def config(tmp_path: Path, models: str, extra: str = "") -> Path:
    return write(tmp_path / "eval.yaml", f"name: keys\nmodels:\n{models}{REST}{extra}")


def refused(path: Path, **kwargs: object) -> MissingKeysError:
    with pytest.raises(MissingKeysError) as info:
        evalwh.validate(path, **kwargs)  # type: ignore[arg-type]
    return info.value


def test_a_missing_key_is_refused_before_the_run_naming_the_variable_and_its_place(
    tmp_path: Path,
) -> None:
    path = config(tmp_path, MOCK + CLAUDE)
    error = refused(path)
    assert isinstance(error, ConfigError) and error.exit_code == 2
    assert error.missing == [
        {
            "model": "claude",
            "provider": "anthropic",
            "names": ["ANTHROPIC_API_KEY"],
            "where": "models[1]",
            "line": 4,
            "column": 5,
        }
    ]
    text = str(error)
    assert "1 model of this run needs an API key that is not set; nothing was called" in text
    assert f"{path}:4:5 models[1]: claude (anthropic) needs ANTHROPIC_API_KEY" in text
    assert "`export ANTHROPIC_API_KEY=...`" in text and ".evalwh.secrets.yaml" in text
    assert "$EVALWH_SECRETS" in text and "--fake" in text
    # the run refuses the same way, before anything is written
    with pytest.raises(MissingKeysError):
        evalwh.run_eval(path, output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_every_model_without_its_key_is_listed_in_one_error(tmp_path: Path) -> None:
    error = refused(config(tmp_path, CLAUDE + MOCK + GEMINI))
    assert [(m["model"], m["names"], m["where"]) for m in error.missing] == [
        ("claude", ["ANTHROPIC_API_KEY"], "models[0]"),
        ("gem", ["GEMINI_API_KEY", "GOOGLE_API_KEY"], "models[2]"),
    ]
    assert "2 models of this run need an API key" in str(error)
    assert "gem (google) needs GEMINI_API_KEY or GOOGLE_API_KEY" in str(error)
    assert "set each one in the environment" in str(error)
    # the models a --model filter leaves out are not asked for
    only = refused(config(tmp_path, CLAUDE + MOCK + GEMINI), models=["gem"])
    assert [m["model"] for m in only.missing] == ["gem"]


def test_a_judges_model_needs_its_key_too(tmp_path: Path) -> None:
    judged = (
        "  - {name: judged, type: llm-judge, judge: j}\n"
        "judges:\n"
        "  - id: j\n"
        "    rubric: It answers.\n"
        "    model: {id: grader, provider: openai, model: gpt-4o-mini}\n"
    )
    error = refused(config(tmp_path, MOCK, judged))
    assert [(m["model"], m["names"], m["where"]) for m in error.missing] == [
        ("grader", ["OPENAI_API_KEY"], "judges[0].model")
    ]
    assert error.missing[0]["line"] == 15  # the judge's `model:` entry


def test_a_pairwise_judge_needs_its_key_and_an_unused_judge_none(tmp_path: Path) -> None:
    judges = (
        "judges:\n"
        "  - id: j\n"
        "    rubric: Better.\n"
        "    model: {id: grader, provider: anthropic, model: claude-sonnet-4-5}\n"
        "  - id: idle\n"
        "    rubric: Unused.\n"
        "    model: {id: idle, provider: openai, model: gpt-4o-mini}\n"
    )
    models = MOCK + "  - {id: n, provider: mock}\n"
    pairwise = "pairwise:\n  - {name: cmp, judge: j, baseline: {model: m}, candidate: {model: n}}\n"
    error = refused(config(tmp_path, models, judges + pairwise))
    assert [(m["model"], m["where"]) for m in error.missing] == [("grader", "judges[0].model")]
    # without the comparison no judge is called, so no key is needed
    assert evalwh.validate(config(tmp_path, models, judges)).requests == 4


def test_fake_mock_command_and_a_keyless_local_server_need_no_key(tmp_path: Path) -> None:
    plan = evalwh.validate(config(tmp_path, CLAUDE + GEMINI), fake=True)
    assert plan.models == ["claude", "gem"]
    command = "  - {id: cmd, provider: command, command: [echo, hi]}\n"
    local = (
        "  - {id: local, provider: openai-compatible, model: llama, "
        "base_url: 'http://127.0.0.1:9/v1', price: 0}\n"
    )
    plan = evalwh.validate(config(tmp_path, MOCK + command + local))
    assert plan.models == ["m", "cmd", "local"]


def test_a_key_the_config_names_or_a_header_uses_is_checked_at_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = (
        "  - id: gw\n"
        "    provider: openai-compatible\n"
        "    model: llama\n"
        "    base_url: http://127.0.0.1:9/v1\n"
        "    price: 0\n"
        "    api_key_env: GW_KEY\n"
        "    headers: {X-Team: evals, X-Proxy-Key: '${PROXY_KEY}'}\n"
    )
    error = refused(config(tmp_path, models))
    assert [(m["names"], m["where"], m["line"]) for m in error.missing] == [
        (["GW_KEY"], "models[0].api_key_env", 8),
        (["PROXY_KEY"], "models[0].headers.X-Proxy-Key", 9),
    ]
    monkeypatch.setenv("GW_KEY", "gw-key-for-tests")
    monkeypatch.setenv("PROXY_KEY", "proxy-key-for-tests")
    assert evalwh.validate(tmp_path / "eval.yaml").models == ["gw"]


def test_a_key_from_a_secrets_file_or_the_second_google_name_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = config(tmp_path, CLAUDE + GEMINI)
    write(Path.cwd() / ".evalwh.secrets.yaml", "ANTHROPIC_API_KEY: sk-from-the-project-file\n")
    assert [m["model"] for m in refused(path).missing] == ["gem"]
    # the file $EVALWH_SECRETS names counts too, and Google's second name is enough
    write(tmp_path / "ci.yaml", "GOOGLE_API_KEY: from-the-named-file\n")
    monkeypatch.setenv("EVALWH_SECRETS", str(tmp_path / "ci.yaml"))
    assert evalwh.validate(path).models == ["claude", "gem"]


def test_a_model_answered_from_the_cache_needs_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer() as server:
        models = (
            f"  - {{id: claude, provider: anthropic, model: claude-sonnet-4-5, "
            f"base_url: '{server.url}'}}\n"
        )
        path = config(tmp_path, models)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key-for-the-fake-server")
        first = evalwh.run_eval(path, output_dir=tmp_path / "out")
        assert first.totals["n_errors"] == 0 and server.count == 2
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        again = evalwh.run_eval(path, output_dir=tmp_path / "out")
        assert again.status == "completed" and again.stats["cache_hits"] == 2
        assert server.count == 2
        # ... unless the cache is not read, or a cell is new
        with pytest.raises(MissingKeysError):
            evalwh.run_eval(path, output_dir=tmp_path / "out", no_cache=True)


def test_an_adhoc_model_is_named_by_its_flag(tmp_path: Path) -> None:
    error = refused(config(tmp_path, MOCK), models=["openai/gpt-4o-mini"])
    assert error.missing[0]["where"] == "--model openai/gpt-4o-mini"
    assert error.missing[0]["line"] is None
    assert "  --model openai/gpt-4o-mini: openai/gpt-4o-mini (openai) needs OPENAI_API_KEY" in (
        str(error)
    )


def test_an_embedding_model_needs_its_key_and_none_under_fake(tmp_path: Path) -> None:
    embedded = "  - {name: meaning, type: semantic, embedder: {model: embed}}\n"
    models = MOCK + "  - {id: embed, provider: openai, model: text-embedding-3-small}\n"
    path = config(tmp_path, models, "")
    path.write_text(path.read_text() + embedded)
    error = refused(path)
    assert [(m["model"], m["names"], m["where"]) for m in error.missing] == [
        ("embed", ["OPENAI_API_KEY"], "models[1]")
    ]
    # --fake embeds on the mock: no key, no network, the letters' counts as vectors
    result = evalwh.run_eval(path, output_dir=tmp_path / "out", fake=True)
    assert result.totals["n_errors"] == 0
    rows = stored(tmp_path / "out", "SELECT score, error FROM scores WHERE criterion = 'meaning'")
    assert len(rows) == 2 and all(r["error"] is None and r["score"] > 0 for r in rows)
