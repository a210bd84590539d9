"""The transcript writer: one JSON line per event, flushed as it is written.

A run killed at any moment (even `kill -9`) leaves every finished event on disk and
readable; at worst the last line is cut short, which the reader reports and skips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from conductor.events import Event


class TranscriptWriter:
    """An `EventSink` appending non-transient events to `path`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")
        self.events_written = 0

    def handle(self, event: Event) -> None:
        if event.transient or self._fh is None:
            return
        self._fh.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
        self._fh.flush()
        self.events_written += 1

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
