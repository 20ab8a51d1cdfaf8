"""What each provider accepts (evalwh/providers/capabilities.py): the capability table's
refusals of a part type, media type or URL with the providers that would take it, the
request size limits met exactly, a plug-in provider's declared capabilities, and the token
estimates of images, audio and PDF pages per provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.attachments import load
from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.capabilities import (
    MB,
    Capability,
    capability,
    check_parts,
    estimate_tokens,
    media_tokens,
)
from tests.fakes import media
from tests.providers.test_google import gemini

TOO_BIG_FIX = (
    "make the file smaller (resize, compress, split), or use a provider with a "
    "larger limit (docs/providers.md)"
)


def part(kind: str, media_type: str | None, size: int = 10, **more: Any) -> dict[str, Any]:
    found = {"type": kind, "name": f"my{kind}", "sha256": "0" * 64, "bytes": size, **more}
    if media_type is not None:
        found["media_type"] = media_type
    return found


def refusal(model: ModelSpec, *parts: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        check_parts(model, [{"role": "user", "content": list(parts)}], "c1", "v", "eval.yaml")
    return info.value


# ---- refusals ---------------------------------------------------------------------------------


def test_a_video_for_google_names_only_the_providers_that_take_video() -> None:
    err = refusal(gemini(), part("video", "video/mp4"))
    assert (
        err.fix
        == "use a model whose provider accepts video parts: mock, command (docs/providers.md)"
    )


def test_an_audio_format_names_only_the_providers_that_take_that_format() -> None:
    model = ModelSpec(id="a", provider="openai", model="gpt-4o-audio-preview")
    err = refusal(model, part("audio", "audio/flac"))
    assert err.fix == (
        "convert it to one of audio/mpeg, audio/wav, or use a model that accepts it "
        "(mock, command, google)"
    )


def test_a_url_for_google_names_the_providers_that_take_urls() -> None:
    err = refusal(gemini(), {"type": "image", "url": "https://example.invalid/a.png"})
    assert err.fix == (
        "attach the file itself instead of a URL (URLs are accepted by: mock, command, "
        "anthropic, openai, openai-compatible)"
    )


def test_a_request_over_googles_limit_names_the_size_limit_place_and_fix() -> None:
    err = refusal(gemini(), part("image", "image/png", 16 * MB))
    assert err.message == (
        "case 'c1': the file 'the request's files' (16.0 MB) is over the limit of "
        "model 'g' (google gemini-2.5-flash): 20 MB per request inline (base64)"
    )
    assert (err.file, err.where) == ("eval.yaml", "variant 'v' messages[0].content[0]")
    assert err.fix == TOO_BIG_FIX


def test_a_raw_byte_limit_is_met_exactly_and_passed_by_one_byte() -> None:
    model = ModelSpec(id="o", provider="openai", model="gpt-4o")
    messages = [{"role": "user", "content": [part("image", "image/png", 50 * MB)]}]
    check_parts(model, messages, "c1", "v", "eval.yaml")  # 50 MB raw, not 50 MB of base64
    err = refusal(model, part("image", "image/png", 50 * MB + 1))
    assert err.message.endswith(": 50 MB of images per request")


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


# ---- token estimates --------------------------------------------------------------------------


IMAGE = {"type": "image"}


AUDIO = {"type": "audio"}


FILE = {"type": "file"}


@pytest.mark.parametrize("provider", ["openai", "openai-compatible"])
@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        # 512x300: fits 2048 and its short side is under 768 (no scaling); ceil(512/512) *
        # ceil(300/512) = 1 * 1 = 1 tile -> 85 + 170 * 1 = 255 (exactly one tile wide)
        (512, 300, 85 + 170 * 1),
        # 513x300: ceil(513/512) * ceil(300/512) = 2 * 1 = 2 tiles -> 85 + 170 * 2 = 425
        (513, 300, 85 + 170 * 2),
        # 300x513: ceil(300/512) * ceil(513/512) = 1 * 2 = 2 tiles -> 425
        (300, 513, 85 + 170 * 2),
        # 4096x1024: fit 2048 -> scale 2048/4096 = 0.5 -> 2048x512; short side 512 <= 768 so no
        # second scaling; ceil(2048/512) * ceil(512/512) = 4 * 1 = 4 tiles -> 85 + 680 = 765
        (4096, 1024, 85 + 170 * 4),
        # 1024x4096: 0.5 -> 512x2048; ceil(512/512) * ceil(2048/512) = 1 * 4 -> 765
        (1024, 4096, 85 + 170 * 4),
    ],
)
def test_openai_image_estimate_is_170_per_512px_tile_plus_85_after_fitting_2048(
    provider: str, width: int, height: int, tokens: int
) -> None:
    assert estimate_tokens(provider, IMAGE, {"width": width, "height": height}) == tokens


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (384, 384, 258),  # both sides at most 384: one 258-token image
        # 384x1000: one side over 384, so tiles: ceil(384/768) * ceil(1000/768) = 1 * 2 -> 516
        (384, 1000, 258 * 2),
        (1000, 384, 258 * 2),  # ceil(1000/768) * ceil(384/768) = 2 * 1 -> 516
        (768, 100, 258),  # ceil(768/768) * ceil(100/768) = 1 * 1 -> 258 (exactly one tile)
        (769, 100, 258 * 2),  # ceil(769/768) * ceil(100/768) = 2 * 1 -> 516
    ],
)
def test_google_image_estimate_is_258_per_768px_tile(width: int, height: int, tokens: int) -> None:
    assert estimate_tokens("google", IMAGE, {"width": width, "height": height}) == tokens


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-compatible", "google"])
@pytest.mark.parametrize(
    "info", [{"width": 0, "height": 100}, {"width": 100, "height": 0}, {"height": 100}]
)
def test_an_image_whose_header_gives_no_usable_size_is_not_estimated(
    provider: str, info: dict[str, Any]
) -> None:
    # a zero or missing side: no rule applies, so the estimate says "cannot estimate" (None)
    # rather than counting a made-up 1-px-wide image (anthropic would say max(1, ...) = 1,
    # google 258)
    assert estimate_tokens(provider, IMAGE, info) is None


@pytest.mark.parametrize("provider", ["mock", "command"])
def test_mock_and_command_parts_cost_zero_tokens_of_every_kind(provider: str) -> None:
    assert estimate_tokens(provider, IMAGE, {"width": 513, "height": 300}) == 0
    assert estimate_tokens(provider, AUDIO, {"seconds": 2.5}) == 0
    assert estimate_tokens(provider, FILE, {"pages": 3}) == 0
    assert estimate_tokens(provider, IMAGE, {}) == 0  # even with nothing known: free


@pytest.mark.parametrize(
    ("provider", "seconds", "tokens"),
    [
        ("openai-compatible", 2.5, 25),  # 10 per second: ceil(2.5 * 10) = 25
        ("openai", 2.5, 25),
        ("google", 2.5, 80),  # 32 per second: ceil(2.5 * 32) = 80
        ("openai", 0.05, 1),  # ceil(0.05 * 10) = ceil(0.5) = 1
        ("openai", 0.0, 1),  # an empty WAV: ceil(0) = 0, at least 1 -> 1
        ("google", 0.0, 1),
        ("anthropic", 2.5, None),  # anthropic takes no audio: no rule
    ],
)
def test_wav_estimate_is_per_second_and_at_least_one_token(
    provider: str, seconds: float, tokens: int | None
) -> None:
    assert estimate_tokens(provider, AUDIO, {"seconds": seconds}) == tokens


@pytest.mark.parametrize(
    ("provider", "pages", "tokens"),
    [
        ("openai", 3, 3000),  # 1,000 per page: 3 * 1000
        ("anthropic", 3, 6000),  # 2,000 per page
        ("google", 3, 774),  # 258 per page: 3 * 258
        ("openai-compatible", 3, None),  # no per-page rule for a compatible server
    ],
)
def test_pdf_estimate_is_per_page(provider: str, pages: int, tokens: int | None) -> None:
    assert estimate_tokens(provider, FILE, {"pages": pages}) == tokens


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
def test_a_file_with_no_page_count_is_not_estimated_as_free(provider: str) -> None:
    # a text/plain file (or a PDF whose pages could not be counted) has no "pages": the
    # estimate says it cannot tell, not 0 tokens and not one page's worth
    assert estimate_tokens(provider, FILE, {}) is None
    assert estimate_tokens(provider, FILE, {"pages": 0}) is None


def test_pages_on_a_part_that_is_no_file_are_not_priced_as_pages() -> None:
    # only a file part is priced per page: an audio part with no length stays unknown
    assert estimate_tokens("anthropic", AUDIO, {"pages": 2}) is None


# ---- parameters a model refuses -----------------------------------------------------------------


def params_spec(provider: str, model: str, **params: Any) -> ModelSpec:
    return ModelSpec(id="m", provider=provider, model=model, params=params, where="models[0]")


@pytest.mark.parametrize(
    ("provider", "model", "params", "refused"),
    [
        ("openai", "o3", {"temperature": 0}, "OpenAI reasoning model 'o3' refuses temperature"),
        ("openai", "gpt-5-mini", {"top_p": 0.9}, "refuses top_p"),
        ("openai", "gpt-4o", {"reasoning_effort": "low"}, "takes no reasoning_effort"),
        ("openai", "o4-mini", {"thinking_budget": 2048}, "takes no thinking_budget"),
        ("anthropic", "claude-sonnet-4-5", {"temperature": 0, "top_p": 0.9}, "together"),
        ("anthropic", "claude-sonnet-4-5", {"reasoning_effort": "high"}, "no reasoning_effort"),
        ("anthropic", "claude-sonnet-4-5", {"thinking_budget": 512}, "below Anthropic's minimum"),
        ("anthropic", "claude-sonnet-4-5", {"thinking_budget": 2048, "temperature": 0}, "thinking"),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"thinking_budget": 2048, "max_tokens": 2048},
            "not above",
        ),
        ("google", "gemini-2.5-flash", {"reasoning_effort": "low"}, "no reasoning_effort"),
    ],
)
def test_a_parameter_the_model_refuses_is_a_validation_error(
    provider: str, model: str, params: dict[str, Any], refused: str
) -> None:
    with pytest.raises(ConfigError, match=refused) as info:
        providers.check(params_spec(provider, model, **params))
    assert info.value.where == "models[0].params"


@pytest.mark.parametrize(
    ("provider", "model", "params"),
    [
        ("openai", "o3", {"reasoning_effort": "high", "max_tokens": 4000}),
        ("openai", "gpt-5-chat-latest", {"temperature": 0.2}),  # the chat model samples
        ("openai", "gpt-4o", {"temperature": 0, "top_p": 0.9}),
        ("anthropic", "claude-sonnet-4-5", {"temperature": 0}),
        ("anthropic", "claude-3-5-haiku", {"temperature": 0, "top_p": 0.9}),  # older: both fine
        ("anthropic", "claude-sonnet-4-5", {"thinking_budget": 2048, "max_tokens": 4096}),
        ("google", "gemini-2.5-flash", {"thinking_budget": -1, "temperature": 0}),
        ("openai-compatible", "local", {"reasoning_effort": "low", "temperature": 0}),
    ],
)
def test_parameters_the_model_takes_pass(provider: str, model: str, params: dict[str, Any]) -> None:
    options = {"base_url": "http://127.0.0.1:9/v1"} if provider == "openai-compatible" else {}
    spec = params_spec(provider, model, **params)
    providers.check(ModelSpec(**{**spec.__dict__, "options": options}))
