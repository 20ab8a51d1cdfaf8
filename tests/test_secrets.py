from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config import secrets
from evalwh.config.secrets import find_key_shaped, get_secret, known_secret_values, redact
from evalwh.errors import ConfigError

ANTHROPIC_KEY = "sk-ant-api03-" + "a1B2c3D4e5" * 4
OPENAI_KEY = "sk-proj-" + "Z9y8X7w6V5" * 4


@pytest.fixture(autouse=True)
def secrets_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and user config dir, an empty cwd and no remembered secrets."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(tmp_path / "userconf"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(secrets, "_loaded", set())
    for name in ("EVALWH_TEST_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_user_secrets(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "userconf"
    folder.mkdir(exist_ok=True)
    path = folder / "secrets.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_everywhere_is_none() -> None:
    assert get_secret("EVALWH_TEST_KEY") is None


def test_environment_beats_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work" / ".evalwh.secrets.yaml").write_text("EVALWH_TEST_KEY: from-project-file\n")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\n")
    monkeypatch.setenv("EVALWH_TEST_KEY", "from-the-environment")
    assert get_secret("EVALWH_TEST_KEY") == "from-the-environment"


def test_project_file_beats_user_file(tmp_path: Path) -> None:
    (tmp_path / "work" / ".evalwh.secrets.yaml").write_text("EVALWH_TEST_KEY: from-project-file\n")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\nOTHER: other-user-value\n")
    assert get_secret("EVALWH_TEST_KEY") == "from-project-file"
    assert get_secret("OTHER") == "other-user-value"  # falls through to the user file


def test_user_file_and_explicit_env_and_cwd(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / ".evalwh.secrets.yaml").write_text("EVALWH_TEST_KEY: elsewhere-value\n")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\n")
    assert get_secret("EVALWH_TEST_KEY") == "from-user-file"
    assert get_secret("EVALWH_TEST_KEY", cwd=other) == "elsewhere-value"
    env = {"EVALWH_TEST_KEY": "explicit-env-value", "EVALWH_CONFIG_DIR": str(tmp_path / "none")}
    assert get_secret("EVALWH_TEST_KEY", env=env) == "explicit-env-value"
    assert get_secret("EVALWH_TEST_KEY", env={"EVALWH_CONFIG_DIR": str(tmp_path / "none")}) is None


def test_empty_env_value_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALWH_TEST_KEY", "")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\n")
    assert get_secret("EVALWH_TEST_KEY") == "from-user-file"


def test_bad_secrets_file_is_a_config_error(tmp_path: Path) -> None:
    path = write_user_secrets(tmp_path, "- just\n- a list\n")
    with pytest.raises(ConfigError) as info:
        get_secret("EVALWH_TEST_KEY")
    assert info.value.file == str(path)
    assert info.value.message == "a secrets file must be a mapping of NAME: value"
    assert info.value.fix == "write one line per secret, like `ANTHROPIC_API_KEY: sk-ant-...`"


def test_known_values_include_loaded_and_secret_named_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: user-file-secret-value\nSHORT: abc\n")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "token-value-123456")
    monkeypatch.setenv("MY_SECRET", "short")  # under 8 characters: ignored
    monkeypatch.setenv("HARMLESS", "not-a-secret-value")
    get_secret("EVALWH_TEST_KEY")
    known = known_secret_values()
    assert "user-file-secret-value" in known
    assert "token-value-123456" in known
    assert "short" not in known and "abc" not in known
    assert "not-a-secret-value" not in known


def test_redact_known_values_and_key_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "acme-custom-key-value")
    text = (
        f"bad key acme-custom-key-value; x-api-key={ANTHROPIC_KEY}; Bearer {OPENAI_KEY}; "
        "AKIAABCDEFGHIJKLMNOP and AIza" + "c" * 35
    )
    out = redact(text)
    assert "acme-custom-key-value" not in out
    assert ANTHROPIC_KEY not in out and "sk-ant" not in out
    assert OPENAI_KEY not in out
    assert "AKIA" not in out and "AIza" not in out
    assert out.count("***") == 5
    assert redact("nothing secret here: task-abcdefghijklmnopqrstuvwxyz") == (
        "nothing secret here: task-abcdefghijklmnopqrstuvwxyz"
    )
    assert redact("value", extra=["some-extra-secret"]) == "value"
    assert redact("x some-extra-secret y", extra=["some-extra-secret"]) == "x *** y"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (ANTHROPIC_KEY, "anthropic"),
        (OPENAI_KEY, "openai"),
        ("sk-" + "A1b2C3d4E5" * 4 + "T3BlbkFJ", "openai"),
        ("AIza" + "Sy" + "x" * 33, "google"),
        ("AKIAIOSFODNN7EXAMPLE", "aws"),
        ("ghp_" + "a" * 36, "github"),
        ("github_pat_" + "11ABCDEFG" + "x" * 40, "github"),
        ("hf_" + "AbCdEfGhIj" * 3 + "kl", "huggingface"),
        ("xoxb-123456789012-abcdefghij", "slack"),
    ],
)
def test_key_patterns(value: str, name: str) -> None:
    assert find_key_shaped({"k": value}) == [("k", name)]


@pytest.mark.parametrize(
    "value",
    [
        "sk-short",
        "task-abcdefghijklmnopqrstuvwxyz0123",
        "hello world",
        "https://api.openai.com/v1",
        "ghp_short",
    ],
)
def test_not_keys(value: str) -> None:
    assert find_key_shaped({"k": value}) == []


def test_find_key_shaped_paths() -> None:
    config = {
        "name": "demo",
        "models": [
            {"id": "a", "provider": "openai"},
            {"id": "b", "headers": {"Authorization": f"Bearer {OPENAI_KEY}", "X-Other": "fine"}},
        ],
        "cases": [{"vars": {"tokens": ["ok", "AKIAIOSFODNN7EXAMPLE"]}}],
        "count": 3,
        "nothing": None,
    }
    assert find_key_shaped(config) == [
        ("models[1].headers.Authorization", "openai"),
        ("cases[0].vars.tokens[1]", "aws"),
    ]
    assert find_key_shaped([ANTHROPIC_KEY]) == [("[0]", "anthropic")]
    assert find_key_shaped("clean") == []


def test_bearer_tokens_are_redacted_and_prose_is_not() -> None:
    from evalwh.config.secrets import redact

    assert redact("Authorization: Bearer abc.def-123456") == "Authorization: Bearer ***"
    assert redact("Bearer authentication uses a token") == "Bearer authentication uses a token"


def test_sanitize_redacts_before_it_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalwh.config.secrets import sanitize

    monkeypatch.setenv("SOME_PASSWORD", "straddling-secret-value")
    text = "x" * 10 + "straddling-secret-value" + "y" * 10
    assert sanitize(text, 20) == "x" * 10 + "***" + "y" * 7 + "..."
    assert sanitize(text, 13, tail=True) == "..." + "***" + "y" * 10
