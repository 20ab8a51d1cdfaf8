"""Tests that kill mutants mutmut found alive in how a prompt's binary parts (images, audio,
files) are compiled, and in the warehouse's shard and I/O helpers (issue 21); each test names
the user-visible behaviour it pins."""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fakes import media

from evalwh import load_config
from evalwh.config.prompts import CompiledVariant
from evalwh.errors import ConfigError
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse import shards
from evalwh.warehouse.ioerrors import StorageError, io_guard, is_io_error
from tests.conftest import write

FIX_TEMPLATE = (
    'a template names a file of the case: - image: "{{ files.photo }}" (give the case files:, '
    "a file:// column or a dir: source); a literal path next to the config needs no braces"
)


def eval_yaml(tmp_path: Path, parts: list[str], case: str) -> Path:
    folder = tmp_path / "media"
    folder.mkdir(exist_ok=True)
    (folder / "dog.png").write_bytes(media.png(4, 3))
    (folder / "contract.pdf").write_bytes(media.pdf())
    (folder / "hello.wav").write_bytes(media.wav(1.0))
    return write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {default: ok}}\n"
        "variants:\n  - id: v\n    messages:\n      - role: user\n        content:\n"
        + "".join(f"          - {p}\n" for p in parts)
        + f"cases:\n  - {case}\n"
        "scorecard:\n  - {name: ok, type: contains, value: ok}\n",
    )


TWO_FILES = "{id: c1, files: {photo: media/dog.png, doc: media/contract.pdf}}"


def render(tmp_path: Path, parts: list[str], case: str = TWO_FILES) -> list[dict[str, Any]]:
    loaded = load_config(eval_yaml(tmp_path, parts, case))
    return CompiledVariant(loaded.variants[0]).render(loaded.cases[0])


def refused(tmp_path: Path, parts: list[str], case: str = TWO_FILES) -> tuple[Any, ...]:
    """The config error a user sees: message, file, place and fix."""
    with pytest.raises(ConfigError) as info:
        render(tmp_path, parts, case)
    error = info.value
    return error.message, error.file, error.where, error.fix


# ---- URLs stay URLs ---------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://example.com/a.png", "https://example.com/a.png"])
def test_an_http_or_https_image_is_sent_as_its_url_not_read_as_a_file(
    tmp_path: Path, url: str
) -> None:
    assert render(tmp_path, ["text: look", f"image: {url}"])[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "url": url},
    ]


# ---- a reference to a file the case does not have ----------------------------------------


def test_a_reference_to_a_missing_case_file_names_the_files_the_case_has(tmp_path: Path) -> None:
    assert refused(tmp_path, ["text: hi", 'image: "attachment://scan"']) == (
        "case 'c1' has no file 'scan'",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        "add it to the case's files (eval.yaml cases[0]); the case has: doc, photo",
    )


def test_a_reference_in_a_case_without_files_says_it_has_no_files(tmp_path: Path) -> None:
    assert refused(tmp_path, ['image: "attachment://scan"'], "{id: c1}") == (
        "case 'c1' has no file 'scan'",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[0]",
        "add it to the case's files (eval.yaml cases[0]); the case has: no files",
    )


# ---- a template that renders something other than a case file ----------------------------


def test_a_template_rendering_nothing_says_nothing(tmp_path: Path) -> None:
    assert refused(tmp_path, ['image: "{{ vars.p }}"'], "{id: c1, vars: {p: ''}}") == (
        "the image part rendered nothing for case 'c1', not a file of the case",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[0]",
        FIX_TEMPLATE,
    )


def test_a_template_rendering_a_path_quotes_it(tmp_path: Path) -> None:
    case = "{id: c1, vars: {p: media/dog.png}}"
    assert refused(tmp_path, ["text: hi", 'audio: "{{ vars.p }}"'], case) == (
        "the audio part rendered 'media/dog.png' for case 'c1', not a file of the case",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        FIX_TEMPLATE,
    )


