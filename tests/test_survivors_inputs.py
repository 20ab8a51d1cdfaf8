"""Tests that kill mutants mutmut found alive in evalwh/config's readers of attachments, schemas and templates (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import locale
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalwh.config.attachments import filename_for, load
from evalwh.config.datasets import READERS
from evalwh.config.loader import load_config
from evalwh.config.model import Case, Variant
from evalwh.config.outputs import read_schema_file
from evalwh.config.prompts import CompiledVariant, messages_from_config, sandbox_error
from evalwh.errors import ConfigError
from tests.conftest import write
from tests.test_config_errors import BASE

# ---- attachments: an MP3 is recognised from its first frame header, not its name -----------

# Bitrate (kbps) and sample rate (Hz) tables of MPEG audio layer III, by version bits
# (3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5; 1 is reserved).
BITRATES = {
    3: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    0: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def header(version: int, bitrate: int, rate: int, *, padding: int = 0, layer: int = 1) -> bytes:
    """The 4 bytes of an MPEG audio frame header, bit by bit (layer bits 1 = layer III;
    protection bit 1 = no CRC; channel mode 0 = stereo)."""
    b1 = 0xE0 | (version << 3) | (layer << 1) | 1
    b2 = (bitrate << 4) | (rate << 2) | (padding << 1)
    return bytes([0xFF, b1, b2, 0x00])


def frame(version: int, bitrate: int, rate: int, *, padding: int = 0) -> bytes:
    """One whole layer III frame: its header and a silent body of the length it announces."""
    kbps, hz = BITRATES[version][bitrate], RATES[version][rate]
    per_frame = 144 if version == 3 else 72  # samples per frame / 8
    length = per_frame * kbps * 1000 // hz + padding
    return header(version, bitrate, rate, padding=padding) + b"\x00" * (length - 4)


def typed(tmp_path: Path, data: bytes) -> str:
    """The media type a case file with these bytes gets (no suffix: the content decides)."""
    path = tmp_path / f"clip{len(list(tmp_path.iterdir()))}"
    path.write_bytes(data)
    return load(path, "clip").media_type


@pytest.mark.parametrize(
    ("version", "bitrate", "rate", "padding"),
    [
        (3, 9, 0, 0),  # MPEG-1, 128 kbps, 44.1 kHz: the common MP3
        (3, 9, 0, 1),  # the same with the padding bit set
        (3, 9, 2, 0),  # MPEG-1, 128 kbps, 32 kHz
        (3, 8, 1, 1),  # MPEG-1, 112 kbps, 48 kHz, padded
        (3, 1, 0, 0),  # MPEG-1 at the lowest bitrate (32 kbps)
        (3, 14, 1, 0),  # MPEG-1 at the highest bitrate (320 kbps)
        (2, 8, 0, 0),  # MPEG-2, 64 kbps, 22.05 kHz
        (2, 1, 2, 1),  # MPEG-2, 8 kbps, 16 kHz, padded
        (0, 4, 1, 0),  # MPEG-2.5, 32 kbps, 12 kHz
        (0, 2, 2, 1),  # MPEG-2.5, 16 kbps, 8 kHz, padded
    ],
)
def test_an_mp3_without_a_suffix_is_typed_audio_mpeg_from_its_frames(
    tmp_path: Path, version: int, bitrate: int, rate: int, padding: int
) -> None:
    """A file of layer III frames (MPEG-1, 2 or 2.5, any real bitrate and sample rate, padded
    or not) is sent as audio/mpeg, an audio part named ``.mp3``, whatever its name says."""
    data = frame(version, bitrate, rate, padding=padding) * 3
    path = tmp_path / "recording"
    path.write_bytes(data)
    attachment = load(path, "recording")
    assert attachment.media_type == "audio/mpeg"
    assert attachment.kind == "audio"
    assert attachment.size == len(data)
    assert filename_for("recording", attachment.media_type) == "recording.mp3"


def test_a_file_cut_right_after_an_mp3_frame_header_is_still_an_mp3(tmp_path: Path) -> None:
    """Three bytes hold the sync, version, layer, bitrate and sample rate: enough to type it."""
    assert typed(tmp_path, header(3, 9, 0)[:3]) == "audio/mpeg"
    assert typed(tmp_path, header(2, 8, 0)[:3]) == "audio/mpeg"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(header(1, 9, 0) + b"\x00" * 400, id="reserved version (01)"),
        pytest.param(header(1, 8, 1) + b"\x00" * 400, id="reserved version, 48 kHz"),
        pytest.param(header(3, 9, 3) + b"\x00" * 400, id="reserved sample rate, odd bitrate"),
        pytest.param(header(3, 8, 3) + b"\x00" * 400, id="reserved sample rate, even bitrate"),
        pytest.param(header(2, 4, 3) + b"\x00" * 400, id="MPEG-2 reserved sample rate"),
        pytest.param(header(3, 0, 0) + b"\x00" * 400, id="free-format bitrate (0)"),
        pytest.param(header(3, 15, 0) + b"\x00" * 400, id="bad bitrate (15)"),
        pytest.param(header(3, 9, 0, layer=2) + b"\x00" * 400, id="layer II"),
        pytest.param(header(3, 9, 0, layer=3) + b"\x00" * 400, id="layer I"),
        pytest.param(b"\x00" + header(3, 9, 0)[1:] + b"\x00" * 400, id="first sync byte 00"),
        pytest.param(b"\xff\x1b\x90\x00" + b"\x00" * 400, id="sync bits of byte 2 clear"),
        pytest.param(b"\xff\xfeh\x00i\x00", id="UTF-16 BOM"),
    ],
)
def test_bytes_that_are_not_an_mp3_frame_header_are_not_typed_audio_mpeg(
    tmp_path: Path, data: bytes
) -> None:
    """Reserved versions, sample rates and bitrates, other layers and a broken sync word are
    not MP3: such a file (no suffix, not UTF-8) is sent as application/octet-stream."""
    assert typed(tmp_path, data) == "application/octet-stream"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "text/plain"),  # an empty file decodes as (empty) UTF-8 text
        (b"\xff", "application/octet-stream"),
        (b"\xff\xfb", "application/octet-stream"),  # the first two bytes of an MP3 frame
    ],
)
def test_a_file_shorter_than_a_frame_header_is_typed_not_crashed_on(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    """A file of fewer than 3 bytes cannot hold an MP3 frame header: it is typed, no crash."""
    assert typed(tmp_path, data) == expected


# ---- output schema files: read as UTF-8 everywhere, errors name the schema file -------------


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """A user whose locale is not UTF-8 (LANG=C without UTF-8 mode; Windows' cp1252)."""
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, old)


