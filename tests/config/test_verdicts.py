"""Schema verdicts remembered across processes (evalwh/config/verdicts.py): a document the
schema passed once skips jsonschema later; nothing else ever does."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from evalwh.config import validate, verdicts
from evalwh.errors import ConfigError

SCHEMA = '{"type": "object"}'


GOOD = {"name": "t", "models": [{"id": "m", "provider": "mock"}]}


def test_the_cache_folder_follows_the_environment(tmp_path: Path) -> None:
    home = Path.home()
    assert verdicts.cache_dir({}) == home / ".cache" / "evalwh"
    assert verdicts.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/evalwh")
    both = {"XDG_CACHE_HOME": "/x", "EVALWH_CACHE_DIR": str(tmp_path)}
    assert verdicts.cache_dir(both) == tmp_path


def test_the_key_covers_the_schema_the_definition_and_every_value() -> None:
    key = verdicts.digest(SCHEMA, None, GOOD)
    assert key is not None and len(key) == 64
    assert verdicts.digest(SCHEMA, None, dict(reversed(GOOD.items()))) == key  # key order
    assert verdicts.digest(SCHEMA + " ", None, GOOD) != key  # a changed schema
    assert verdicts.digest(SCHEMA, "settings", GOOD) != key
    # values JSON tells apart stay apart: 1 / 1.0 / true / "1"
    ones = {verdicts.digest(SCHEMA, None, {"a": v}) for v in (1, 1.0, True, "1")}
    assert len(ones) == 4


def test_a_lone_surrogate_gets_a_key_of_its_own() -> None:
    # json.loads reads "\ud800" into a str no UTF-8 encoder takes as it is (a JSON case file
    # can hold one): the key is still made, and tells one such string from another
    keys = {verdicts.digest(SCHEMA, None, {"a": s}) for s in ("\ud800", "\ud801", "x")}
    assert None not in keys and len(keys) == 3


@pytest.mark.parametrize(
    "data",
    [
        {"day": datetime.date(2024, 1, 2)},  # YAML dates: not "2024-01-02"
        {1: "x"},  # json.dumps would turn the key into "1"
        {"a": (1, 2)},
        {"a": {"b": b"bytes"}},
        [{"s": {1, 2}}],
    ],
)
def test_values_that_are_not_plain_json_are_never_remembered(data: object) -> None:
    assert verdicts.digest(SCHEMA, None, data) is None


def test_a_pass_is_remembered_across_processes_and_an_error_never(tmp_path: Path) -> None:
    folder = Path(verdicts.cache_dir())
    good = {"a": [1, 2]}
    key = verdicts.digest(SCHEMA, None, good)
    assert key is not None and not verdicts.known_valid(key)
    verdicts.remember_valid(key)
    verdicts._known.cache_clear()  # as a new process would read it
    assert verdicts.known_valid(key)
    assert (folder / verdicts.FILE).read_text() == key + "\n"
    bad = {"name": "t"}  # no models: the schema refuses it
    with pytest.raises(ConfigError, match="models"):
        validate.validate_document(bad, None, "eval.yaml")
    key_bad = verdicts.digest(validate._schema_text(), None, bad)
    verdicts._known.cache_clear()
    assert key_bad is not None and not verdicts.known_valid(key_bad)


def test_validation_skips_jsonschema_only_for_a_known_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str | None] = []
    real = validate._validator

    def counting(definition: str | None) -> object:
        calls.append(definition)
        return real(definition)

    monkeypatch.setattr(validate, "_validator", counting)
    document = {"provider": "mock", "id": "m"}
    with pytest.raises(ConfigError):  # not a whole config: refused, and not remembered
        validate.validate_document(document, None, "eval.yaml")
    with pytest.raises(ConfigError):
        validate.validate_document(document, None, "eval.yaml")
    assert calls == [None, None]
    settings = {"concurrency": 4}
    validate.validate_document(settings, None, "config.yaml", definition="settings")
    verdicts._known.cache_clear()
    validate.validate_document(settings, None, "config.yaml", definition="settings")
    assert calls == [None, None, "settings"]  # the second pass came from the file
    settings["concurrency"] = 0  # a changed document is checked again (and refused)
    with pytest.raises(ConfigError):
        validate.validate_document(settings, None, "config.yaml", definition="settings")
    assert calls[-1] == "settings" and len(calls) == 4


def test_a_pass_under_one_definition_is_no_pass_under_another() -> None:
    # `{concurrency: 4}` is a good user config but no eval.yaml: its remembered pass as
    # settings must not let it through as a whole config, in this process or the next
    settings = {"concurrency": 4}
    validate.validate_document(settings, None, "config.yaml", definition="settings")
    verdicts._known.cache_clear()
    with pytest.raises(ConfigError, match="models"):
        validate.validate_document(settings, None, "eval.yaml")


def test_the_file_is_trimmed_to_the_newest_past_twice_its_size() -> None:
    path = Path(verdicts.cache_dir()) / verdicts.FILE
    keys = [f"{i:064x}" for i in range(2 * verdicts.KEEP)]
    for key in keys:
        verdicts.remember_valid(key)
    assert path.read_text().split() == keys  # exactly at the limit: kept whole
    verdicts.remember_valid("f" * 64)
    kept = path.read_text().split()
    assert (
        len(kept) == verdicts.KEEP and kept[-1] == "f" * 64 and kept[0] == keys[-verdicts.KEEP + 1]
    )


def test_an_unwritable_cache_only_means_validating_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("EVALWH_CACHE_DIR", str(blocker / "evalwh"))
    verdicts._known.cache_clear()
    validate.validate_document({"concurrency": 4}, None, "c.yaml", definition="settings")
    verdicts._known.cache_clear()
    assert not verdicts.known_valid(
        verdicts.digest(validate._schema_text(), "settings", {"concurrency": 4}) or ""
    )


def test_a_new_cache_folder_is_private_to_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # other users of the machine cannot list or read which documents this user validated
    folder = tmp_path / "cache" / "evalwh"
    monkeypatch.setenv("EVALWH_CACHE_DIR", str(folder))
    verdicts._known.cache_clear()
    verdicts.remember_valid("a" * 64)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / verdicts.FILE).read_text(encoding="ascii") == "a" * 64 + "\n"
