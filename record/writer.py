"""The transcript writer: one JSON line per event, each written by one append.

Every line goes to the file with a single `write` on an `O_APPEND` descriptor (looping
only if the kernel takes part of it), so a run killed at any moment, even by `kill -9`,
leaves every finished event on disk and readable; no buffer holds a half line. The file
is opened in append mode, so the repair of a dead run (index.py) adds its ending after
whatever the run wrote.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:  # a type only: opening runs.db imports this module for DiskFull
    from conductor_kernel.events import Event


class DiskFull(UserFacingError):
    """A transcript line the disk had no room for."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: the disk is full; this run's transcript is cut here. Free some space: "
            "the next conductor command marks the run ended (error: disk full) and indexes it."
        )


class TranscriptBusy(Exception):
    """Another live process holds the transcript open for writing."""


class TranscriptWriter:
    """An `EventSink` appending non-transient events to `path`."""

    def __init__(self, path: Path | str, *, only_if_free: bool = False) -> None:
        """`only_if_free`: raise `TranscriptBusy` when a live process writes the file
        (the repair of a dead run must not append to a live one)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # A lock that dies with the process says the writer is alive (record/repair.py).
        # Never waited for: a second writer of the same file (a test, a tool) goes on
        # unlocked rather than hang, but the repair backs off.
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if only_if_free:
                os.close(self._fd)
                self._fd = None
                raise TranscriptBusy(str(self.path)) from None
        self.events_written = 0
        self._torn = False  # a line the disk cut: the next one starts fresh
        self._ended = False  # this writer wrote the run's `run_finished`
        # A file cut mid-line by a killed writer: start on a fresh line.
        if self.path.stat().st_size and not _ends_with_newline(self.path):
            self._append(b"\n")

    def handle(self, event: Event) -> None:
        if event.transient or self._fd is None:
            return
        record = event.to_dict()
        try:
            data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (a model's JSON can carry one as `\ud800`) has no UTF-8
            # form; JSON's own escapes keep the line exact and readable.
            data = (json.dumps(record) + "\n").encode("ascii")
        self._append(data)
        self.events_written += 1
        self._ended = self._ended or record.get("kind") == "run_finished"

    def _append(self, data: bytes) -> None:
        assert self._fd is not None
        if self._torn:
            data = b"\n" + data
        before = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            # After the run's end is written (a `run_scored`, the notes after it), what
            # the disk took of a line is taken back: the transcript ends on its last
            # whole event, and nothing will repair it. Before, the torn tail stays: it
            # is how the next command's repair knows a full disk cut the run
            # (record/repair.py), and it mends the line then.
            cut = len(view) < len(data) or _size(self._fd) > before
            taken_back = cut and self._ended and cut_back(self._fd, before)
            self._torn = (cut and not taken_back) or self._torn
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(self.path) from None
            raise
        self._torn = False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return 0


def cut_back(fd: int, size: int) -> bool:
    """Cut the file back to `size` (taking back what a failed write left); whether that
    worked. Never raises: it runs while another error is on its way up."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        return False
    return True


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