@pytest.mark.parametrize("name", ["s.json", "s.yaml"])
def test_a_utf8_schema_file_is_read_the_same_under_a_non_utf8_locale(
    tmp_path: Path, ascii_locale: None, name: str
) -> None:
    """A schema whose descriptions are not ASCII loads whatever the user's locale."""
    text = (
        '{"type": "object", "description": "Café – naïve 東京"}'
        if name.endswith(".json")
        else "type: object\ndescription: Café – naïve 東京\n"
    )
    (tmp_path / name).write_bytes(text.encode("utf-8"))
    schema = read_schema_file(name, tmp_path, "variants[0].output_schema.schema_file", "e.yaml")
    assert schema == {"type": "object", "description": "Café – naïve 東京"}


def test_malformed_yaml_in_a_schema_file_names_the_schema_file_and_its_line(
    tmp_path: Path,
) -> None:
    """The error points at the schema file (not the config, not 'None') and the bad line."""
    write(tmp_path / "schemas" / "s.yaml", "type: object\nproperties: [a, b\nrequired: x\n")
    with pytest.raises(ConfigError) as caught:
        read_schema_file("schemas/s.yaml", tmp_path, "variants[0].output_schema", "e.yaml")
    error = caught.value
    schema = str((tmp_path / "schemas" / "s.yaml").resolve())
    assert error.message.startswith("malformed YAML: ")
    assert error.file == schema
    assert error.line is not None
    assert str(error).startswith(f"{schema}:{error.line}:")


