"""Multimodal cases: attachments typed by content and hashed, each provider's wire format per
part type against the fake server, capability and size errors at validation, the cache
keyed on content, the artifact store, file:// columns and directory sources."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh import load_config, providers
from evalwh.api import validate
from evalwh.config import attachments, secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.config.prompts import CompiledVariant
from evalwh.errors import ConfigError
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.capabilities import estimate_tokens
from tests.conftest import run_cli, write
from tests.fakes import media
from tests.fakes.servers import FakeLLMServer, wire

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Tk3yAnThr0p1c" * 4,
    "OPENAI_API_KEY": "sk-proj-" + "Tk3y0pen41" * 5,
    "GEMINI_API_KEY": "AIza" + "GeminiTestKey0123456789abcdefghijklm"[:35],
}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setattr(secrets, "_loaded", set())


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def files_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "media"
    folder.mkdir(exist_ok=True)
    for name, data in {
        "dog.png": media.png(4, 3),
        "cat.jpg": media.jpeg(640, 480),
        "contract.pdf": media.pdf(),
        "notes.txt": b"plain notes\n",
        "hello.wav": media.wav(1.0),
        "clip.mp4": media.mp4(),
        "clip.webm": media.webm(),
    }.items():
        (folder / name).write_bytes(data)
    return folder


MODELS = {
    "mock": "{id: m, provider: mock, mock: {default: ok}}",
    "anthropic": "{id: claude, provider: anthropic, model: claude-sonnet-4, base_url: URL}",
    "openai": "{id: gpt, provider: openai, model: gpt-4o, base_url: URL}",
    "openai-audio": "{id: gpt-audio, provider: openai, model: gpt-4o-audio-preview, "
    "base_url: URL, price: 0}",
    "google": "{id: gemini, provider: google, model: gemini-2.5-flash, base_url: URL}",
    "command": "{id: cmd, provider: command, command: [python, echo.py]}",
}


def config(
    tmp_path: Path,
    parts: str,
    files: str = "{photo: media/dog.png}",
    model: str = "mock",
    url: str = "http://127.0.0.1:9",
) -> Path:
    files_folder(tmp_path)
    return write(
        tmp_path / "eval.yaml",
        f"models:\n  - {MODELS[model].replace('URL', url)}\n"
        "variants:\n  - id: v\n    messages:\n      - role: user\n        content:\n"
        + "".join(f"          - {p}\n" for p in parts.split("|"))
        + f"cases:\n  - id: c1\n    files: {files}\n"
        "scorecard:\n  - {name: ok, type: contains, value: ok}\n",
    )


def rendered(cfg: Path) -> list[dict[str, Any]]:
    loaded = load_config(cfg)
    return CompiledVariant(loaded.variants[0]).render(loaded.cases[0])


def send(model: ModelSpec, messages: list[dict[str, Any]]) -> Any:
    prov = providers.create(model)

    async def go() -> Any:
        try:
            return await prov.complete(Request(model, messages, Case(id="c1"), "v"))
        finally:
            await prov.aclose()

    return asyncio.run(go())


def model_of(cfg: Path) -> ModelSpec:
    return load_config(cfg).models[0]


# ---- types from content, hashes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "media_type", "info"),
    [
        ("dog.png", "image/png", {"width": 4, "height": 3}),
        ("cat.jpg", "image/jpeg", {"width": 640, "height": 480}),
        ("contract.pdf", "application/pdf", {"pages": 1}),
        ("notes.txt", "text/plain", {}),
        ("hello.wav", "audio/wav", {"seconds": 1.0}),
        ("clip.mp4", "video/mp4", {}),
        ("clip.webm", "video/webm", {}),
    ],
)
def test_media_type_and_header_facts_come_from_the_content(
    tmp_path: Path, name: str, media_type: str, info: dict[str, Any]
) -> None:
    folder = files_folder(tmp_path)
    disguised = tmp_path / f"renamed-{name}.bin"  # the suffix says nothing (or lies)
    disguised.write_bytes((folder / name).read_bytes())
    found = attachments.load(disguised, "x")
    assert found.media_type == media_type
    assert found.info == info
    assert found.sha256 == hashlib.sha256(disguised.read_bytes()).hexdigest()
    assert found.size == disguised.stat().st_size


def test_a_suffix_that_lies_loses_to_the_content(tmp_path: Path) -> None:
    lying = tmp_path / "photo.jpg"
    lying.write_bytes(media.png())
    assert attachments.load(lying, "photo").media_type == "image/png"
    assert attachments.sniff(b"GIF87a" + b"\x00" * 8) == "image/gif"
    assert attachments.sniff(b"\x1a\x45\xdf\xa3\x80") == "video/x-matroska"  # no webm doctype
    assert attachments.sniff(b"ID3\x03") == "audio/mpeg"
    assert attachments.sniff(b"\xff\xfb\x90\x00") == "audio/mpeg"  # MPEG-1 layer III frame
    assert attachments.sniff(b"\xff\xfe\x00") is None  # a UTF-16 BOM, not a frame
    assert attachments.sniff(b"\xff\xfb\xf0\x00") is None  # reserved bitrate
    assert attachments.sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert attachments.sniff(b"\x00\x00\x00\x18ftypM4A ") == "audio/mp4"
    assert attachments.sniff(b"hello") is None


def test_a_file_is_hashed_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = files_folder(tmp_path)
    calls = []
    real = attachments._hash_file
    monkeypatch.setattr(attachments, "_hash_file", lambda p, f, s: calls.append(p) or real(p, f, s))
    attachments._BY_STAT.clear()
    for _ in range(3):
        attachments.load(folder / "dog.png", "photo")
    assert len(calls) == 1


def test_a_case_names_its_files_and_the_part_holds_the_hash_not_the_bytes(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'text: "Describe"|image: "{{ files.photo }}"')
    messages = rendered(cfg)
    png = media.png(4, 3)
    assert messages[0]["content"] == [
        {"type": "text", "text": "Describe"},
        {
            "type": "image",
            "name": "photo",
            "sha256": hashlib.sha256(png).hexdigest(),
            "media_type": "image/png",
            "bytes": len(png),
        },
    ]
    assert b64(png) not in json.dumps(messages)


def test_a_text_template_sees_a_reference_never_the_bytes(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'text: "file: {{ files.photo }}"')
    assert rendered(cfg)[0]["content"][0]["text"] == "file: attachment://photo"


@pytest.mark.parametrize(
    ("parts", "files", "message"),
    [
        ('image: "{{ files.scan }}"', "{photo: media/dog.png}", "case 'c1' has no such file"),
        (
            'image: "{{ files.scan }}"',
            "{photo: media/dog.png}",
            "case's files (eval.yaml cases[0]): photo",
        ),
        ('image: "{{ files.doc }}"', "{doc: media/contract.pdf}", "which is application/pdf"),
        ('audio: "{{ files.photo }}"', "{photo: media/dog.png}", "not an audio"),
        ('image: "{{ files.photo }}"', "{photo: media/gone.png}", "cannot read the attached"),
        ('image: "../{{ files.photo }}"', "{photo: media/dog.png}", "not a file of the case"),
    ],
)
def test_bad_file_references_are_config_errors(
    tmp_path: Path, parts: str, files: str, message: str
) -> None:
    cfg = config(tmp_path, parts, files)
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert message in str(info.value), str(info.value)
    assert "fix:" in str(info.value)


def test_a_literal_path_is_a_prompt_file_next_to_the_config(tmp_path: Path) -> None:
    cfg = config(tmp_path, "image: media/cat.jpg")
    part = rendered(cfg)[0]["content"][0]
    assert part["name"] == "cat.jpg" and part["media_type"] == "image/jpeg"


def test_unknown_keys_in_parts_and_cases_stay_errors(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'image: "{{ files.photo }}"')
    text = cfg.read_text()
    write(cfg, text.replace("    files:", "    filez:"))
    with pytest.raises(ConfigError, match="unknown key 'filez'"):
        load_config(cfg)
    write(cfg, text.replace('- image: "{{ files.photo }}"', '- {image: x.png, alt: "a dog"}'))
    with pytest.raises(ConfigError):
        load_config(cfg)


# ---- wire formats, per provider and part type ----------------------------------------------


def test_anthropic_wire_format(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        cfg = config(
            tmp_path,
            'text: "Read these"|image: "{{ files.photo }}"|file: "{{ files.doc }}"'
            '|file: "{{ files.notes }}"|image: https://example.invalid/cat.jpg',
            "{photo: media/dog.png, doc: media/contract.pdf, notes: media/notes.txt}",
            model="anthropic",
            url=server.url,
        )
        send(model_of(cfg), rendered(cfg))
        content = server.last.body["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "Read these"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": b64(media.png(4, 3))},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64(media.pdf())},
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain notes\n"},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.jpg"}},
    ]


@pytest.mark.parametrize("url", ["HTTPS://example.invalid/Cat.jpg", "Http://example.invalid/x.png"])
def test_a_url_scheme_in_any_case_is_a_url_not_a_path(tmp_path: Path, url: str) -> None:
    # RFC 3986: schemes are case-insensitive. Read as a path, HTTPS://h/x failed as a missing
    # file; MCP's confinement (which skips URLs the same way) takes it too.
    from evalwh.config.confinement import load_confined

    cfg = config(tmp_path, f"image: {url}")
    assert rendered(cfg)[0]["content"] == [{"type": "image", "url": url}]
    assert load_confined(cfg, tmp_path, allow_code=False).variants[0].id == "v"
    assert not attachments.is_url("file://x.png") and not attachments.is_url("https:/x")


def test_openai_wire_format(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        cfg = config(
            tmp_path,
            'text: "Listen and read"|image: "{{ files.photo }}"|audio: "{{ files.voice }}"'
            '|file: "{{ files.doc }}"',
            "{photo: media/cat.jpg, voice: media/hello.wav, doc: media/contract.pdf}",
            model="openai-audio",
            url=f"{server.url}/v1",
        )
        send(model_of(cfg), rendered(cfg))
        body = server.last.body
    assert server.last.path == "/v1/chat/completions"
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Listen and read"},
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64(media.jpeg())}"}},
        {"type": "input_audio", "input_audio": {"data": b64(media.wav(1.0)), "format": "wav"}},
        {
            "type": "file",
            "file": {
                "filename": "doc.pdf",
                "file_data": f"data:application/pdf;base64,{b64(media.pdf())}",
            },
        },
    ]


def test_google_wire_format_headers_and_url(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        cfg = config(
            tmp_path,
            'text: "What is shown and said?"|image: "{{ files.photo }}"|audio: "{{ files.voice }}"'
            '|file: "{{ files.doc }}"',
            "{photo: media/dog.png, voice: media/hello.wav, doc: media/contract.pdf}",
            model="google",
            url=server.url,
        )
        messages = [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            *rendered(cfg),
            {"role": "assistant", "content": [{"type": "text", "text": "A dog."}]},
            {"role": "user", "content": [{"type": "text", "text": "Colour?"}]},
        ]
        spec = model_of(cfg)
        spec = ModelSpec(
            **{
                **spec.__dict__,
                "params": {"temperature": 0, "max_tokens": 50, "top_p": 0.9, "stop": "END"},
            }
        )
        result = send(spec, messages)
        req = server.last
    assert req.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert req.header("x-goog-api-key") == KEYS["GEMINI_API_KEY"]
    assert req.header("authorization") is None
    assert req.body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "What is shown and said?"},
                    {"inlineData": {"mimeType": "image/png", "data": b64(media.png(4, 3))}},
                    {"inlineData": {"mimeType": "audio/wav", "data": b64(media.wav(1.0))}},
                    {"inlineData": {"mimeType": "application/pdf", "data": b64(media.pdf())}},
                ],
            },
            {"role": "model", "parts": [{"text": "A dog."}]},
            {"role": "user", "parts": [{"text": "Colour?"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {
            "temperature": 0,
            "topP": 0.9,
            "maxOutputTokens": 50,
            "stopSequences": ["END"],
        },
    }
    assert result.text == "Colour?"  # the fake echoes the last user text


def spec_google(url: str, **options: Any) -> ModelSpec:
    return ModelSpec(
        id="g", provider="google", model="gemini-2.5-flash", options={"base_url": url, **options}
    )


TEXT = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


@pytest.mark.parametrize(
    ("fixture", "text", "tokens", "extra"),
    [
        ("plain", "A red square on a white background.", (265, 9), {}),
        ("thinking", "Red.", (290, 43), {"reasoning_tokens": 41}),
        ("blocked_prompt", "", (12, None), {"finish_reason": "content_filter"}),
    ],
)
def test_google_parses_documented_responses(
    fixture: str, text: str, tokens: tuple[int, int | None], extra: dict[str, Any]
) -> None:
    with FakeLLMServer() as server:
        server.script(wire("gemini", fixture))
        result = send(spec_google(server.url), TEXT)
    assert result.text == text
    assert (result.input_tokens, result.output_tokens) == tokens
    for key, value in extra.items():
        assert getattr(result, key) == value


def test_google_key_falls_back_to_google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaFallbackKey")
    with FakeLLMServer() as server:
        send(spec_google(server.url), TEXT)
        assert server.last.header("x-goog-api-key") == "AIzaFallbackKey"
    monkeypatch.delenv("GOOGLE_API_KEY")
    with FakeLLMServer() as server, pytest.raises(ProviderError, match="GEMINI_API_KEY"):
        send(spec_google(server.url), TEXT)


def test_google_errors_name_the_status_and_classify(tmp_path: Path) -> None:
    from tests.fakes.servers import error, rate_limited

    with FakeLLMServer() as server:
        server.script(error(400, "Unsupported MIME type"))
        with pytest.raises(ProviderError) as info:
            send(spec_google(server.url), TEXT)
        assert "HTTP 400" in str(info.value) and "INVALID_ARGUMENT: Unsupported MIME" in str(
            info.value
        )
        assert not info.value.retryable
        server.script(rate_limited(retry_after=2))
        with pytest.raises(ProviderError) as info:
            send(spec_google(server.url), TEXT)
        assert info.value.retryable and info.value.retry_after == 2


def test_google_key_echoed_in_an_error_is_redacted() -> None:
    from tests.fakes.servers import error

    with FakeLLMServer() as server:
        server.script(error(401, "API key not valid", echo_auth=True))
        with pytest.raises(ProviderError) as info:
            send(spec_google(server.url), TEXT)
    text = str(info.value)
    assert info.value.kind == "auth" and "check GEMINI_API_KEY" in text
    assert KEYS["GEMINI_API_KEY"][:12] not in text and "***" in text


def test_google_checks_the_model_name() -> None:
    spec = ModelSpec(id="g", provider="google", model="gemini/../../x", where="models[0]")
    with pytest.raises(ConfigError, match="not a Gemini model name"):
        providers.check(spec, "eval.yaml")
    providers.check(ModelSpec(id="g", provider="google", model="models/gemini-2.5-pro"), None)


def test_a_file_edited_after_planning_is_refused_not_sent(tmp_path: Path) -> None:
    attachments._BY_HASH.clear()  # no stored copy of these bytes from another test
    with FakeLLMServer() as server:
        cfg = config(tmp_path, 'image: "{{ files.photo }}"', model="google", url=server.url)
        messages = rendered(cfg)
        (tmp_path / "media" / "dog.png").write_bytes(media.png(5, 5))
        with pytest.raises(ProviderError, match="changed after the run was planned") as info:
            send(model_of(cfg), messages)
        assert not info.value.retryable and server.count == 0


def test_a_stored_copy_is_read_first_and_a_vanished_one_is_skipped(tmp_path: Path) -> None:
    original = tmp_path / "a.png"
    original.write_bytes(media.png(6, 6))
    sha = attachments.load(original, "a").sha256
    copy = tmp_path / "copy"
    copy.write_bytes(media.png(6, 6))
    attachments.remember(sha, copy)
    assert attachments.path_of(sha) == copy
    original.write_bytes(b"edited")
    assert attachments.read(sha) == media.png(6, 6)  # from the copy, not the edited file
    copy.unlink()
    with pytest.raises(attachments.AttachmentChanged, match="cannot read"):
        attachments.read(sha)


def test_the_command_provider_gets_absolute_paths(tmp_path: Path) -> None:
    write(
        tmp_path / "echo.py",
        "import json, sys\nreq = json.load(sys.stdin)\n"
        "part = req['messages'][0]['content'][0]\n"
        "data = open(part['path'], 'rb').read()\n"
        "print(json.dumps({'text': part['media_type'] + ' ' + str(len(data)) + ' ok'}))\n",
    )
    cfg = config(tmp_path, 'video: "{{ files.clip }}"', "{clip: media/clip.mp4}", model="command")
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n_passed"] == 1
    out = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").show("latest", case_id="c1")
    assert out["cases"][0]["output"] == f"video/mp4 {len(media.mp4())} ok"


# ---- capabilities and limits at validation ------------------------------------------------


@pytest.mark.parametrize(
    ("model", "part", "files", "fragments"),
    [
        (
            "anthropic",
            'video: "{{ files.clip }}"',
            "{clip: media/clip.mp4}",
            [
                "case 'c1'",
                "model 'claude' (anthropic claude-sonnet-4)",
                "video part 'clip'",
                "video/mp4",
                "mock, command",
            ],
        ),
        (
            "google",
            'video: "{{ files.clip }}"',
            "{clip: media/clip.webm}",
            ["model 'gemini'", "video/webm", "mock, command"],
        ),
        (
            "openai",
            'audio: "{{ files.voice }}"',
            "{voice: media/hello.wav}",
            ["model 'gpt' (openai gpt-4o)", "audio part 'voice'", "google"],
        ),
        (
            "anthropic",
            'audio: "{{ files.voice }}"',
            "{voice: media/hello.wav}",
            ["does not accept the audio part", "openai, openai-compatible, google"],
        ),
        (
            "google",
            "image: https://example.invalid/x.png",
            "{photo: media/dog.png}",
            ["(a URL)", "attach the file itself"],
        ),
    ],
)
def test_unsupported_parts_are_refused_at_validation(
    tmp_path: Path, model: str, part: str, files: str, fragments: list[str]
) -> None:
    cfg = config(tmp_path, part, files, model=model, url="http://127.0.0.1:9")
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    assert "variant 'v' messages[0].content[0]" in message
    assert info.value.file == str(Path(cfg).resolve())  # the config the refusal is about


def test_validate_on_the_cli_exits_2_and_sends_nothing(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        cfg = config(
            tmp_path, 'video: "{{ files.clip }}"', "{clip: media/clip.mp4}", "anthropic", server.url
        )
        result = run_cli("validate", str(cfg), cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "does not accept the video part 'clip'" in " ".join(result.stderr.split())
        result = run_cli("run", str(cfg), cwd=tmp_path)
        assert result.returncode == 2 and server.count == 0


def test_the_same_audio_is_accepted_by_an_audio_model_and_not_as_flac(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'audio: "{{ files.voice }}"', "{voice: media/hello.wav}", "openai-audio")
    validate(cfg)  # gpt-4o-audio-preview takes wav
    flac = tmp_path / "media" / "v.flac"
    flac.write_bytes(b"fLaC" + b"\x00" * 40)
    write(cfg, cfg.read_text().replace("media/hello.wav", "media/v.flac"))
    with pytest.raises(ConfigError, match="convert it to one of audio/mpeg, audio/wav"):
        validate(cfg)


ANTHROPIC_IMAGE_LIMIT = 5 * 1024 * 1024 * 3 // 4  # 5 MB of base64 is 3,932,160 raw bytes


@pytest.mark.parametrize(
    ("size", "ok"), [(ANTHROPIC_IMAGE_LIMIT, True), (ANTHROPIC_IMAGE_LIMIT + 1, False)]
)
def test_an_image_over_the_limit_is_refused_with_the_limit_named(
    tmp_path: Path, size: int, ok: bool
) -> None:
    cfg = config(tmp_path, 'image: "{{ files.photo }}"', "{photo: media/big.png}", "anthropic")
    big = tmp_path / "media" / "big.png"
    with big.open("wb") as fh:
        fh.write(media.png())
        fh.truncate(size)
    if ok:
        validate(cfg)
        return
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert "5 MB base64 per image (3.75 MB raw)" in str(info.value)
    assert "case 'c1'" in str(info.value) and "'photo'" in str(info.value)


def test_google_counts_every_file_of_a_request_against_its_limit(tmp_path: Path) -> None:
    half = 8 * 1024 * 1024  # two of these are 16 MB raw, over 20 MB once base64-encoded
    cfg = config(
        tmp_path,
        'image: "{{ files.a }}"|image: "{{ files.b }}"',
        "{a: media/a.png, b: media/b.png}",
        "google",
    )
    for name, fill in (("a.png", b"a"), ("b.png", b"b")):
        with (tmp_path / "media" / name).open("wb") as fh:
            fh.write(media.png() + fill)
            fh.truncate(half)
    with pytest.raises(ConfigError, match="20 MB per request inline"):
        validate(cfg)
    write(cfg, cfg.read_text().replace('          - image: "{{ files.b }}"\n', ""))
    validate(cfg)  # one alone fits


# ---- cost estimates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "info", "tokens"),
    [
        ("anthropic", {"width": 750, "height": 1}, 1),
        ("anthropic", {"width": 1000, "height": 1000}, 1334),
        ("anthropic", {"width": 3136, "height": 1568}, 1640),  # long edge scaled to 1568
        ("openai", {"width": 512, "height": 512}, 85 + 170),
        ("openai", {"width": 1024, "height": 1024}, 85 + 170 * 4),  # shortest side to 768
        ("openai", {"width": 4096, "height": 2048}, 85 + 170 * 6),  # fit 2048, then 768
        ("google", {"width": 384, "height": 384}, 258),
        ("google", {"width": 385, "height": 384}, 258),
        ("google", {"width": 1536, "height": 769}, 258 * 4),
        ("mock", {}, 0),
    ],
)
def test_image_token_rules(provider: str, info: dict[str, Any], tokens: int) -> None:
    assert estimate_tokens(provider, {"type": "image"}, info) == tokens


def test_audio_and_pdf_rules_and_what_cannot_be_estimated() -> None:
    assert estimate_tokens("google", {"type": "audio"}, {"seconds": 1.0}) == 32
    assert estimate_tokens("openai", {"type": "audio"}, {"seconds": 2.5}) == 25
    assert estimate_tokens("anthropic", {"type": "file"}, {"pages": 3}) == 6000
    assert estimate_tokens("google", {"type": "file"}, {"pages": 2}) == 516
    assert estimate_tokens("google", {"type": "audio"}, {}) is None  # an MP3: no length
    assert estimate_tokens("anthropic", {"type": "image"}, {}) is None
    assert estimate_tokens("some-plugin", {"type": "image"}, {"width": 1, "height": 1}) is None


def test_the_estimate_counts_image_tokens_and_says_what_it_cannot(tmp_path: Path) -> None:
    cfg = config(
        tmp_path, 'text: "x"|image: "{{ files.photo }}"', "{photo: media/cat.jpg}", "google"
    )
    est = validate(cfg).estimate
    row = est["by_model"][0]
    assert row["input_tokens"] == 1 + 258 * 1  # "x" and a 640x480 image in one 768 tile
    assert "not_estimated" not in row
    mp3 = tmp_path / "media" / "s.mp3"
    mp3.write_bytes(b"ID3\x03\x00" + b"\x00" * 64)
    write(
        cfg,
        cfg.read_text()
        .replace('image: "{{ files.photo }}"', 'audio: "{{ files.photo }}"')
        .replace("media/cat.jpg", "media/s.mp3"),
    )
    row = validate(cfg).estimate["by_model"][0]
    assert row["not_estimated"] == 1 and row["input_tokens"] == 1
    # counted per request that sends the file: three repeats, three files not estimated
    assert validate(cfg, repeat=3).estimate["by_model"][0]["not_estimated"] == 3
    result = run_cli("run", str(cfg), "--dry-run", cwd=tmp_path)
    assert "1 attached file(s) not estimated (the cost is a lower bound)" in result.stdout


# ---- cache and artifact store --------------------------------------------------------------


def test_rename_keeps_the_cache_and_an_edit_misses_it(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'image: "{{ files.photo }}"')
    out = tmp_path / "out"
    first = evalwh.run_eval(cfg, output_dir=out)
    assert first.totals["n_cached"] == 0
    (tmp_path / "media" / "dog.png").rename(tmp_path / "media" / "renamed.png")
    write(cfg, cfg.read_text().replace("media/dog.png", "media/renamed.png"))
    assert evalwh.run_eval(cfg, output_dir=out).totals["n_cached"] == 1
    (tmp_path / "media" / "renamed.png").write_bytes(media.png(9, 9))
    assert evalwh.run_eval(cfg, output_dir=out).totals["n_cached"] == 0


def test_the_artifact_store_holds_one_copy_across_runs(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        'image: "{{ files.photo }}"|file: "{{ files.doc }}"',
        "{photo: media/dog.png, doc: media/contract.pdf}",
    )
    out = tmp_path / "out"
    evalwh.run_eval(cfg, output_dir=out)
    evalwh.run_eval(cfg, output_dir=out, no_cache=True)
    stored = sorted(p for p in (out / "artifacts").rglob("*") if p.is_file())
    sha = hashlib.sha256(media.png(4, 3)).hexdigest()
    assert len(stored) == 2
    assert out / "artifacts" / sha[:2] / sha[2:] in stored
    assert (out / "artifacts" / sha[:2] / sha[2:]).read_bytes() == media.png(4, 3)
    info = evalwh.api.cache_info(output_dir=out)
    assert info["artifacts"]["files"] == 2
    assert info["artifacts"]["bytes"] == len(media.png(4, 3)) + len(media.pdf())


def test_case_rows_and_the_parquet_export_carry_the_hashes(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    cfg = config(tmp_path, 'image: "{{ files.photo }}"')
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    sha = hashlib.sha256(media.png(4, 3)).hexdigest()
    table = pq.read_table(
        tmp_path / "out" / "exports" / "cases" / f"run_id={result.run_id}" / "cases.parquet"
    )
    stored = json.loads(table.column("attachments")[0].as_py())
    assert stored == {
        "photo": {"sha256": sha, "media_type": "image/png", "bytes": len(media.png(4, 3))}
    }
    assert sha in table.column("messages")[0].as_py()


def test_show_names_the_attachments(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'text: "hi"|image: "{{ files.photo }}"')
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    shown = run_cli("show", "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert "files: photo 1 x image/png (73 bytes) in 1 case row(s)" in shown.stdout
    case = run_cli("show", "--case", "c1", "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    sha = hashlib.sha256(media.png(4, 3)).hexdigest()
    assert f"file photo: image/png, 73 bytes, sha256 {sha[:12]}" in case.stdout
    assert "[user] hi[image photo: image/png]" in case.stdout


# ---- case sources --------------------------------------------------------------------------


def source_config(tmp_path: Path, cases: str, parts: str = 'image: "{{ files.photo }}"') -> Path:
    files_folder(tmp_path)
    return write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {default: ok}}\n"
        "variants:\n  - id: v\n    messages:\n      - role: user\n        content:\n"
        f"          - {parts}\n"
        f"cases:\n  - {cases}\n"
        "scorecard:\n  - {name: ok, type: contains, value: ok}\n",
    )


def test_file_columns_in_csv_resolve_next_to_the_cases_file(tmp_path: Path) -> None:
    write(
        tmp_path / "data" / "cases.csv",
        "id,photo,question\na,file://../media/dog.png,colour?\nb,file://../media/cat.jpg,size?\n",
    )
    cfg = source_config(tmp_path, "{file: data/cases.csv}", 'image: "{{ files.photo }}"')
    loaded = load_config(cfg)
    a, b = loaded.cases
    assert a.vars == {"question": "colour?"} and b.files["photo"].media_type == "image/jpeg"
    assert a.files["photo"].path == (tmp_path / "media" / "dog.png").resolve()
    validate(cfg)


def test_file_columns_in_jsonl_and_inline_jsonl_files(tmp_path: Path) -> None:
    write(
        tmp_path / "data" / "cases.jsonl",
        '{"id": "a", "photo": "file://../media/dog.png"}\n'
        '{"id": "b", "vars": {}, "files": {"photo": "../media/cat.jpg"}}\n',
    )
    cfg = source_config(tmp_path, "{file: data/cases.jsonl}")
    a, b = load_config(cfg).cases
    assert a.files["photo"].media_type == "image/png" and a.vars == {}
    assert b.files["photo"].media_type == "image/jpeg"
    write(tmp_path / "data" / "cases.jsonl", '{"id": "a", "photo": "file://../media/none.png"}\n')
    with pytest.raises(ConfigError, match="cannot read the attached file") as info:
        load_config(cfg)
    assert "cases.jsonl" in str(info.value) and "line 1, column photo" in str(info.value)


def test_a_directory_is_a_case_source(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    (folder / "dogs").mkdir(parents=True)
    (folder / "dogs" / "d1.png").write_bytes(media.png(2, 2))
    (folder / "c1.png").write_bytes(media.png(3, 3))
    (folder / "notes.txt").write_text("not an image")
    (folder / ".hidden.png").write_bytes(media.png())
    cfg = source_config(tmp_path, '{dir: images, glob: "**/*.png", as: photo}')
    cases = load_config(cfg).cases
    assert [c.id for c in cases] == ["c1.png", "dogs/d1.png"]
    assert cases[1].metadata == {"folder": "dogs"} and cases[1].vars == {"file_name": "dogs/d1.png"}
    assert cases[1].files["photo"].info == {"width": 2, "height": 2}
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n"] == 2 and result.totals["n_passed"] == 2
    write(cfg, cfg.read_text().replace("**/*.png", "*.gif"))
    with pytest.raises(ConfigError, match=r"no file in .* matches '\*.gif'"):
        load_config(cfg)


def test_dir_sources_and_case_files_are_confined_under_mcp(tmp_path: Path) -> None:
    from evalwh.config.confinement import ConfinementError, load_confined

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.png").write_bytes(media.png())
    project = tmp_path / "project"
    project.mkdir()
    for cases in (
        '{dir: ../outside, glob: "*.png", as: photo}',
        "{id: a, files: {photo: ../outside/secret.png}}",
    ):
        cfg = source_config(project, cases)
        with pytest.raises(ConfinementError, match="outside the root"):
            load_confined(cfg, project, allow_code=False)


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("c.csv", "id,photo\na,file://../../outside/secret.png\n"),
        ("c.csv", "id,photo\na,file:///etc/hostname\n"),
        ("c.jsonl", '{"id": "a", "photo": "file://../../outside/secret.png"}\n'),
        ("c.jsonl", '{"id": "a", "vars": {}, "files": {"photo": "../../outside/secret.png"}}\n'),
    ],
)
def test_a_cases_file_cannot_name_files_outside_the_config_folder(
    tmp_path: Path, name: str, body: str
) -> None:
    # a downloaded dataset must not send ~/.ssh/id_rsa to a model API
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.png").write_bytes(media.png())
    project = tmp_path / "project"
    write(project / "data" / name, body)
    cfg = source_config(project, f"{{file: data/{name}}}")
    with pytest.raises(ConfigError, match="outside the config's folder") as info:
        load_config(cfg)
    assert name in str(info.value) and "fix:" in str(info.value)
    # eval.yaml itself is trusted: its own files: may name any path
    cfg = source_config(project, "{id: a, files: {photo: ../outside/secret.png}}")
    assert load_config(cfg).cases[0].files["photo"].media_type == "image/png"


def test_the_vision_example_runs_offline_and_show_names_its_images(tmp_path: Path) -> None:
    import shutil

    example = Path(__file__).resolve().parents[2] / "examples" / "vision"
    copy = tmp_path / "vision"
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns(".evalwh"))
    ran = run_cli("run", str(copy / "eval.yaml"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr  # one case fails, but no threshold is set
    shown = run_cli("-c", str(copy / "eval.yaml"), "show", "--case", "red-square", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    sha = hashlib.sha256((copy / "images" / "red-square.png").read_bytes()).hexdigest()
    assert f"file photo: image/png, 79 bytes, sha256 {sha[:12]}" in shown.stdout
    assert "[image photo: image/png]" in shown.stdout
    stored = copy / ".evalwh" / "artifacts" / sha[:2] / sha[2:]
    assert stored.read_bytes() == (copy / "images" / "red-square.png").read_bytes()


def test_an_explicit_media_type_counts_only_when_the_content_says_nothing(tmp_path: Path) -> None:
    cfg = config(tmp_path, "{type: file, path: media/blob.bin, media_type: text/csv}")
    (tmp_path / "media" / "blob.bin").write_bytes(b"\xff\xfe\x00")  # no magic, not UTF-8
    assert rendered(cfg)[0]["content"][0]["media_type"] == "text/csv"
    write(
        cfg,
        cfg.read_text().replace(
            "{type: file, path: media/blob.bin, media_type: text/csv}",
            "{type: image, path: media/dog.png, media_type: image/jpeg}",
        ),
    )
    assert rendered(cfg)[0]["content"][0]["media_type"] == "image/png"


def test_the_estimate_counts_audio_seconds(tmp_path: Path) -> None:
    cfg = config(tmp_path, 'audio: "{{ files.voice }}"', "{voice: media/hello.wav}", "google")
    assert validate(cfg).estimate["by_model"][0]["input_tokens"] == 1 + 32  # 1 s of WAV


@pytest.mark.parametrize(
    ("model", "kind", "ok"),
    [
        ("gpt-4o", "image", True),
        ("gpt-4o", "audio", False),
        ("gpt-4o-mini-audio-preview", "audio", True),
        ("gpt-3.5-turbo", "image", False),
        ("o3-mini", "file", False),
        ("o3", "file", True),
    ],
)
def test_openai_capabilities_differ_per_model(model: str, kind: str, ok: bool) -> None:
    from evalwh.providers.capabilities import capability

    spec = ModelSpec(id="x", provider="openai", model=model)
    media_type = {"image": "image/png", "audio": "audio/wav", "file": "application/pdf"}[kind]
    assert capability(spec).accepts(kind, media_type) is ok
    compatible = ModelSpec(id="x", provider="openai-compatible", model=model)
    assert capability(compatible).accepts(kind, media_type)  # the server decides


def test_gemini_prices_are_in_the_dated_table() -> None:
    from evalwh.providers.pricing import price_table, table_price

    assert "ai.google.dev" in price_table()["source"]
    price = table_price("google", "gemini-2.5-flash")
    assert price is not None and (price.input_per_mtok, price.output_per_mtok) == (0.3, 2.5)
    assert table_price("google", "gemini-9-unknown") is None


@pytest.mark.parametrize(
    ("head", "size"),
    [
        (b"GIF89a" + struct.pack("<HH", 7, 5) + b"\x00" * 8, (7, 5)),
        # WebP extended (VP8X): 24-bit width-1 and height-1
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8X"
            + b"\x0a\x00\x00\x00"
            + b"\x00" * 4
            + (999).to_bytes(3, "little")
            + (499).to_bytes(3, "little"),
            (1000, 500),
        ),
        # WebP lossy (VP8): 14-bit width and height after the start code
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8 "
            + b"\x00" * 4
            + b"\x00\x00\x00\x9d\x01\x2a"
            + struct.pack("<HH", 320, 240),
            (320, 240),
        ),
        # WebP lossless (VP8L): 14 bits of width-1, then 14 of height-1
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8L"
            + b"\x00" * 4
            + b"\x2f"
            + (63 | (31 << 14)).to_bytes(4, "little"),
            (64, 32),
        ),
        # JPEG with an APP1 segment and fill bytes before the SOF2 (progressive) marker
        (
            b"\xff\xd8\xff\xe1\x00\x04ab\xff\xff\xc2\x00\x11\x08"
            + struct.pack(">HH", 90, 160)
            + b"\x03"
            + b"\x00" * 9,
            (160, 90),
        ),
    ],
)
def test_image_sizes_from_headers(head: bytes, size: tuple[int, int]) -> None:
    media_type = attachments.sniff(head)
    assert media_type is not None
    assert attachments._image_size(media_type, head) == size


def test_file_columns_in_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "data").mkdir()
    pq.write_table(
        pa.table({"id": ["a"], "clip": ["file://../media/clip.mp4"], "n": [3]}),
        tmp_path / "data" / "cases.parquet",
    )
    cfg = source_config(tmp_path, "{file: data/cases.parquet}", 'video: "{{ files.clip }}"')
    (case,) = load_config(cfg).cases
    assert case.vars == {"n": 3} and case.files["clip"].media_type == "video/mp4"
    assert evalwh.run_eval(cfg, output_dir=tmp_path / "out").totals["n_passed"] == 1


def test_a_faked_model_is_checked_and_estimated_as_its_provider(tmp_path: Path) -> None:
    """The bug it names: `--fake` answered by the mock, whose capabilities are "anything" and
    whose media cost nothing, so a fake dry run passed a suite the real run refuses, and its
    estimate left the images out."""
    cfg = config(
        tmp_path, 'text: "x"|image: "{{ files.photo }}"', "{photo: media/cat.jpg}", "google"
    )
    real = validate(cfg).estimate["by_model"][0]
    faked = validate(cfg, fake=True).estimate["by_model"][0]
    assert faked["input_tokens"] == real["input_tokens"] == 1 + 258  # the image's 258 tokens
    assert faked["cost_usd"] == pytest.approx(real["cost_usd"])
    (tmp_path / "a").mkdir()
    (tmp_path / "m").mkdir()
    refused = config(
        tmp_path / "a", 'audio: "{{ files.voice }}"', "{voice: media/hello.wav}", "anthropic"
    )
    with pytest.raises(ConfigError, match="does not accept the audio part"):
        validate(refused, fake=True)
    mock = config(tmp_path / "m", 'audio: "{{ files.voice }}"', "{voice: media/hello.wav}")
    assert validate(mock, fake=True).requests == 1  # the mock itself still takes anything


def test_a_directory_source_direct_defaults_limit_and_errors(tmp_path: Path) -> None:
    """folders.directory_cases itself: the defaults (every file, attached as ``file``), the
    limit, the source line, and both errors with their file, place and fix."""
    from evalwh.config.folders import directory_cases

    folder = tmp_path / "pics"
    (folder / "sub").mkdir(parents=True)
    for name in ("b.png", "a.png", "sub/c.png"):
        (folder / name).write_bytes(media.png(2, 2))
    cases = directory_cases({"dir": "pics/"}, tmp_path, "cases[1]", "e.yaml")
    assert [c.id for c in cases] == ["a.png", "b.png"]  # "*": this folder only
    assert [list(c.files) for c in cases] == [["file"], ["file"]]
    assert cases[0].source == "pics/a.png" and cases[0].metadata == {"folder": "."}
    limited = directory_cases(
        {"dir": "pics", "glob": "**/*.png", "as": "img", "limit": 2}, tmp_path, "cases[1]", "e.yaml"
    )
    assert [c.id for c in limited] == ["a.png", "b.png"] and list(limited[0].files) == ["img"]
    everything = directory_cases({"dir": "pics", "glob": "**/*.png"}, tmp_path, "w", "e.yaml")
    assert [c.id for c in everything] == ["a.png", "b.png", "sub/c.png"]
    with pytest.raises(ConfigError) as missing:
        directory_cases({"dir": "nope"}, tmp_path, "cases[1]", "e.yaml")
    assert (missing.value.message, missing.value.file, missing.value.where, missing.value.fix) == (
        f"case folder not found: {(tmp_path / 'nope').resolve()}",
        "e.yaml",
        "cases[1].dir",
        "check the path; it is relative to the config file's folder",
    )
    with pytest.raises(ConfigError) as empty:
        directory_cases({"dir": "pics", "glob": "*.gif"}, tmp_path, "cases[1]", "e.yaml")
    assert (empty.value.message, empty.value.file, empty.value.where, empty.value.fix) == (
        f"no file in {folder.resolve()} matches '*.gif'",
        "e.yaml",
        "cases[1].glob",
        "check the folder and the pattern (e.g. glob: '*.jpg', or '**/*.png' for subfolders)",
    )
