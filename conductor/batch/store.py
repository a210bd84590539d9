"""A batch on disk: its id, its folder, its lock, and its results file.

A batch lives in `$CONDUCTOR_HOME/batches/<batch-id>/`:

    batch.json     what the batch is (its identity) and each session that worked on it
    results.jsonl  one line per item run, flushed and fsynced the moment it ends
    runs/          one transcript per item run
    batch.log      the log of every session
    report.md, report.json

The id is a hash of what decides the results (the caller's `identity`), so re-running
the same command finds the same folder. One process at a time may hold it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from conductor.batch.records import ItemRecord
from conductor_kernel.bounded import loads_json
from conductor_kernel.errors import UserFacingError
from record.home import home_dir
from record.writer import cut_back

FORMAT_VERSION = 1
RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "batch.json"


def batch_id(name: str, identity: dict[str, Any]) -> str:
    """`<task>-<12 hex>`: readable, and the same for the same command."""
    canonical = json.dumps(identity, sort_keys=True, default=str, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    return f"{safe_name(name, 40)}-{digest}"


def safe_name(text: str, width: int = 60) -> str:
    """`text` reduced to characters safe in a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:width] or "item"


def batches_dir() -> Path:
    return home_dir() / "batches"


class BatchFolder:
    """A batch's folder, held by one process at a time (an advisory lock that dies
    with the process, so a kill -9 leaves nothing to clean up)."""

    def __init__(self, batch_id: str, identity: dict[str, Any]) -> None:
        self.batch_id = batch_id
        self.path = batches_dir() / batch_id
        self.identity = identity
        self._lock_fh: Any = None

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST_FILE

    def acquire(self) -> None:
        import fcntl

        (self.path / "runs").mkdir(parents=True, exist_ok=True)
        fh = (self.path / ".lock").open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise UserFacingError(
                f"batch {self.batch_id} is being run by another process right now "
                f"({self.path}); wait for it to end, or stop it first"
            ) from None
        self._lock_fh = fh

    def release(self) -> None:
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def manifest(self) -> dict[str, Any]:
        try:
            data = loads_json(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict) or "identity" not in data:
            data = {"format_version": FORMAT_VERSION, "batch_id": self.batch_id}
            data.update(created_at=time.time(), identity=self.identity, sessions=[])
        return data

    def record_session(self, session: dict[str, Any]) -> int:
        """Add or update (by number) one session in batch.json; returns its number."""
        data = self.manifest()
        sessions = data.setdefault("sessions", [])
        number = session.get("number") or len(sessions) + 1
        session["number"] = number
        sessions[:] = [s for s in sessions if s.get("number") != number] + [session]
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.manifest_path)
        return number


class ResultsLog:
    """results.jsonl: read back tolerantly, appended one durable line at a time.

    A kill -9 can cut the last line short; reading skips it (that item runs again) and
    the next append starts on a fresh line so the damage never spreads.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.problems: list[str] = []

    def read(self) -> dict[str, ItemRecord]:
        """The latest record per item id; a final record is never undone by a
        non-final one (a later interrupted re-run of a finished item cannot happen,
        but a torn file should not make one)."""
        latest: dict[str, ItemRecord] = {}
        self.problems = []
        if not self.path.exists():
            return latest
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = loads_json(line)
                    item_id = str(record["item_id"])
                except (ValueError, KeyError, TypeError):  # JSONDecodeError, TooDeep
                    self.problems.append(
                        f"{self.path}:{number}: unreadable result line (cut short by a "
                        "crash?); ignored, so that item runs again"
                    )
                    continue
                if latest.get(item_id, {}).get("final") and not record.get("final"):
                    continue
                latest[item_id] = record
        return latest

    def append(self, record: ItemRecord) -> None:
        """One record, as one whole line. A write the disk cuts short is taken back (the
        file is cut to where it was), so no torn line is left; the error goes on to the
        caller, whose batch stops and resumes from here."""
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                before = os.fstat(fd).st_size
                if before and os.pread(fd, 1, before - 1) != b"\n":
                    data = b"\n" + data  # a torn line from a crash: start afresh
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                except OSError:
                    cut_back(fd, before)
                    raise
            finally:
                os.close(fd)


def is_finished(record: ItemRecord | None, *, retry_errors: bool = False) -> bool:
    if not record or not record.get("final"):
        return False
    return not (retry_errors and record.get("status") == "error")
