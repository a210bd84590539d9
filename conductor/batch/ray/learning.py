"""Learning across a cluster's workers: the driver is the notebook's single writer.

Policies (the user's choice, recorded in the report):
- `frozen`: every worker recalls from the notebook as it was when the batch (session)
  started; learned notes are merged once, at the end.
- `waves`: the driver merges the notes learned so far every N finished items, and the
  workers switch to the new snapshot before their next item.
- `off`: nothing is learned (recall, if on, reads the frozen snapshot).

Workers send each run prepared for the notebook (`lessons.write.prepare.PreparedRun`, the
slow half of learning); the driver writes it with `lessons.write.learn.write_prepared`, the
same write as learning on one machine. The driver
appends them to `learned.jsonl` in the batch folder the moment they arrive (flushed and
fsynced, like results.jsonl), so a driver that dies loses no learning: the next session
merges what is there. Merging is by run id, so nothing is learned twice.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from conductor_kernel.bounded import json_lines, loads_json
from conductor_kernel.events import NotesWritten

log = logging.getLogger("conductor.batch")

LEARNED_FILE = "learned.jsonl"


class ClusterLearning:
    """Snapshots out to the workers, learned runs in, merges at the policy's times."""

    def __init__(
        self,
        policy: str,
        *,
        notebook: str | None,
        folder: Path,
        recall: bool,
        every: int = 25,
        model: Any = None,
        on_written: Any = None,
    ) -> None:
        self.policy = policy if notebook else "off"
        self.notebook = Path(notebook) if notebook else None
        self.recall = recall and notebook is not None
        self.every = max(1, every)
        self.model = model
        self.on_written = on_written  # called with each NotesWritten event
        self.path = folder / LEARNED_FILE
        self._lock = threading.Lock()
        self._merge_lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []
        self._since_wave = 0
        self.version = 0
        self._ref: Any = None
        self.waves = 0
        self.runs_received = 0
        self.runs_merged = 0
        self.notes = {"added": 0, "merged": 0, "skipped": 0}

    @property
    def learning(self) -> bool:
        return self.policy in ("frozen", "waves")

    def start(self) -> None:
        """Pick up learned runs a dead driver left unmerged; take the first snapshot."""
        if self.learning and self.path.exists():
            for line in json_lines(self.path.read_text(encoding="utf-8")):
                try:
                    self._pending.append(loads_json(line))
                except ValueError:
                    continue  # a line cut by a kill; that run's item ran again
        if self.learning and self.policy == "waves" and self._pending:
            self.merge()
        self._publish()

    def snapshot(self) -> tuple[int, list[Any]] | None:
        """What a worker recalls from: (version, [object ref of the notebook's bytes])."""
        with self._lock:
            return (self.version, [self._ref]) if self._ref is not None else None

    def _publish(self) -> None:
        if not (self.recall or self.learning) or self.notebook is None:
            return
        import ray

        from lessons.exchange.merge import snapshot_bytes

        ref = ray.put(snapshot_bytes(self.notebook))
        with self._lock:
            self.version += 1
            self._ref = ref

    def received(self, learned: dict[str, Any] | None) -> None:
        """One finished item's learned notes (None: it learned nothing)."""
        if not self.learning:
            return
        wave = False
        with self._lock:
            if learned is not None:
                line = json.dumps(learned, ensure_ascii=False) + "\n"
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(line)
                    fh.flush()
                    os.fsync(fh.fileno())
                self._pending.append(learned)
                self.runs_received += 1
            self._since_wave += 1
            if self.policy == "waves" and self._since_wave >= self.every:
                self._since_wave = 0
                wave = True
        if wave:
            self.merge()
            self.waves += 1
            self._publish()

    def merge(self) -> None:
        """Write every pending learned run into the notebook (the single writer)."""
        if self.notebook is None:
            return
        from conductor.scoring.notebook import open_notebook
        from lessons.write.learn import PreparedRun, write_prepared

        with self._merge_lock:
            with self._lock:
                pending, self._pending = self._pending, []
            if not pending:
                return
            book = open_notebook(self.notebook)
            try:
                for data in pending:
                    written = write_prepared(book, PreparedRun.from_dict(data), model=self.model)
                    if written is None:
                        continue  # learned by an earlier session already
                    self._count(written)
            finally:
                book.close()

    def _count(self, written: NotesWritten) -> None:
        self.runs_merged += 1
        self.notes["merged"] += written.merged
        self.notes["skipped"] += written.skipped
        self.notes["added"] += len(written.note_ids) - written.merged - written.skipped
        if self.on_written is not None:
            self.on_written(written)

    def finish(self) -> None:
        if self.learning:
            self.merge()

    def summary(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "every": self.every if self.policy == "waves" else None,
            "waves": self.waves,
            "snapshots": self.version,
            "runs_received": self.runs_received,
            "runs_merged": self.runs_merged,
            "notes": dict(self.notes),
        }
