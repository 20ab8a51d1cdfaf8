"""Reading a stream another program writes, keeping a bounded part of it and counting the rest.

A command provider, an exec check or a model's reply can print hundreds of megabytes; holding
them all costs gigabytes of memory and stores them all. :class:`Capture` keeps the first
``head`` and the last ``tail`` bytes while the stream is read, and counts every byte::

    out = Capture(head=1_000_000, tail=0)       # an answer: its start
    err = Capture(head=0, tail=64 * 1024)       # stderr: its end, where the error is
    await read_into(proc.stdout, out)
    out.truncated, out.total                    # True, 20_000_000
"""

from __future__ import annotations

import asyncio

READ_BYTES = 65536  # one read of a pipe


class Capture:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream; counts them all."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit > 0:
            self.tail += chunk[-self.tail_limit :]
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def truncated(self) -> bool:
        """Whether bytes were read that are kept neither in the head nor in the tail."""
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """The head, a marker counting the omitted bytes (when some were), and the tail."""
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        skipped = self.total - len(self.head) - len(self.tail)
        gap = f"\n[... {skipped} bytes omitted ...]\n" if skipped else ""
        return head + gap + self.tail.decode("utf-8", errors="replace")


async def read_into(stream: asyncio.StreamReader, capture: Capture) -> None:
    """Read ``stream`` to its end into ``capture`` (never more than one read's bytes held
    beyond what it keeps)."""
    while True:
        chunk = await stream.read(READ_BYTES)
        if not chunk:
            return
        capture.add(chunk)
