"""Tests that kill mutants mutmut found alive in the structured-output spec and the image reader (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.attachments import load
from evalwh.config.loader import load_config
from evalwh.config.outputs import OutputSpec, parse_output_spec
from evalwh.errors import ConfigError
from tests.conftest import write
from tests.test_config_errors import BASE
from tests.test_survivors_case_files import refusal

SCHEMA_FIX = "write `schema: {type: object, properties: {...}}` or give `schema_file:`"

# ---- image sizes: width and height read from the header of real files ------------------------


def info_of(tmp_path: Path, name: str, data: bytes) -> dict[str, Any]:
    path = tmp_path / name
    path.write_bytes(data)
    return dict(load(path, name).info)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + bytes([8, 6, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0" * 4 + b"\0" * 32


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b"\x2c" + b"\0" * 40


def jpeg_with_ihdr_in_app1(width: int, height: int) -> bytes:
    """A JPEG whose APP1 segment happens to hold the bytes ``IHDR`` at offset 12 (where a PNG
    has its IHDR chunk), then its SOF0 frame header with the real size."""
    app1 = b"\xff\xe1" + struct.pack(">H", 16) + b"Exif\0\0" + b"IHDR" + b"\x7f\x00\x00\x01"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app1 + sof0 + b"\0" * 32 + b"\xff\xd9"


def riff_webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8x(width: int, height: int) -> bytes:
    """An extended WebP: its VP8X chunk, then (as always) the chunk of the image itself."""
    vp8x = b"\x10\0\0\0" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    image = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + b"\0" * 4 + b"\0"
    body = b"WEBP" + b"VP8X" + struct.pack("<I", 10) + vp8x + image
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\x50\x01\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\0" * 20
    return riff_webp(b"VP8 ", frame)


def test_a_png_reports_its_width_and_height(tmp_path: Path) -> None:
    assert info_of(tmp_path, "a.png", png(640, 480)) == {"width": 640, "height": 480}


def test_a_png_header_is_read_unsigned_never_as_a_negative_size(tmp_path: Path) -> None:
    # a header with the top bit set (a broken or hostile file) is 2**31 wide, not -2**31
    info = info_of(tmp_path, "big.png", png(2**31, 2**31 + 5))
    assert info == {"width": 2**31, "height": 2**31 + 5}


def test_a_gif_wider_than_32767_pixels_keeps_its_size(tmp_path: Path) -> None:
    # GIF sizes are unsigned 16-bit: 40000 x 50000 is a valid GIF
    assert info_of(tmp_path, "wide.gif", gif(40000, 50000)) == {"width": 40000, "height": 50000}


def test_a_jpeg_is_sized_from_its_frame_header_even_with_ihdr_bytes_in_it(tmp_path: Path) -> None:
    data = jpeg_with_ihdr_in_app1(800, 600)
    assert load(write_bytes(tmp_path / "photo.jpg", data), "photo").media_type == "image/jpeg"
    assert info_of(tmp_path, "photo2.jpg", data) == {"width": 800, "height": 600}


def test_an_extended_webp_reports_its_size_not_the_next_chunks_bytes(tmp_path: Path) -> None:
    info = info_of(tmp_path, "x.webp", webp_vp8x(1024, 768))
    assert info == {"width": 1024, "height": 768}


def test_a_lossy_webp_reports_its_size(tmp_path: Path) -> None:
    assert info_of(tmp_path, "lossy.webp", webp_vp8(320, 200)) == {"width": 320, "height": 200}


# ---- the output spec: bad schemas are config errors naming file, place and fix --------------


def config_with(tmp_path: Path, variant_extra: str = "", scorecard_extra: str = "") -> Path:
    text = BASE.replace(
        '        content: "{{ question }}"\n', '        content: "{{ question }}"\n' + variant_extra
    )
    return write(tmp_path / "eval.yaml", text + scorecard_extra)


def test_a_schema_file_that_is_not_an_object_is_refused_with_file_place_and_fix(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.json", "[1, 2]")
    cfg = config_with(tmp_path, "    output_schema:\n      schema_file: s.json\n")
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "the output schema must be a JSON Schema object, got list",
        str(cfg),
        "variants[0].output_schema.schema",
        SCHEMA_FIX,
    )
    assert str(e) == (
        f"{cfg}: variants[0].output_schema.schema: the output schema must be a JSON Schema "
        f"object, got list\n  fix: {SCHEMA_FIX}"
    )


def test_a_criterion_schema_file_that_is_a_string_is_refused_naming_its_type(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s.json", '"an object please"')
    crit = "  - name: shape\n    type: json-schema\n    schema_file: s.json\n    request: auto\n"
    cfg = config_with(tmp_path, scorecard_extra=crit)
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "the output schema must be a JSON Schema object, got str",
        str(cfg),
        "scorecard[1].request.schema",
        SCHEMA_FIX,
    )


def test_an_unknown_mode_is_refused_with_file_place_and_the_modes_to_use() -> None:
    # a config file's mode is refused earlier by the config schema; this is the spec
    # reader's own refusal, the one every other caller of parse_output_spec gets
    with pytest.raises(ConfigError) as err:
        parse_output_spec({"schema": {"type": "object"}, "mode": "sideways"}, "v.out", "e.yaml")
    e = err.value
    assert (e.message, e.file, e.where, e.fix) == (
        "unknown mode 'sideways'",
        "e.yaml",
        "v.out.mode",
        "use one of: auto, native, prompted",
    )
    assert (
        str(e)
        == "e.yaml: v.out.mode: unknown mode 'sideways'\n  fix: use one of: auto, native, prompted"
    )


def test_the_schema_is_read_from_the_spec_itself_when_not_given_from_a_file() -> None:
    spec = parse_output_spec({"schema": {"type": "array"}, "name": "items"}, "v.out", "e.yaml")
    assert spec == OutputSpec(schema={"type": "array"}, mode="auto", name="items", strict=True)
    # a schema read from a file wins over the mapping's own
    from_file = parse_output_spec({"schema": {"type": "array"}}, "w", "f", schema={"type": "null"})
    assert from_file.schema == {"type": "null"}


def test_strict_false_and_the_mode_are_kept_from_the_config(tmp_path: Path) -> None:
    cfg = config_with(
        tmp_path,
        "    output_schema:\n      schema: {type: object}\n      strict: false\n      mode: prompted\n",
    )
    config = load_config(cfg)
    assert config.variants[0].output == OutputSpec(
        schema={"type": "object"}, mode="prompted", name="answer", strict=False
    )


ASKS = "  - {{name: {name}, type: json-schema, schema: {{type: object}}, request: {mode}}}\n"


def test_a_second_criterion_asking_for_a_schema_is_refused_at_its_request(
    tmp_path: Path,
) -> None:
    cfg = config_with(
        tmp_path,
        scorecard_extra=ASKS.format(name="a", mode="auto") + ASKS.format(name="b", mode="auto"),
    )
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "more than one json-schema criterion has `request:`",
        str(cfg),
        "scorecard[2].request",
        "ask for one schema per run (or give the variants their own output_schema)",
    )


def test_a_criterion_asks_every_variant_for_its_schema_in_the_mode_it_names(
    tmp_path: Path,
) -> None:
    cfg = config_with(tmp_path, scorecard_extra=ASKS.format(name="a", mode="native"))
    assert load_config(cfg).variants[0].output == OutputSpec(
        schema={"type": "object"}, mode="native", name="answer", strict=True
    )


def test_without_an_output_schema_or_a_request_a_variant_asks_for_no_json(
    tmp_path: Path,
) -> None:
    assert load_config(config_with(tmp_path)).variants[0].output is None


@pytest.mark.parametrize(
    ("variant", "criterion", "where"),
    [
        ("    output_schema: {schema: {type: object}, schema_file: s.json}\n", "",
         "variants[0].output_schema"),
        ("    output_schema: {mode: native}\n", "", "variants[0].output_schema"),
        ("", "  - {name: a, type: json-schema, schema: {type: object}, schema_file: s.json}\n",
         "scorecard[1]"),
        ("", "  - {name: a, type: json-schema, request: auto}\n", "scorecard[1]"),
    ],
)  # fmt: skip
def test_a_place_giving_both_or_neither_of_schema_and_schema_file_is_refused_saying_so(
    tmp_path: Path, variant: str, criterion: str, where: str
) -> None:
    """Not an unknown-key error about a key the place allows (a criterion with both used to
    be refused as "unknown key 'request'; did you mean 'request'?")."""
    write(tmp_path / "s.json", '{"type": "array"}')
    cfg = config_with(tmp_path, variant, criterion)
    e = refusal(lambda: load_config(cfg))
    assert (e.message, e.file, e.where, e.fix) == (
        "needs exactly one of 'schema' or 'schema_file'",
        str(cfg),
        where,
        "give either 'schema' or 'schema_file', not both and not neither",
    )


def test_the_stored_spec_names_its_mode_and_strict() -> None:
    spec = OutputSpec(schema={"type": "string"}, mode="native", name="n", strict=True)
    assert spec.to_dict() == {
        "schema": {"type": "string"},
        "mode": "native",
        "name": "n",
        "strict": True,
    }


# ---- the digest (the part of the cache key a spec gives) ------------------------------------


def test_the_digest_is_the_compact_canonical_json_of_the_spec() -> None:
    # pinned: a change of this text changes every structured request's cache key, so a
    # warehouse's cached answers would all miss after an upgrade
    spec = OutputSpec(schema={"type": "object", "required": ["a"]}, mode="auto")
    assert spec.digest_text() == (
        '{"mode":"auto","name":"answer","schema":{"required":["a"],"type":"object"},"strict":true}'
    )


def test_reordering_the_keys_of_a_schema_keeps_its_digest() -> None:
    one = OutputSpec(schema={"type": "object", "properties": {"a": {}, "b": {}}})
    two = OutputSpec(schema={"properties": {"b": {}, "a": {}}, "type": "object"})
    assert one.digest_text() == two.digest_text()


@pytest.mark.parametrize(
    "change",
    [
        {"schema": {"type": "array"}},
        {"mode": "prompted"},
        {"mode": "native"},
        {"name": "other"},
        {"strict": False},
    ],
)
def test_changing_any_part_of_the_spec_changes_its_digest(change: dict[str, Any]) -> None:
    base = {"schema": {"type": "object"}, "mode": "auto", "name": "answer", "strict": True}
    same = OutputSpec(**json.loads(json.dumps(base)))
    assert OutputSpec(**base).digest_text() == same.digest_text()
    assert OutputSpec(**{**base, **change}).digest_text() != same.digest_text()


# ---- the mode chosen per provider -----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "mode", "chosen"),
    [
        ("openai", "auto", "native"),
        ("openai", "prompted", "prompted"),
        ("anthropic", "native", "native"),
        ("mock", "auto", "native"),
        ("openai-compatible", "auto", "prompted"),
        ("command", "auto", "prompted"),  # declares no structured_output at all
        ("command", "native", "prompted"),
    ],
)
def test_the_mode_chosen_per_provider(provider: str, mode: str, chosen: str) -> None:
    spec = OutputSpec(schema={"type": "object"}, mode=mode)
    assert spec.mode_for(providers.provider_class(provider)) == chosen


def test_a_provider_class_without_the_flag_is_prompted() -> None:
    class Plugin:
        """A third-party provider that says nothing about structured output."""

    assert OutputSpec(schema={}).mode_for(Plugin) == "prompted"