def test_a_control_character_in_a_yaml_schema_file_names_the_schema_file(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.yml", "type: object\ndescription: a\x01b\n")
    with pytest.raises(ConfigError) as caught:
        read_schema_file("s.yml", tmp_path, "w", "e.yaml")
    assert caught.value.file == str((tmp_path / "s.yml").resolve())
    assert caught.value.line == 2


# ---- templates: a sandbox violation says what, where, and how to fix it ----------------------

SANDBOX_FIX_TEXT = (
    "templates render in a sandbox: use the case's vars and Jinja's filters; names starting "
    "with '_' and Python internals are not reachable (docs/security.md)"
)


def _variant(content: str) -> Variant:
    messages = messages_from_config([{"role": "user", "content": content}])
    return Variant(id="v", messages=messages, source="/cfg/eval.yaml", where="variants[0]")


def test_a_template_naming_a_private_attribute_is_refused_with_the_sandbox_fix() -> None:
    """Refused when the config is read: the line, the file, the place and the fix."""
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(_variant("hello\n{{ question.__class__ }}"))
    error = caught.value
    assert error.message == (
        "template sandbox violation: access to '__class__' is not allowed (line 2 of the template)"
    )
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[0].messages[0].content[0]"
    assert error.fix == SANDBOX_FIX_TEXT
    assert str(error).endswith(f"\n  fix: {SANDBOX_FIX_TEXT}")


def test_a_sandbox_violation_at_render_carries_the_sandbox_fix() -> None:
    variant = _variant("{{ q|attr(n) }}")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(Case(id="c1", vars={"q": "a", "n": "__class__"}))
    assert caught.value.fix == SANDBOX_FIX_TEXT
    assert caught.value.message.endswith("(case 'c1') is not allowed (line 1 of the template)")


@pytest.mark.parametrize("line", [None, 0])
def test_a_sandbox_violation_without_a_template_line_names_none(line: int | None) -> None:
    """No line known: the message ends at 'is not allowed', with no '(line ...)' or filler."""
    error = sandbox_error("access to '_x'", line, file="/cfg/eval.yaml", where="variants[0]")
    assert error.message == "template sandbox violation: access to '_x' is not allowed"
    assert str(error) == (
        "/cfg/eval.yaml: variants[0]: template sandbox violation: access to '_x' is not "
        f"allowed\n  fix: {SANDBOX_FIX_TEXT}"
    )


# ---- EvalConfig.locate_error: only the config's own errors get its lines ----------------------

CONFIG = BASE  # the minimal config of test_config_errors.py


def test_an_error_about_the_config_gets_the_line_of_the_place_it_names(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path), where="cases[0]"))
    assert (error.line, error.column) == (10, 5)
    assert str(error) == f"{config.path}:10:5: cases[0]: bad"


def test_an_error_about_another_file_keeps_no_line_from_the_config(tmp_path: Path) -> None:
    """A cases file's error at ``cases[0]`` is not given the line of eval.yaml's cases[0]."""
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    other = str(tmp_path / "cases.jsonl")
    error = config.locate_error(ConfigError("bad", file=other, where="cases[0]"))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{other}: cases[0]: bad"


def test_an_error_that_already_has_a_line_keeps_it(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = ConfigError("bad", file=str(config.path), where="cases[0]", line=3, column=7)
    located = config.locate_error(error)
    assert (located.line, located.column) == (3, 7)
    assert str(located) == f"{config.path}:3:7: cases[0]: bad"


def test_an_error_naming_no_place_gets_no_line(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path)))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{config.path}: bad"


# ---- case files: read as UTF-8 whatever the locale -------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("cases.jsonl", '{"id": "c1", "q": "Café – naïve 東京"}\n'),
        ("cases.csv", "id,q\nc1,Café – naïve 東京\n"),
    ],
)
def test_a_utf8_case_file_is_read_the_same_under_a_non_utf8_locale(
    tmp_path: Path, ascii_locale: None, name: str, data: str
) -> None:
    if sys.flags.utf8_mode:
        pytest.skip("in UTF-8 mode every file is read as UTF-8: the locale cannot matter")
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8"))
    assert [row for _, row in READERS[path.suffix[1:]](path)] == [
        {"id": "c1", "q": "Café – naïve 東京"}
    ]
