"""The batch runner: a task file's items through the conductor, concurrently, resumably.

Concurrency is plain threads, not asyncio: `Session.solve` blocks (each run already
drives its model calls from worker threads of its own), so N worker threads each take
the next item in file order and run it to the end. The caller builds every item's
`Session` around one shared meta model and one shared expert model, so all workers
share one `Backoff`: a rate limit seen by one worker pauses them all.

Every run's outcome is appended to the batch's results.jsonl the moment it ends (see
batch_store.py). An item is finished once a final line for it is there; an item in
flight when the process died has none and simply runs again, and one interrupted by
Ctrl-C or a stop gets a non-final line (reported as interrupted) and runs again too.

A stop signal must end the process within moments, at any concurrency: the items in
flight are cancelled and given `STOP_GRACE_S` to end recorded; the pool's sandboxes
are handed to their backends' reapers rather than waited for (cells.py); an item that
has not ended by then (a sandbox still starting, a model call that does not return)
is recorded as interrupted on its behalf and its thread, a daemon, is left behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor import interrupts
from conductor.batch.cells import CellPool
from conductor.batch.outcomes import base_record, complete, error_of, note_event
from conductor.batch.records import ItemRecord, Tally
from conductor.batch.store import RESULTS_FILE, ResultsLog, is_finished, safe_name
from conductor.scoring.base import paper_turn
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor_kernel.errors import (
    ConfigError,
    UnknownModelError,
    UserFacingError,
)
from conductor_kernel.events import (
    MetaTurnFinished,
    RunFinished,
    new_id,
)
from conductor_kernel.interfaces import SandboxUnavailable

log = logging.getLogger("conductor.batch")

# After a stop signal, how long items in flight get to end and write their own record.
STOP_GRACE_S = 1.5

# Given the final answer (None: the run gave none), the item, the run's sandbox and the
# meta model's last turn, a ScoreResult-shaped dict; None leaves the item unscored.
Scorer = Callable[[str | None, TaskItem, Any, str], dict[str, Any] | None]
SessionFactory = Callable[[TaskItem], Session]


class BatchStopped(UserFacingError):
    """A failure that would fail every item: the batch stopped, finished items are kept."""


def fails_every_item(exc: BaseException) -> bool:
    """A failure no other item would escape: stop the batch rather than repeat it."""
    if isinstance(exc, SandboxUnavailable | ConfigError | UnknownModelError):
        return True
    # Authentication refused or model unknown at the provider (the SDKs' status errors).
    status = getattr(exc.__cause__, "status_code", None)
    return status in (401, 403, 404)


@dataclass
class BatchPlan:
    """What to run: the items in scope (file order) and how to ask and score each."""

    folder: Path
    batch_id: str
    task: str
    items: list[TaskItem]
    question: Callable[[TaskItem], str]
    score: Scorer | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    # What else an item's record and its run's tags say about it (a comparison's
    # method and task item, conductor/batch/compare.py).
    describe: Callable[[TaskItem], dict[str, Any]] | None = None

    @property
    def results(self) -> ResultsLog:
        return ResultsLog(self.folder / RESULTS_FILE)


@dataclass
class SessionOutcome:
    """What one invocation of the runner did."""

    ran: int = 0
    finished: int = 0
    interrupted: int = 0
    wall_s: float = 0.0
    stopped: str | None = None  # why the batch stopped early, if it did
    user_interrupt: bool = False


def results_unwritable(path: Path, exc: OSError) -> str:
    """Why a batch stopped when its results file could not be written, and what to do."""
    import errno

    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    cause = "the disk holding it is full" if full else (exc.strerror or str(exc))
    return f"{path} could not be written ({cause}; {'free some space' if full else 'make it writable'})"


class BatchRunner:
    """Runs a plan's unfinished items on `concurrency` worker threads.

    `make_session(item)` builds the item's session (its own sandbox, shared models);
    the runner closes the sandbox after the run. `on_record` sees every record as it
    is written, with the updated tally (from worker threads: keep it quick).
    """

    def __init__(
        self,
        plan: BatchPlan,
        make_session: SessionFactory,
        *,
        concurrency: int = 4,
        sinks: tuple[Any, ...] = (),
        on_record: Callable[[ItemRecord, Tally], None] | None = None,
        retry_errors: bool = False,
        session_no: int = 1,
        cells: CellPool | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be 1 or more, not {concurrency}")
        self.plan = plan
        self.make_session = make_session
        self.concurrency = concurrency
        self.sinks = sinks
        self.on_record = on_record
        self.retry_errors = retry_errors
        self.session_no = session_no
        self.cells = cells  # the batch's sandboxes: a stop wakes items waiting for one
        self.log = plan.results
        self.tally = Tally(total=len(plan.items))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._live: dict[str, Session] = {}
        # Items a worker holds (id -> item, run id, start), and those given up on at a
        # stop signal: their record was written for them, the worker's own is dropped.
        self._in_flight: dict[str, tuple[TaskItem, str | None, float]] = {}
        self._given_up: set[str] = set()
        self._leaving_since: float | None = None
        self._queue: deque[TaskItem] = deque()
        self._error_streak = 0
        self.outcome = SessionOutcome()

    def pending(self) -> list[TaskItem]:
        """Items in scope with no final record yet, in file order."""
        done = self.log.read()
        for problem in self.log.problems:
            log.warning("%s", problem)
        self.tally = Tally(total=len(self.plan.items))
        waiting = []
        for item in self.plan.items:
            record = done.get(item.id)
            if is_finished(record, retry_errors=self.retry_errors):
                self.tally.add(record)  # type: ignore[arg-type]
            else:
                waiting.append(item)
        self.tally.done_before = self.tally.done
        return waiting

    def stopping(self) -> bool:
        """Whether the batch was stopped (a sink may then stop waiting on a lock)."""
        return self._stop.is_set()

    def stop(self, reason: str) -> None:
        """Start no more items and cancel those in flight (they will run again)."""
        with self._lock:
            if self.outcome.stopped is None:
                self.outcome.stopped = reason
            self._stop.set()
            live = list(self._live.values())
        for session in live:  # first: a run learning now must see the stop at once
            session.cancel()
        if self.cells is not None:
            self.cells.stop_waiting()

    def run(self) -> SessionOutcome:
        started = time.monotonic()
        self._queue = deque(self.pending())
        if self.cells is not None:
            # Sandboxes start ahead of the items, one spare per worker at most.
            self.cells.expect(len(self._queue), spares=self.concurrency)
        workers = [
            threading.Thread(target=self._work, name=f"batch-worker-{n}", daemon=True)
            for n in range(min(self.concurrency, len(self._queue)))
        ]
        for worker in workers:
            worker.start()

        def on_signal(name: str) -> bool:
            # A stop signal (interrupts.py) stops the batch gently: items in flight are
            # cancelled and end recorded as interrupted, so a re-run runs them again.
            self.outcome.user_interrupt = True
            self.stop(f"stopped by {name}")
            return True

        try:
            with interrupts.graceful(on_signal):
                self._wait_for(workers)
        except KeyboardInterrupt:
            self.outcome.user_interrupt = True
            self.stop("interrupted by the user")
            self._wait_for(workers)
        finally:
            if self.outcome.user_interrupt:
                self._leave()  # spares still starting are the backends' to end, unwaited
            elif self.cells is not None:
                self.cells.close_spares()
        self.outcome.wall_s = time.monotonic() - started
        return self.outcome

    def _wait_for(self, workers: list[threading.Thread]) -> None:
        """Until every worker is done; after a stop signal, `STOP_GRACE_S` at most."""
        while any(worker.is_alive() for worker in workers):
            if self.outcome.user_interrupt:
                self._leave()
                assert self._leaving_since is not None
                if time.monotonic() - self._leaving_since >= STOP_GRACE_S:
                    self._give_up_in_flight()
                    return
            for worker in workers:
                worker.join(timeout=0.05)  # short joins keep Ctrl-C deliverable

    def _leave(self) -> None:
        """A stop signal: the process leaves soon, so nothing waits for a sandbox."""
        if self._leaving_since is not None:
            return
        self._leaving_since = time.monotonic()
        if self.cells is not None:
            self.cells.abandon()

    def _give_up_in_flight(self) -> None:
        """Record every item still in flight as interrupted (it runs again on resume)."""
        with self._lock:
            stuck = [
                (item, run_id, began, self._live.get(key))
                for key, (item, run_id, began) in self._in_flight.items()
                if key not in self._given_up
            ]
            self._given_up.update(item.id for item, *_ in stuck)
        for item, run_id, began, session in stuck:
            # No session: its run never began, so it has no transcript.
            record = self._base_record(item, run_id if session else None, began)
            record["status"], record["final"] = "interrupted", False
            ledger = session.ledger if session is not None else None
            if ledger is not None:  # what its calls cost so far is the batch's cost too
                record["usage"] = ledger.total().to_dict()
                learning = ledger.learning_total()
                if learning.calls:
                    record["learning_usage"] = learning.to_dict()
            record["duration_s"] = round(time.time() - began, 3)
            log.warning("item %s: still running at the stop, recorded as interrupted", item.id)
            self._record(record)

    # -- workers ---------------------------------------------------------------------
    def _take(self) -> TaskItem | None:
        with self._lock:
            if self._stop.is_set() or not self._queue:
                return None
            return self._queue.popleft()

    def _work(self) -> None:
        while (item := self._take()) is not None:
            run_id = self._new_run_id(item)
            with self._lock:
                self._in_flight[item.id] = (item, run_id, time.time())
            try:
                record = self._run_item(item, run_id)
            except BaseException as exc:  # a bug here must not hang the batch
                log.exception("item %s: the runner failed", item.id)
                record = self._base_record(item, None, time.time())
                record.update({"status": "error", "final": True, "error": error_of(exc)})
            self._finish(record)

    def _run_item(self, item: TaskItem, run_id: str | None = None) -> ItemRecord:
        started = time.time()
        run_id = run_id or self._new_run_id(item)
        record = self._base_record(item, run_id, started)
        session: Session | None = None
        failure: BaseException | None = None
        finished: RunFinished | None = None
        last_turn = ""
        try:
            session = self.make_session(item)
            with self._lock:
                self._live[item.id] = session
            described = self.plan.describe(item) if self.plan.describe else {}
            events = session.solve(
                self.plan.question(item),
                sinks=self.sinks,
                run_id=run_id,
                task=self.plan.task,
                target=item.target,
                tags={**self.plan.tags, "item_id": item.id, **described},
            )
            for event in events:
                if self._stop.is_set():
                    session.cancel()  # a run that started after stop() was called
                note_event(event, record)
                if isinstance(event, MetaTurnFinished):
                    last_turn = paper_turn(event)
                elif isinstance(event, RunFinished):
                    finished = event
        except Exception as exc:
            failure = exc
            if fails_every_item(exc):
                self.stop(f"item {item.id} (line {item.line}) failed: {exc}")
        try:
            fatal = failure is not None and fails_every_item(failure)
            complete(record, finished, session, failure, fatal=fatal)
            if record["final"] and record["status"] != "error" and self.plan.score:
                # Never the run's own sandbox: what its cells left there must not shape
                # the verdict. A scorer that runs code opens one of its own (make_scorer).
                record["score"] = self._score(record.get("answer"), item, None, last_turn)
        finally:
            with self._lock:
                self._live.pop(item.id, None)
            if session is not None:
                session.close()
        record["duration_s"] = round(time.time() - started, 3)
        return record

    def _new_run_id(self, item: TaskItem) -> str:
        return f"{self.plan.batch_id[-8:]}-{safe_name(item.id, 48)}-{new_id()[:4]}"

    def _score(self, answer: str | None, item: TaskItem, sandbox: Any, output: str) -> Any:
        assert self.plan.score is not None
        try:
            return self.plan.score(answer, item, sandbox, output)
        except Exception as exc:  # a scorer problem is the scorer's, not the run's
            log.exception("item %s: the scorer failed", item.id)
            return {"error": f"{type(exc).__name__}: {exc}", "scored": False}

    def _base_record(self, item: TaskItem, run_id: str | None, started: float) -> ItemRecord:
        described = self.plan.describe(item) if self.plan.describe else {}
        return base_record(item, run_id, started, self.session_no, described)

    def _finish(self, record: ItemRecord) -> None:
        with self._lock:
            self._in_flight.pop(record["item_id"], None)
            if record["item_id"] in self._given_up:
                return  # recorded as interrupted at the stop already
        self._record(record)

    def _record(self, record: ItemRecord) -> None:
        record["finished_at"] = time.time()
        try:
            self.log.append(record)
        except OSError as exc:
            # results.jsonl is the batch's record: without it nothing more can count.
            # The item is not recorded, so it runs again when the batch resumes.
            log.error("item %s: results.jsonl could not be written: %s", record["item_id"], exc)
            self.stop(results_unwritable(self.log.path, exc))
            return
        with self._lock:
            self.outcome.ran += 1
            self.outcome.finished += bool(record.get("final"))
            self.outcome.interrupted += not record.get("final")
            self.tally.add(record)
            if record.get("final"):
                self._error_streak = self._error_streak + 1 if record["status"] == "error" else 0
            streak = self._error_streak
        limit = max(5, self.concurrency)
        if streak >= limit:
            message = (record.get("error") or {}).get("message", "")
            self.stop(f"the last {streak} items all failed; the latest: {message}")
        if self.on_record is not None:
            self.on_record(record, self.tally)
