"""Which values count as secrets, and how redaction and a child's environment treat them
(evalwh.config.secrets): the length boundary, the name rule, the longest-first order that
keeps one secret inside another from leaking, and the environment each function reads.

Written from mutants that survived the mutation run (docs/testing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config import secrets
from evalwh.config.secrets import (
    MIN_SECRET_LENGTH,
    check_environment,
    get_secret,
    is_secret_name,
    known_secret_values,
    redact,
)
from evalwh.errors import ConfigError


@pytest.fixture(autouse=True)
def _nothing_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # each test starts with no remembered secret and no secrets file in reach
    monkeypatch.setattr(secrets, "_loaded", set())
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("EVALWH_SECRETS", raising=False)
    monkeypatch.chdir(tmp_path)


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


def test_a_short_extra_value_is_never_masked() -> None:
    # a short value would mask every occurrence of a common word or number in the text
    assert redact("a b c 42", extra=["b", "42", ""]) == "a b c 42"


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


def test_known_values_read_the_environment_they_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROCESS_TOKEN", "process-token-value")
    known = known_secret_values({"GIVEN_TOKEN": "given-token-value"})
    assert "given-token-value" in known
    assert "process-token-value" not in known


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


def test_redact_takes_what_is_not_text_as_its_string() -> None:
    error = RuntimeError("upstream said Bearer abcdefgh12345678")
    assert redact(error) == "upstream said Bearer ***"  # type: ignore[arg-type]
    assert redact(12345) == "12345"  # type: ignore[arg-type]


# -- check_secret_files: every secrets file is read before a run starts ------------------------


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


def test_no_secrets_file_at_all_is_fine_and_a_named_one_is_read(tmp_path: Path) -> None:
    env = {"EVALWH_CONFIG_DIR": str(tmp_path / "config")}
    secrets.check_secret_files(env=env, cwd=tmp_path / "empty")  # nothing exists: no error
    named = tmp_path / "ci.secrets.yaml"
    named.write_text("MY_SERVICE_KEY: from-named-file-0001\n")
    secrets.check_secret_files(env={**env, "EVALWH_SECRETS": str(named)}, cwd=tmp_path)


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
