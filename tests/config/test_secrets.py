"""Secrets (evalwh/config/secrets.py): where a secret is read from (environment > project
file > user file), which values count as secrets (the length boundary, the name rule), how
redaction masks them (longest first, so one secret inside another leaks no part of it) and
key-shaped strings, a child's environment, and the check of every secrets file before a run.

Two isolations are used, each test naming its own: `secrets_env` (a fresh HOME, the user
config in tmp/userconf, the working folder tmp/work) and `nothing_loaded` (the user config in
tmp/config, the working folder tmp itself, EVALWH_SECRETS unset). Both forget the secrets
remembered by earlier tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config import secrets
from evalwh.config.secrets import (
    MIN_SECRET_LENGTH,
    check_environment,
    find_key_shaped,
    get_secret,
    is_secret_name,
    known_secret_values,
    redact,
)
from evalwh.errors import ConfigError

ANTHROPIC_KEY = "sk-ant-api03-" + "a1B2c3D4e5" * 4


OPENAI_KEY = "sk-proj-" + "Z9y8X7w6V5" * 4


@pytest.fixture
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


@pytest.fixture
def nothing_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # each test starts with no remembered secret and no secrets file in reach
    monkeypatch.setattr(secrets, "_loaded", set())
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("EVALWH_SECRETS", raising=False)
    monkeypatch.chdir(tmp_path)


def write_user_secrets(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "userconf"
    folder.mkdir(exist_ok=True)
    path = folder / "secrets.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.usefixtures("secrets_env")
def test_missing_everywhere_is_none() -> None:
    assert get_secret("EVALWH_TEST_KEY") is None


@pytest.mark.usefixtures("secrets_env")
def test_environment_beats_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work" / ".evalwh.secrets.yaml").write_text("EVALWH_TEST_KEY: from-project-file\n")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\n")
    monkeypatch.setenv("EVALWH_TEST_KEY", "from-the-environment")
    assert get_secret("EVALWH_TEST_KEY") == "from-the-environment"


@pytest.mark.usefixtures("secrets_env")
def test_project_file_beats_user_file(tmp_path: Path) -> None:
    (tmp_path / "work" / ".evalwh.secrets.yaml").write_text("EVALWH_TEST_KEY: from-project-file\n")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\nOTHER: other-user-value\n")
    assert get_secret("EVALWH_TEST_KEY") == "from-project-file"
    assert get_secret("OTHER") == "other-user-value"  # falls through to the user file


@pytest.mark.usefixtures("secrets_env")
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


@pytest.mark.usefixtures("secrets_env")
def test_empty_env_value_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALWH_TEST_KEY", "")
    write_user_secrets(tmp_path, "EVALWH_TEST_KEY: from-user-file\n")
    assert get_secret("EVALWH_TEST_KEY") == "from-user-file"


@pytest.mark.usefixtures("secrets_env")
def test_bad_secrets_file_is_a_config_error(tmp_path: Path) -> None:
    path = write_user_secrets(tmp_path, "- just\n- a list\n")
    with pytest.raises(ConfigError) as info:
        get_secret("EVALWH_TEST_KEY")
    assert info.value.file == str(path)
    assert info.value.message == "a secrets file must be a mapping of NAME: value"
    assert info.value.fix == "write one line per secret, like `ANTHROPIC_API_KEY: sk-ant-...`"


@pytest.mark.usefixtures("secrets_env")
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


@pytest.mark.usefixtures("secrets_env")
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


KEY_SAMPLES = [
    (ANTHROPIC_KEY, "anthropic"),
    (OPENAI_KEY, "openai"),
    ("sk-" + "A1b2C3d4E5" * 4 + "T3BlbkFJ", "openai"),
    ("AIza" + "Sy" + "x" * 33, "google"),
    ("AKIAIOSFODNN7EXAMPLE", "aws"),
    ("ASIA" + "Q7" * 8, "aws"),  # a temporary (STS) key
    ("ghp_" + "a" * 36, "github"),
    ("github_pat_" + "11ABCDEFG" + "x" * 40, "github"),
    ("hf_" + "AbCdEfGhIj" * 3 + "kl", "huggingface"),
    ("xoxb-123456789012-abcdefghij", "slack"),
]


@pytest.mark.usefixtures("secrets_env")
@pytest.mark.parametrize(("value", "name"), KEY_SAMPLES)
def test_key_patterns(value: str, name: str) -> None:
    assert find_key_shaped({"k": value}) == [("k", name)]


@pytest.mark.usefixtures("secrets_env")
@pytest.mark.parametrize(("value", "name"), KEY_SAMPLES)
def test_a_key_of_every_shape_alone_in_an_answer_is_redacted(value: str, name: str) -> None:
    # attack: a model echoes one API key of one shape in its answer; redact() runs the
    # patterns only on a text holding one of KEY_LITERALS, which must let no shape through
    from evalwh.config.secrets import KEY_PATTERNS, redact

    assert {n for _, n in KEY_SAMPLES} == set(KEY_PATTERNS)  # a new pattern needs a sample

    text = f"here it is: {value} (a {name} key)"
    masked = text
    for pattern in KEY_PATTERNS.values():  # what redact did before the combined search
        masked = pattern.sub("***", masked)
    assert redact(text, known=[]) == masked == f"here it is: *** (a {name} key)"
    assert redact("case-000042: 84", known=[]) == "case-000042: 84"


@pytest.mark.usefixtures("secrets_env")
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


@pytest.mark.usefixtures("secrets_env")
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


@pytest.mark.usefixtures("secrets_env")
def test_bearer_tokens_are_redacted_and_prose_is_not() -> None:
    from evalwh.config.secrets import redact

    assert redact("Authorization: Bearer abc.def-123456") == "Authorization: Bearer ***"
    assert redact("Bearer authentication uses a token") == "Bearer authentication uses a token"


@pytest.mark.usefixtures("secrets_env")
def test_sanitize_redacts_before_it_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalwh.config.secrets import sanitize

    monkeypatch.setenv("SOME_PASSWORD", "straddling-secret-value")
    text = "x" * 10 + "straddling-secret-value" + "y" * 10
    assert sanitize(text, 20) == "x" * 10 + "***" + "y" * 7 + "..."
    assert sanitize(text, 13, tail=True) == "..." + "***" + "y" * 10


@pytest.mark.usefixtures("nothing_loaded")
def test_a_secret_of_exactly_the_minimum_length_is_known_and_redacted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert MIN_SECRET_LENGTH == 8
    (tmp_path / ".evalwh.secrets.yaml").write_text(
        "FILE_KEY: f1le-k3y\nSHORT_KEY: f1le-k3\n"  # pragma: allowlist secret
    )
    assert get_secret("FILE_KEY") == "f1le-k3y"  # pragma: allowlist secret
    monkeypatch.setenv("ENV_TOKEN", "env-t0k3")
    monkeypatch.setenv("ENV_SHORT_TOKEN", "env-t0k")
    known = known_secret_values()
    assert "f1le-k3y" in known and "env-t0k3" in known
    assert "f1le-k3" not in known and "env-t0k" not in known
    assert redact("f1le-k3y env-t0k3 env-t0k") == "*** *** env-t0k"
    assert redact("abc12345", extra=["abc12345"]) == "***"


@pytest.mark.usefixtures("nothing_loaded")
def test_a_short_extra_value_is_never_masked() -> None:
    # a short value would mask every occurrence of a common word or number in the text
    assert redact("a b c 42", extra=["b", "42", ""]) == "a b c 42"


@pytest.mark.usefixtures("nothing_loaded")
@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("DEPLOY_KEY", True),  # the suffix alone
        ("db_credentials", True),
        ("MY_API_KEY_FILE", True),  # a part alone
        ("PASSWORD", True),
        ("GH_TOKEN", True),
        ("KEYBOARD_LAYOUT", False),
        ("PATH", False),
        ("EVALWH_SECRETS", False),  # the path of a secrets file
    ],
)
def test_a_name_is_secret_by_its_suffix_or_by_a_part(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.usefixtures("nothing_loaded")
def test_a_secret_inside_a_longer_one_leaves_no_part_of_the_longer_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # attack on the output: masking the shorter secret first would cut the longer one in two
    # and print its remainder ("***-and-more-of-it")
    monkeypatch.setenv("SHORT_TOKEN", "shared-prefix")
    monkeypatch.setenv("LONG_TOKEN", "shared-prefix-and-more-of-it")
    monkeypatch.setenv("TIE_TOKEN", "zzzzzzzzzzzzz")  # as long as SHORT_TOKEN's value
    known = known_secret_values()
    assert known.index("shared-prefix-and-more-of-it") < known.index("shared-prefix")
    assert known.index("shared-prefix") < known.index("zzzzzzzzzzzzz")  # a tie: by value
    assert redact("a shared-prefix-and-more-of-it b") == "a *** b"


@pytest.mark.usefixtures("nothing_loaded")
def test_known_values_read_the_environment_they_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROCESS_TOKEN", "process-token-value")
    known = known_secret_values({"GIVEN_TOKEN": "given-token-value"})
    assert "given-token-value" in known
    assert "process-token-value" not in known


@pytest.mark.usefixtures("nothing_loaded")
def test_a_childs_environment_drops_secret_names_and_copies_of_their_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("A_TOKEN", raising=False)
    base = {
        "A_TOKEN": "base-only-secret",  # pragma: allowlist secret
        "SHORT_TOKEN": "tiny",  # secret by its name, whatever its length
        "COPY": "prefix base-only-secret suffix",  # a copy of a secret under a plain name
        "HOME": "/home/u",
        "PWD": "/somewhere",
    }
    kept, dropped = check_environment(base)
    assert kept == {"HOME": "/home/u"}
    assert sorted(dropped) == sorted(["base-only-secret", "tiny", "prefix base-only-secret suffix"])


@pytest.mark.usefixtures("nothing_loaded")
def test_a_variable_handed_over_through_pass_env_is_passed_and_redacted_whatever_its_name() -> None:
    base = {"PATH": "/bin", "LC_ALL": "C", "CORP_CRED": "corp-cred-value-1234", "OTHER": "x"}
    kept, _dropped = check_environment(base, pass_env=["CORP_CRED", "NOT_SET"])
    assert kept == {"PATH": "/bin", "LC_ALL": "C", "CORP_CRED": "corp-cred-value-1234"}
    assert redact("it was corp-cred-value-1234") == "it was ***"


@pytest.mark.usefixtures("nothing_loaded")
def test_redact_takes_what_is_not_text_as_its_string() -> None:
    error = RuntimeError("upstream said Bearer abcdefgh12345678")
    assert redact(error) == "upstream said Bearer ***"  # type: ignore[arg-type]
    assert redact(12345) == "12345"  # type: ignore[arg-type]


@pytest.mark.usefixtures("nothing_loaded")
def test_a_named_secrets_file_that_is_missing_is_an_error_naming_it_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "project"  # not the working folder (tmp_path)
    here.mkdir()
    env = {"EVALWH_SECRETS": "ci/nope.yaml", "EVALWH_CONFIG_DIR": str(tmp_path / "config")}
    with pytest.raises(ConfigError) as exc:
        secrets.check_secret_files(env=env, cwd=here)
    assert (
        exc.value.message
        == f"EVALWH_SECRETS names {here / 'ci' / 'nope.yaml'}, which is not a file"
    )
    assert exc.value.fix == (
        "point EVALWH_SECRETS at your secrets file (NAME: value lines), or unset it"
    )
    # the project's own secrets file does not stand in for the one named
    (here / ".evalwh.secrets.yaml").write_text("MY_SERVICE_KEY: from-project-file-01\n")
    with pytest.raises(ConfigError, match=r"EVALWH_SECRETS names .*nope\.yaml"):
        secrets.check_secret_files(env=env, cwd=here)
    # the process's environment is read when no env is given, and only then
    monkeypatch.setenv("EVALWH_SECRETS", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError, match=r"gone\.yaml, which is not a file"):
        secrets.check_secret_files(cwd=here)
    secrets.check_secret_files(env={"EVALWH_CONFIG_DIR": str(tmp_path / "config")}, cwd=here)


@pytest.mark.usefixtures("nothing_loaded")
def test_no_secrets_file_at_all_is_fine_and_a_named_one_is_read(tmp_path: Path) -> None:
    env = {"EVALWH_CONFIG_DIR": str(tmp_path / "config")}
    secrets.check_secret_files(env=env, cwd=tmp_path / "empty")  # nothing exists: no error
    named = tmp_path / "ci.secrets.yaml"
    named.write_text("MY_SERVICE_KEY: from-named-file-0001\n")
    secrets.check_secret_files(env={**env, "EVALWH_SECRETS": str(named)}, cwd=tmp_path)


@pytest.mark.usefixtures("nothing_loaded")
@pytest.mark.parametrize("which", ["named", "project", "user"])
def test_each_malformed_secrets_file_is_an_error_naming_that_file(
    tmp_path: Path, which: str
) -> None:
    here, config = tmp_path / "project", tmp_path / "config"
    files = {
        "named": tmp_path / "ci.secrets.yaml",
        "project": here / ".evalwh.secrets.yaml",
        "user": config / "secrets.yaml",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("MY_SERVICE_KEY: fine-value-000001\n")
    files[which].write_text("- a list, not NAME: value lines\n")
    env = {"EVALWH_CONFIG_DIR": str(config), "EVALWH_SECRETS": str(files["named"])}
    with pytest.raises(ConfigError, match="a secrets file must be a mapping") as exc:
        secrets.check_secret_files(env=env, cwd=here)
    assert exc.value.file == str(files[which])


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
