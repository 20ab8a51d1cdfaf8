"""A prompt's parts as a provider sends them (evalwh/providers/parts.py): an unsupported part
refused by the adapter before any request (named with its type and media type or URL, not
retried), and a part whose file was never loaded in this run."""

from __future__ import annotations

import pytest

from evalwh.providers.base import ProviderError
from evalwh.providers.parts import part_bytes, unsupported_part
from tests.fakes.servers import (
    FakeLLMServer,
)
from tests.providers.test_http import (
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
    failure,
    make,
)

UNSUPPORTED_FIX = "see the capability table in docs/providers.md"


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_unsupported_part_type(server: FakeLLMServer, name: str) -> None:
    # Validation refuses these first (tests/features/test_multimodal.py); the adapter refuses too.
    video = {"type": "video", "name": "clip", "sha256": "0" * 64, "media_type": "video/mp4"}
    messages = [{"role": "user", "content": [video]}]
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url), messages)
    assert not err.retryable and err.kind == "unsupported"
    assert "'video' parts (video/mp4)" in str(err) and "does not accept" in str(err)
    assert server.count == 0


def test_an_unsupported_url_part_is_named_a_url() -> None:
    err = unsupported_part("google", {"type": "image", "url": "https://example.invalid/a.png"})
    assert str(err) == (
        "google: the google provider does not accept 'image' parts (a URL); " + UNSUPPORTED_FIX
    )
    err = unsupported_part("google", {"type": "image", "media_type": "image/gif"})
    assert "'image' parts (image/gif);" in str(err)


def test_a_part_whose_file_is_gone_names_the_part_and_is_not_retried() -> None:
    with pytest.raises(ProviderError) as info:
        part_bytes("google", {"type": "image", "name": "photo", "sha256": "0" * 64})
    assert str(info.value) == (
        "google: the image part 'photo': no file with SHA-256 000000000000... was loaded in "
        "this run"
    )
    assert (info.value.kind, info.value.retryable) == ("attachment", False)
