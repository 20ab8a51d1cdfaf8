"""The config and dataset hashes a run stores (issue 21: mutants of ``canonical_hash`` and
``dataset_rows`` survived). ``--resume`` and ``--shard`` refuse to continue a run whose hashes
differ from the config's, so the hashes must (a) change with every field of a case and with
what the config asks, and (b) stay the same for the same files across releases: a run started
before an upgrade is resumed after it. The pinned values below are what this release computes;
a change to them is a change users see (every earlier run refuses ``--resume``), so it needs a
CHANGELOG entry, not a new pin."""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path

import pytest

from evalwh.config.loader import canonical_hash, load_config
from tests.conftest import write

CONFIG = """\
name: pinned
models:
  - {id: m, provider: mock, mock: {default: "red"}}
variants:
  - id: v
    messages:
      - role: user
        content: [{text: "Colour of {{ thing }} on {{ day }}?"}, {image: "{{ files.photo }}"}]
cases:
  - id: pic
    vars: {thing: ball, day: 2026-01-02}
    expected: red
    metadata: {kind: primary, since: 2025-12-31}
    human_label: pass
    files: {photo: photo.png}
  - id: code
    vars: {thing: cube, day: 2026-01-03}
    check: {run: "true"}
scorecard:
  - {name: colour, type: contains}
"""
PHOTO = b"\x89PNG\r\n\x1a\n" + b"x" * 36
CONFIG_HASH = (
    "8cea712e5ba5b1df7935e3f4dda46d36845c520df60a5c485d00a4f4b07b821f"  # pragma: allowlist secret
)
DATASET_HASH = (
    "9ba58aff67af5797b425ba1a488a4e805d2d4deab5df305de1bb266a22ac7155"  # pragma: allowlist secret
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hashes(folder: Path, config: str = CONFIG, photo: bytes = PHOTO) -> tuple[str, str]:
    write(folder / "eval.yaml", config)
    (folder / "photo.png").write_bytes(photo)
    loaded = load_config(folder / "eval.yaml")
    return loaded.config_hash, loaded.dataset_hash


def test_the_hashes_of_the_same_files_are_the_same_in_every_folder_and_release(
    tmp_path: Path,
) -> None:
    # YAML dates (vars and metadata above) are hashed as their ISO text.
    assert hashes(tmp_path / "a") == (CONFIG_HASH, DATASET_HASH)
    assert hashes(tmp_path / "b" / "deeper") == (CONFIG_HASH, DATASET_HASH)


def test_canonical_hash_is_sha256_of_compact_sorted_json() -> None:
    # the form the stored hashes have always had; a date is hashed as its ISO text
    assert canonical_hash({"b": [1, "x"], "a": None}) == sha256(b'{"a":null,"b":[1,"x"]}')
    assert canonical_hash({"when": date(2026, 1, 2)}) == sha256(b'{"when":"2026-01-02"}')


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  - id: pic\n", "  - id: pic2\n"),
        ("thing: ball", "thing: bat"),
        ("day: 2026-01-02", "day: 2026-01-09"),
        ("expected: red", "expected: blue"),
        ("{kind: primary,", "{kind: secondary,"),
        ("human_label: pass", "human_label: fail"),
        ('run: "true"', 'run: "false"'),
        ("files: {photo: photo.png}", "files: {photo: other.png}"),
    ],
)
def test_every_field_of_a_case_changes_the_dataset_hash_and_not_the_config_hash(
    tmp_path: Path, old: str, new: str
) -> None:
    assert old in CONFIG
    (tmp_path / "other.png").write_bytes(PHOTO + b"y")
    config_hash, dataset_hash = hashes(tmp_path, CONFIG.replace(old, new))
    assert dataset_hash != DATASET_HASH
    assert config_hash == CONFIG_HASH


def test_the_content_of_an_attached_file_changes_the_dataset_hash(tmp_path: Path) -> None:
    config_hash, dataset_hash = hashes(tmp_path, photo=PHOTO + b"y")
    assert (config_hash, dataset_hash != DATASET_HASH) == (CONFIG_HASH, True)


@pytest.mark.parametrize(
    ("old", "new", "config_changes"),
    [
        ("Colour of", "Color of", True),  # what the run asks
        ('default: "red"', 'default: "blue"', True),  # the model's settings
        ("type: contains}", "type: contains, weight: 2}", True),  # how it is scored
        ("name: pinned\n", "name: pinned\ndescription: what it is\n", False),
        ("name: pinned\n", "name: pinned\nthresholds: {min_pass_rate: 0.5}\n", False),
        ("name: pinned\n", "name: pinned\nsettings: {concurrency: 3}\n", False),
    ],
)
def test_what_the_config_asks_and_scores_changes_only_the_config_hash(
    tmp_path: Path, old: str, new: str, config_changes: bool
) -> None:
    assert old in CONFIG
    config_hash, dataset_hash = hashes(tmp_path, CONFIG.replace(old, new))
    assert (config_hash != CONFIG_HASH) is config_changes
    assert dataset_hash == DATASET_HASH
