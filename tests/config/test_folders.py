"""A folder as a case source (`cases: [{dir: ...}]`, evalwh/config/folders.py): one case per
file, named as written, and an unreadable file reported at the source's key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.config import attachments
from evalwh.config.folders import directory_cases
from evalwh.errors import ConfigError
from tests.conftest import write


def test_directory_case_source_keeps_the_folder_name_as_written(tmp_path: Path) -> None:
    write(tmp_path / "inboX" / "a.txt", "hello")
    cases = directory_cases({"dir": "inboX/"}, tmp_path, "cases[0]", "eval.yaml")
    assert [(c.id, c.source) for c in cases] == [("a.txt", "inboX/a.txt")]


def test_unreadable_file_of_a_directory_source_names_the_config_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the OS refuses to read (permission denied) is reported at the source's dir:
    key of the config."""
    write(tmp_path / "imgs" / "a.png", "x")

    def denied(path: Path, fh: Any, size: int) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(attachments, "_hash_file", denied)
    with pytest.raises(ConfigError) as caught:
        directory_cases({"dir": "imgs"}, tmp_path, "cases[3]", "eval.yaml")
    error = caught.value
    assert error.message.endswith("a.png: Permission denied")
    assert (error.file, error.where) == ("eval.yaml", "cases[3].dir")
