"""A rendered binary part's bytes as providers send them: raw, base64 or a data URL.

Rendered messages name a file by its SHA-256 (:mod:`evalwh.config.attachments`); the bytes
are read when a request is built, checked against that hash, and never kept. A file that
changed after the run was planned is a non-retryable error for that request (run again to
use the new content), never a silent switch to other bytes.
"""

from __future__ import annotations

import base64
from typing import Any

from evalwh.providers.base import ProviderError


def part_bytes(provider: str, part: dict[str, Any]) -> bytes:
    from evalwh.config.attachments import AttachmentChanged, read

    try:
        return read(str(part["sha256"]))
    except (AttachmentChanged, KeyError) as exc:
        raise ProviderError(
            f"{provider}: the {part.get('type')} part '{part.get('name')}': {exc}",
            retryable=False,
            kind="attachment",
        ) from None


def part_base64(provider: str, part: dict[str, Any]) -> str:
    return base64.b64encode(part_bytes(provider, part)).decode("ascii")


def data_url(provider: str, part: dict[str, Any]) -> str:
    return f"data:{part['media_type']};base64,{part_base64(provider, part)}"


def unsupported_part(provider: str, part: dict[str, Any]) -> ProviderError:
    """A part the provider cannot send (validation refuses these first; see capabilities)."""
    what = "a URL" if "url" in part else part.get("media_type")
    return ProviderError(
        f"{provider}: the {provider} provider does not accept '{part.get('type')}' parts "
        f"({what}); see the capability table in docs/providers.md",
        retryable=False,
        kind="unsupported",
    )
