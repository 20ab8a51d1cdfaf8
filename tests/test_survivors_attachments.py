"""Tests that kill mutants mutmut found alive in the attachment loader, the provider capability table and the Anthropic reply parser (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from evalwh import providers
from evalwh.config import attachments
from evalwh.config.attachments import case_files, load, sniff, split_file_columns
from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.capabilities import MB, Capability, capability, check_parts, media_tokens
from tests.fakes import media
from tests.test_survivors_providers import gemini, part, refusal

CONFINED_FIX = (
    "a cases file may only name files under the folder of eval.yaml: copy or "
    "move the file there (eval.yaml's own files: may name any path)"
)
UNREADABLE_FIX = (
    "check the path; it is relative to the config's folder (a file:// value in a "
    "cases file: to that file's folder)"
)


# ---- media types from magic bytes -------------------------------------------------------------


def typed(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return load(path, name).media_type


def test_an_ogg_file_is_typed_audio_ogg_from_its_capture_pattern(tmp_path: Path) -> None:
    ogg = b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x1evorbis"
    assert sniff(ogg) == "audio/ogg"
    assert typed(tmp_path, "clip", ogg) == "audio/ogg"  # no suffix: the content decides
    assert sniff(b"oggs\x00\x02" + b"\x00" * 20) is None  # the pattern is case-sensitive
    assert sniff(b"OGGS\x00\x02" + b"\x00" * 20) is None


def test_a_flac_file_is_typed_audio_flac_from_its_marker(tmp_path: Path) -> None:
    flac = b"fLaC\x00\x00\x00\x22" + b"\x10\x00" * 17
    assert sniff(flac) == "audio/flac"
    assert typed(tmp_path, "song", flac) == "audio/flac"
    for almost in (b"flac", b"FLAC"):
        assert sniff(almost + b"\x00\x00\x00\x22") is None


def test_a_quicktime_movie_is_typed_video_quicktime_from_its_brand(tmp_path: Path) -> None:
    # ftyp box: size, "ftyp", major brand "qt  ", minor version, compatible brands
    mov = struct.pack(">I", 20) + b"ftypqt  \x00\x00\x02\x00qt  " + b"\x00\x00\x00\x08wide"
    assert sniff(mov) == "video/quicktime"
    assert typed(tmp_path, "movie", mov) == "video/quicktime"
    # other brands are MP4 video; an upper-case "QT  " is not QuickTime's brand
    assert sniff(media.mp4()) == "video/mp4"
    assert sniff(struct.pack(">I", 20) + b"ftypQT  \x00\x00\x02\x00QT  ") == "video/mp4"


def test_webm_is_told_from_matroska_by_a_doctype_within_the_first_64_bytes() -> None:
    ebml = b"\x1a\x45\xdf\xa3"
    assert sniff(media.webm()) == "video/webm"
    # "webm" ending at byte 64 is in the header the sniffer reads; one byte later is not
    ends_at_64 = ebml + b"\x00" * (60 - len(ebml)) + b"webm"
    assert len(ends_at_64) == 64
    assert sniff(ends_at_64) == "video/webm"
    assert sniff(ebml + b"\x00" * (61 - len(ebml)) + b"webm") == "video/x-matroska"


def test_a_riff_file_is_a_wav_only_with_the_wave_form_type(tmp_path: Path) -> None:
    assert sniff(media.wav(0.01)) == "audio/wav"
    avi = b"RIFF\xf4\x01\x00\x00AVI LIST" + b"\x00" * 24  # size 500: \xf4 is not UTF-8
    assert sniff(avi) is None  # an AVI is RIFF, not WAVE
    # then the suffix decides, not the RIFF prefix
    assert typed(tmp_path, "movie.avi", avi) == mimetypes.guess_type("movie.avi")[0]
    assert typed(tmp_path, "movie", avi) == "application/octet-stream"
    rifx = b"RIFX\x24\x00\x00\x00WAVEfmt " + b"\x00" * 24
    assert sniff(rifx) is None  # WAVE without RIFF (big-endian RIFX) is not typed a WAV


# ---- what the header tells: WAV length, PDF pages -------------------------------------------


def test_a_wav_length_is_recorded_to_the_millisecond(tmp_path: Path) -> None:
    path = tmp_path / "voice.wav"
    path.write_bytes(media.wav(12345 / 8000, rate=8000))  # 1.543125 s
    found = load(path, "voice")
    assert found.info == {"seconds": 1.543}
    assert attachments.info(found.sha256) == {"seconds": 1.543}


def test_pages_are_counted_only_in_pdfs(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("a note about PDFs: << /Type /Page >> and /Type /Page again\n")
    found = load(path, "notes")
    assert found.media_type == "text/plain"
    assert found.info == {}  # no "pages": a text file is not a document of pages


def test_a_pdf_exactly_at_the_page_scan_limit_still_gets_its_pages_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = media.pdf()
    at_limit, over = tmp_path / "at.pdf", tmp_path / "over.pdf"
    at_limit.write_bytes(data)
    over.write_bytes(data + b"\n")
    monkeypatch.setattr(attachments, "PDF_PAGE_SCAN_LIMIT", len(data))
    assert load(at_limit, "doc").info == {"pages": 1}
    assert load(over, "doc").info == {}  # one byte over the limit: pages are not scanned


# ---- hash and size, remembered by path ------------------------------------------------------


def test_two_files_of_the_same_size_and_time_keep_their_own_hashes(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"cat\n")
    second.write_bytes(b"dog\n")
    when = 1_700_000_000_000_000_000
    os.utime(first, ns=(when, when))
    os.utime(second, ns=(when, when))
    a, b = load(first, "a"), load(second, "b")
    assert a.sha256 == hashlib.sha256(b"cat\n").hexdigest()
    assert b.sha256 == hashlib.sha256(b"dog\n").hexdigest()
    assert (a.size, b.size) == (4, 4)
    assert attachments.path_of(b.sha256) == second


def test_a_folder_named_as_a_file_is_refused_with_its_place(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    with pytest.raises(ConfigError) as info:
        load(folder, "photo", file="eval.yaml", where="cases[0].files.photo")
    err = info.value
    assert err.message == f"cannot read the attached file {folder}: it is a folder"
    assert (err.file, err.where) == ("eval.yaml", "cases[0].files.photo")
    assert err.fix == UNREADABLE_FIX


def test_an_os_error_without_a_description_is_shown_by_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(media.png())

    def fail(path: Path, size: int) -> Any:
        raise OSError("the network drive went away")

    monkeypatch.setattr(attachments, "_hash_file", fail)
    with pytest.raises(ConfigError) as info:
        load(path, "photo", file="eval.yaml", where="cases[0].files.photo")
    assert info.value.message == (
        f"cannot read the attached file {path}: the network drive went away"
    )


# ---- confinement of a cases file's files ----------------------------------------------------


def test_a_cases_file_naming_a_file_through_dotdot_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    root.mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(media.png())
    with pytest.raises(ConfigError) as info:
        case_files(
            {"photo": "../secret.png"},
            root,
            file="cases.yaml",
            where="cases[0].files",
            within=root,
        )
    err = info.value
    assert err.message == (
        f"'../secret.png' resolves to {secret}, outside the config's folder {root}"
    )
    assert (err.file, err.where) == ("cases.yaml", "cases[0].files.photo")
    assert err.fix == CONFINED_FIX


def test_a_cases_file_naming_a_file_through_a_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    root.mkdir()
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("private\n")
    (root / "key").symlink_to(secret)
    row = {"question": "what is it?", "doc": "file://key"}
    with pytest.raises(ConfigError) as info:
        split_file_columns(row, root, file="cases.csv", line=2, within=root)
    err = info.value
    assert err.message == f"'file://key' resolves to {secret}, outside the config's folder {root}"
    assert (err.file, err.where) == ("cases.csv", "line 2, column doc")
    assert err.fix == CONFINED_FIX
    assert str(err) == (f"cases.csv: line 2, column doc: {err.message}\n  fix: {CONFINED_FIX}")


# ---- what a provider takes ------------------------------------------------------------------


def test_an_unnamed_url_part_is_named_by_its_url() -> None:
    url = "https://example.invalid/a.png"
    err = refusal(gemini(), {"type": "image", "url": url})
    assert err.message == (
        f"case 'c1': model 'g' (google gemini-2.5-flash) does not accept the image part "
        f"'{url}' (a URL)"
    )
    assert (err.file, err.where) == ("eval.yaml", "variant 'v' messages[0].content[0]")


def test_a_refused_media_type_names_the_config_file() -> None:
    err = refusal(gemini(), part("video", "video/mp4"))
    assert err.message == (
        "case 'c1': model 'g' (google gemini-2.5-flash) does not accept the video part "
        "'myvideo' (video/mp4)"
    )
    assert (err.file, err.where) == ("eval.yaml", "variant 'v' messages[0].content[0]")
    assert str(err).startswith("eval.yaml: variant 'v' messages[0].content[0]: case 'c1'")


def test_anthropics_request_limit_is_met_exactly_by_files_and_a_url_adds_nothing() -> None:
    model = ModelSpec(id="a", provider="anthropic", model="claude-sonnet-4-5")
    pdf = part("file", "application/pdf", 24 * MB)  # 32 MB of base64: exactly the limit
    url = {"type": "image", "url": "https://example.invalid/a.png"}  # no bytes: sent as a URL
    check_parts(model, [{"role": "user", "content": [pdf]}], "c1", "v", "eval.yaml")
    check_parts(model, [{"role": "user", "content": [pdf, url]}], "c1", "v", "eval.yaml")
    err = refusal(model, part("file", "application/pdf", 24 * MB + 1))
    assert err.message.endswith(": 32 MB per request")


def test_a_part_without_a_type_is_text_not_a_file() -> None:
    messages = [{"role": "user", "content": [{"text": "hello"}]}]
    check_parts(gemini(), messages, "c1", "v", "eval.yaml")  # nothing to refuse
    assert media_tokens("anthropic", messages) == (0, 0)


def test_media_tokens_add_up_every_part_and_count_every_unknown(tmp_path: Path) -> None:
    small, large = tmp_path / "small.png", tmp_path / "large.png"
    small.write_bytes(media.png(100, 75))  # 7,500 px: 10 tokens for anthropic
    large.write_bytes(media.png(150, 100))  # 15,000 px: 20 tokens
    parts = [load(small, "small").part("image"), load(large, "large").part("image")]
    urls = [
        {"type": "image", "url": "https://example.invalid/1.png"},
        {"type": "image", "url": "https://example.invalid/2.png"},
    ]
    assert media_tokens("anthropic", [{"role": "user", "content": parts}]) == (30, 0)
    assert media_tokens("anthropic", [{"role": "user", "content": urls}]) == (0, 2)


PNG_ONLY = Capability({"image": frozenset({"image/png"})})


class PlugProvider:
    """A plug-in provider that declares what it takes."""

    capabilities = PNG_ONLY

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec


def test_a_plugin_providers_declared_capabilities_are_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = {**providers.BUILTIN, "plug": f"{__name__}:PlugProvider"}
    monkeypatch.setattr(providers, "available", lambda: found)
    model = ModelSpec(id="p", provider="plug", model="m1")
    assert capability(model) is PNG_ONLY
    check_parts(model, [{"role": "user", "content": [part("image", "image/png")]}], "c1", "v", "f")
    err = refusal(model, part("image", "image/jpeg"))
    assert err.message == (
        "case 'c1': model 'p' (plug m1) does not accept the image part 'myimage' (image/jpeg)"
    )
    assert err.fix.startswith("convert it to one of image/png, or use a model that accepts it")


# ---- Anthropic's reply ----------------------------------------------------------------------


def anthropic_reply(**changes: Any) -> Any:
    spec = ModelSpec(id="a", provider="anthropic", model="claude-sonnet-4-5")
    data = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Paris."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    data.update(changes)
    return AnthropicProvider(spec).parse_body(data)


def test_a_reply_whose_content_is_not_a_list_says_so() -> None:
    with pytest.raises(TypeError) as info:
        anthropic_reply(content="Paris.")
    assert str(info.value) == "'content' is not a list"


def test_a_forced_tool_call_after_a_text_block_answers_with_the_tools_input() -> None:
    found = anthropic_reply(
        content=[
            {"type": "text", "text": "Here is the answer:"},
            {"type": "tool_use", "id": "toolu_01", "name": "answer", "input": {"b": 1}},
        ],
        stop_reason="tool_use",
    )
    assert found.text == '{"b": 1}'
    assert found.extra == {"stop_reason": "tool_use"}


def test_a_structured_answer_is_sorted_json_keeping_non_ascii_text() -> None:
    found = anthropic_reply(
        content=[
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "answer",
                "input": {"ville": "Zürich", "pays": "Suisse", "accent": "é"},
            }
        ],
        stop_reason="tool_use",
    )
    assert found.text == '{"accent": "é", "pays": "Suisse", "ville": "Zürich"}'


def test_blocks_that_are_not_objects_are_skipped() -> None:
    found = anthropic_reply(content=["stray", {"type": "text", "text": "Paris."}])
    assert found.text == "Paris."


def test_cache_creation_and_read_tokens_are_kept() -> None:
    found = anthropic_reply(
        usage={
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_creation_input_tokens": 2048,
            "cache_read_input_tokens": 512,
        }
    )
    assert (found.text, found.input_tokens, found.output_tokens) == ("Paris.", 12, 3)
    assert found.extra == {
        "stop_reason": "end_turn",
        "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 512,
    }


@pytest.mark.parametrize("bad", ["12", 12.0, None, True])
def test_token_counts_that_are_not_integers_are_dropped(bad: Any) -> None:
    found = anthropic_reply(usage={"input_tokens": bad, "output_tokens": 3})
    assert found.input_tokens is None
    assert found.output_tokens == 3
