"""Tests that kill mutants mutmut found alive in the providers' token estimates and process handling (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.model import Case, ModelSpec
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.capabilities import estimate_tokens
from evalwh.providers.command import _kill
from tests.test_provider_command import script

IMAGE = {"type": "image"}
AUDIO = {"type": "audio"}
FILE = {"type": "file"}


# ---- images ---------------------------------------------------------------------------------


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


# ---- audio and PDFs -------------------------------------------------------------------------


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


# ---- killing a command ----------------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
@pytest.mark.parametrize("posix", [True, False])
def test_killing_a_command_that_has_already_exited_is_harmless(posix: bool) -> None:
    # the race where a command exits just as its timeout fires: its process (group) is gone
    # by the time it is killed, and that must not turn into an error
    async def go() -> int | None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "pass", start_new_session=True
        )
        await proc.wait()
        await _kill(proc, posix)
        return proc.returncode

    assert asyncio.run(go()) == 0


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_timeout_is_reported_as_such_when_the_group_kill_complains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    # killpg kills the group but then reports ESRCH (the group went away meanwhile) or EPERM
    # (what macOS says for a group already down to zombies): the user still gets the
    # ordinary timeout error, and the command and its child are gone
    real_killpg = os.killpg
    calls: list[int] = []

    def killpg(pgid: int, sig: int) -> None:
        calls.append(sig)
        real_killpg(pgid, sig)
        raise error(1, "simulated")

    monkeypatch.setattr(os, "killpg", killpg)
    marker = tmp_path / "child-finished"
    child = script(
        tmp_path,
        "child.py",
        f"""
        import time
        time.sleep(1.0)
        open({str(marker)!r}, "w").write("done")
        """,
    )
    parent = script(
        tmp_path,
        "parent.py",
        f"""
        import subprocess, sys
        sys.stdin.read()
        subprocess.run([sys.executable, {str(child)!r}])
        """,
    )
    spec = ModelSpec(
        id="cmd",
        provider="command",
        model="m",
        timeout_s=0.4,
        options={"command": [sys.executable, str(parent)]},
        where="models[0]",
    )
    prov = providers.create(spec)
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    request = Request(model=spec, messages=messages, case=Case(id="c1"), variant="v1")

    async def go() -> None:
        try:
            await prov.complete(request)
        finally:
            await prov.aclose()

    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert info.value.kind == "timeout" and info.value.retryable
    assert "did not finish within 0.4s (killed)" in str(info.value)
    assert calls and set(calls) == {signal.SIGKILL}
    time.sleep(max(0.0, 1.3 - (time.monotonic() - started)))
    assert not marker.exists()  # the child was killed with its parent