def test_a_long_rendered_value_is_quoted_to_80_characters(tmp_path: Path) -> None:
    value = "y" * 80 + "Z" * 20
    message = refused(tmp_path, ['image: "{{ vars.p }}"'], f"{{id: c1, vars: {{p: {value}}}}}")[0]
    assert message == f"the image part rendered '{'y' * 80}' for case 'c1', not a file of the case"


# ---- a literal path the prompt names ------------------------------------------------------


def test_an_unreadable_literal_path_names_the_part_it_came_from(tmp_path: Path) -> None:
    message, file, where, _ = refused(tmp_path, ["text: hi", "image: media/gone.png"])
    assert message.startswith(f"cannot read the attached file {tmp_path / 'media' / 'gone.png'}")
    assert (file, where) == (str(tmp_path / "eval.yaml"), "variants[0].messages[0].content[1]")


# ---- a file of the wrong kind -------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "message", "use"),
    [
        (
            'image: "{{ files.doc }}"',
            "the image part of case 'c1' names contract.pdf, which is application/pdf (from its "
            "content), not an image",
            "file",
        ),
        (
            'audio: "{{ files.photo }}"',
            "the audio part of case 'c1' names dog.png, which is image/png (from its content), "
            "not an audio",
            "image",
        ),
        (
            'file: "{{ files.photo }}"',
            "the file part of case 'c1' names dog.png, which is image/png (from its content), "
            "not a file",
            "image",
        ),
    ],
)
def test_a_file_of_the_wrong_kind_says_a_or_an_and_which_part_to_use(
    tmp_path: Path, part: str, message: str, use: str
) -> None:
    assert refused(tmp_path, ["text: hi", part]) == (
        message,
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        f"use a `- {use}:` part for it, or attach the right file",
    )


# ---- which shard's row a lake merge keeps -------------------------------------------------


def test_a_lost_race_while_keeping_one_row_is_logged_as_joining_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A commit conflict in the merge is retried, and the debug log says which run it joins."""
    from evalwh.warehouse.connect import write_connection

    target = lakemod.parse_target(
        f"ducklake:{tmp_path / 'meta.ducklake'}", {"data_path": "d"}, base=tmp_path, where="t"
    )
    real = shards._rows
    raced: list[int] = []

    def racing(con: Any, run_id: str) -> list[dict[str, Any]]:
        if not raced:
            raced.append(1)
            raise duckdb.TransactionException("Transaction conflict - lost the race")
        return real(con, run_id)

    try:
        with write_connection(target) as con:
            con.execute(
                "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, "
                "n_planned, started_at, evalwh_version, lease_token) VALUES "
                "('r', 's', 'running', 'c', 'd', 1, now(), 'v', 'a-token')"
            )
        monkeypatch.setattr(shards, "_rows", racing)
        monkeypatch.setattr(lakemod.time, "sleep", lambda s: None)
        with caplog.at_level(logging.DEBUG, logger=lakemod.log.name):
            assert shards._keep_one(target, "r", "a-token") is True
    finally:
        lakemod.release(target)
    assert any(
        r.getMessage().startswith("join run r: DuckLake conflict (try 1)") for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


# ---- which exceptions count as I/O errors ----------------------------------------------


@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EISDIR, errno.EIO, errno.EEXIST]
)
def test_an_os_error_of_the_file_system_is_an_io_error(code: int) -> None:
    assert is_io_error(OSError(code, "cause")) is True


def test_an_os_error_without_an_errno_is_an_io_error() -> None:
    assert is_io_error(OSError("no errno")) is True


@pytest.mark.parametrize("code", [errno.ENOENT, errno.EINTR, errno.ECONNREFUSED])
def test_other_os_errors_are_not_io_errors(code: int) -> None:
    assert is_io_error(OSError(code, "cause")) is False


def test_a_full_disk_becomes_a_storage_error_and_a_missing_file_does_not(tmp_path: Path) -> None:
    with (
        pytest.raises(StorageError, match="No space left on device"),
        io_guard(tmp_path / "w.duckdb", "write the warehouse"),
    ):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(FileNotFoundError), io_guard(tmp_path / "w.duckdb", "write the warehouse"):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
