"""Capping captured output: keep the head and the tail, count every byte, flag the cut."""

from __future__ import annotations

from dataclasses import dataclass

# What is kept of each stream; beyond HARD_CAP_BYTES the run is killed.
DEFAULT_KEEP_BYTES = 64 * 1024
HARD_CAP_BYTES = 16 * 1024 * 1024


@dataclass
class CappedBuffer:
    """Accumulates a stream, keeping at most `keep` bytes (half head, half tail)."""

    keep: int = DEFAULT_KEEP_BYTES
    total: int = 0

    def __post_init__(self) -> None:
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        half = self.keep // 2
        room = half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > half:
                del self._tail[: len(self._tail) - half]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self._tail.decode("utf-8", "replace")
        dropped = self.total - len(self._head) - len(self._tail)
        tail = self._tail.decode("utf-8", "replace")
        return f"{head}\n[... {dropped} bytes cut ...]\n{tail}"


def cap_text(text: str, keep_chars: int) -> str:
    """Head and tail of `text` within `keep_chars`, marking what was cut."""
    if len(text) <= keep_chars:
        return text
    half = keep_chars // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"
