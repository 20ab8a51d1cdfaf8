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
