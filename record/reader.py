"""Reading transcripts back: every good event, and where the first bad line was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from conductor_kernel.errors import TranscriptError, UserFacingError
from conductor_kernel.events import Event, RunFinished, RunStarted


@dataclass
class Transcript:
    path: Path
    events: list[Event] = field(default_factory=list)
    # Set when a line could not be read: the first such line and why.
    problem: TranscriptError | None = None

    @property
    def started(self) -> RunStarted | None:
        return next((e for e in self.events if isinstance(e, RunStarted)), None)

    @property
    def finished(self) -> RunFinished | None:
        return next((e for e in reversed(self.events) if isinstance(e, RunFinished)), None)

    @property
    def complete(self) -> bool:
        return self.finished is not None and self.problem is None


def _parse(path: Path, number: int, line: str) -> Event:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        cut = (
            ""
            if line.endswith("\n")
            else " (the line is cut short: the run was probably killed while writing)"
        )
        raise TranscriptError(str(path), number, f"not valid JSON: {exc.msg}{cut}") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise TranscriptError(str(path), number, "not an event (no 'kind' field)")
    try:
        return Event.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise TranscriptError(
            str(path), number, f"malformed {data.get('kind')} event: {exc}"
        ) from None


def _open(path: Path) -> IO[str]:
    """The transcript for reading, or a `UserFacingError` saying why it cannot be read
    (a run still in runs.db whose file was deleted or moved, a folder, no permission)."""
    try:
        return path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise UserFacingError(
            f"{path}: the transcript is gone (deleted or moved); runs.db still lists the run "
            "but its events were only in that file. Put it back, or give the file's new "
            "path instead of the run id."
        ) from None
    except OSError as exc:
        raise UserFacingError(
            f"{path}: cannot read the transcript ({exc.strerror or exc}); check that it is "
            "a readable file."
        ) from None


def iter_events(path: Path | str) -> Iterator[Event]:
    """Events of a transcript in order; raises `TranscriptError` at the first bad line."""
    path = Path(path)
    with _open(path) as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield _parse(path, number, line)


def read_transcript(path: Path | str, *, strict: bool = False) -> Transcript:
    """The whole transcript. With `strict=False` a bad line is skipped and the first one
    is reported in `problem`: a line cut by a killed process is followed by the ending
    the next start appends (transcripts/index.py), and nothing after it is lost.
    """
    path = Path(path)
    transcript = Transcript(path)
    with _open(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                transcript.events.append(_parse(path, number, line))
            except TranscriptError as exc:
                if strict:
                    raise
                if transcript.problem is None:
                    transcript.problem = exc
    return transcript
