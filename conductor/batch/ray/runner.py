"""The batch runner on a Ray cluster: items run on the workers, the driver keeps the record.

The driver (this process) runs `concurrency` feeder threads. Each takes the next item,
hands it to the least busy worker (conductor/batch/ray/pool.py) and reads the item's
stream: events as they happen, written to the transcript and runs.db here, then the
item's record, appended to results.jsonl here, through the single-process runner's own
bookkeeping (`BatchRunner._finish`). Resume is therefore exactly as on one machine:
keyed by item id, whatever node ran the item.

A worker that dies (its node killed, its process gone) breaks the stream of every item
it had in flight: each goes back to the front of the queue and runs again on another
worker; the record says where it moved from, and the report lists the moves. Ray never
retries on its own, and the driver records an item's final result once at most, even
should a second one arrive.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from conductor import interrupts
from conductor.batch.ray.learning import ClusterLearning
from conductor.batch.ray.pool import Worker, WorkerPool
from conductor.batch.records import ItemRecord
from conductor.batch.runner import BatchPlan, BatchRunner, SessionOutcome, error_of
from conductor.tasks.files import TaskItem
from conductor_kernel.events import Event, RunFinished, RunStarted
from record.fold import outline
from record.writer import TranscriptWriter

log = logging.getLogger("conductor.batch")

MAX_MOVES = 3  # an item whose worker died this often is recorded as an error


class WorkerLost(Exception):
    """The worker running an item died (or became unreachable) before it ended."""


class RayBatchRunner(BatchRunner):
    """`BatchRunner` whose items run on a `WorkerPool` instead of local threads."""

    def __init__(
        self,
        plan: BatchPlan,
        pool: WorkerPool,
        learning: ClusterLearning,
        *,
        concurrency: int,
        index: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(plan, _no_session, concurrency=concurrency, **kwargs)
        self.pool = pool
        self.learning = learning
        self.index = index  # an IndexSink over runs.db, fed from the streams
        if index is not None:
            # As in a local batch: once stopped, do not wait on runs.db held locked by
            # another program (the transcripts have the runs; the next start catches up).
            index.index.give_up = self.stopping
        self.runs_path = plan.folder / "runs"
        self.moved: list[dict[str, Any]] = []
        self.duplicates_dropped = 0
        self._final_ids: set[str] = set()

    def pending(self) -> list[TaskItem]:
        waiting = super().pending()
        waiting_ids = {item.id for item in waiting}
        self._final_ids = {i.id for i in self.plan.items if i.id not in waiting_ids}
        return waiting

    def stop(self, reason: str) -> None:
        super().stop(reason)
        self.pool.broadcast("cancel", reason)

    def run(self) -> SessionOutcome:
        started = time.monotonic()
        self._queue = deque(self.pending())
        feeders = [
            threading.Thread(target=self._feed, name=f"ray-feeder-{n}", daemon=True)
            for n in range(min(self.concurrency, len(self._queue)))
        ]
        for feeder in feeders:
            feeder.start()

        def on_signal(name: str) -> bool:  # as on one machine: stop gently, record all
            self.outcome.user_interrupt = True
            self.stop(f"stopped by {name}")
            return True

        try:
            with interrupts.graceful(on_signal):
                for feeder in feeders:
                    while feeder.is_alive():
                        feeder.join(timeout=0.2)
        except KeyboardInterrupt:
            self.outcome.user_interrupt = True
            self.stop("interrupted by the user")
            for feeder in feeders:
                feeder.join(timeout=30)
        self.outcome.wall_s = time.monotonic() - started
        return self.outcome

    # -- feeders ---------------------------------------------------------------------------

    def _feed(self) -> None:
        while (item := self._take()) is not None:
            try:
                record = self._run_remote(item)
            except BaseException as exc:  # a bug here must not hang the batch
                log.exception("item %s: the Ray runner failed", item.id)
                record = self._base_record(item, None, time.time())
                record.update({"status": "error", "final": True, "error": _error(exc)})
            if record is not None:
                self._finish(record)

    def _run_remote(self, item: TaskItem) -> ItemRecord | None:
        moves: list[str] = []
        while True:
            worker = self.pool.acquire()
            try:
                result = self._attempt(item, worker, len(moves) + 1)
            except WorkerLost as lost:
                self.pool.lost(worker, item.id)
                moves.append(worker.label)
                log.warning("item %s: worker on %s lost (%s)", item.id, worker.label, lost)
                if len(moves) >= MAX_MOVES or self._stop.is_set():
                    record = self._base_record(item, None, time.time())
                    final = not self._stop.is_set()
                    message = f"its worker died {len(moves)} times ({lost})"
                    record.update(
                        {"status": "error", "final": final, "error": _error(WorkerLost(message))}
                    )
                    record["moved_from"] = moves
                    return record
                continue
            finally:
                self.pool.release(worker)
            break
        if moves:
            with self._lock:
                self.moved.append({"item_id": item.id, "from": moves, "to": worker.label})
        if result.get("record") is None:
            record = self._base_record(item, None, time.time())
            record.update(
                {"status": "error", "final": True, "error": _error(RuntimeError(result["error"]))}
            )
        else:
            record = result["record"]
        record["node"] = result.get("node", worker.label)
        if moves:
            record["moved_from"] = moves
        if result.get("stopped"):
            self.stop(result["stopped"])
        if record.get("final"):
            self.learning.received(result.get("learned"))
        return record

    def _attempt(self, item: TaskItem, worker: Worker, attempt: int) -> dict[str, Any]:
        """One run of `item` on `worker`: its events recorded here as they come."""
        import ray

        writer: TranscriptWriter | None = None
        events: list[Event] = []  # the run's, folded once for runs.db when it finishes
        stream = worker.actor.run_item.options(num_returns="streaming").remote(
            item, attempt, self.learning.snapshot()
        )
        try:
            for ref in stream:
                chunk = ray.get(ref)
                if "events" in chunk:
                    writer = self._record_events(chunk["events"], writer, events)
                else:
                    return chunk
        except ray.exceptions.RayTaskError as exc:  # the item's code failed, not the worker
            return {"record": None, "error": str(exc.cause or exc), "node": worker.label}
        except ray.exceptions.RayError as exc:
            raise WorkerLost(type(exc).__name__) from exc
        finally:
            if writer is not None:
                writer.close()
        raise WorkerLost("the stream ended without the item's record")

    def _record_events(
        self, raw: list[dict[str, Any]], writer: TranscriptWriter | None, events: list[Event]
    ) -> TranscriptWriter | None:
        for data in raw:
            event = Event.from_dict(data)
            if isinstance(event, RunStarted):
                writer = TranscriptWriter(self.runs_path / f"{event.run_id}.jsonl")
                events.clear()
            events.append(event)
            if writer is not None:
                writer.handle(event)
            if self.index is not None:
                self.index.handle(event)
                if isinstance(event, RunFinished):
                    self.index.record_findings(outline(events))
        return writer

    def _finish(self, record: ItemRecord) -> None:
        """Record an item's result, unless a final one for it is already recorded."""
        with self._lock:
            if record.get("item_id") in self._final_ids:
                self.duplicates_dropped += 1
                log.warning("item %s: a second final result was dropped", record.get("item_id"))
                return
            if record.get("final"):
                self._final_ids.add(str(record.get("item_id")))
        super()._finish(record)

    def append_to_transcript(self, event: Event) -> None:
        """An event that comes after the run (the notes the driver merged for it)."""
        path = self.runs_path / f"{event.run_id}.jsonl"
        if not path.exists():
            return
        with TranscriptWriter(path) as writer:
            writer.handle(event)
        if self.index is not None:
            self.index.index.attach(event.run_id, path)
            self.index.handle(event)


def _no_session(item: TaskItem) -> Any:
    raise RuntimeError("items of a Ray batch run on the workers")


def _error(exc: BaseException) -> dict[str, str]:
    return error_of(exc)  # the single-process runner's, with the failure's cause
