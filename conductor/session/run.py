"""One run end to end: drive the loop, feed every sink, fold the run once.

The CLI, the batch runner and the TUI all start runs through `Session`, so a run is
recorded the same way whoever started it. The transcript is written event by event and
closed in `finally`: an interrupted or crashed run keeps everything it did. The session
folds a finished run once (record/fold.py) and hands that fold to the runs index, the
scorer and the notebook; nothing reads the transcript back to learn what the run did.
A session closes its sandbox when it is closed (`with session:` or `close()`).
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from conductor.session.fresh_sandbox import FreshSandbox
from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    FinalAnswer,
    NotesWritten,
    Recall,
    RunFinished,
    RunScored,
    RunStarted,
)
from conductor_kernel.interfaces import AnswerCheck, ChatModel, EventSink, Method, Sandbox, Usage
from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from record.fold import RunOutline, outline
from record.home import runs_dir
from record.repair import summarise
from record.writer import TranscriptWriter
from transcripts.index import RunIndex

log = logging.getLogger("conductor")


# Statuses after which nothing is learned: the run did not end on its own terms.
NO_LEARNING = ("error", "interrupted")


@dataclass
class RunResult:
    """A run as its session recorded it: its start, its final answer (the last one
    given), the end the loop gave it (None when it was cut off before that: the end the
    session wrote for it is in the fold), and its one fold, made when it ended (the
    verdict and the notes written after that are added to the fold as they come)."""

    started: RunStarted | None = None
    answer: str | None = None
    finished: RunFinished | None = None
    outline: RunOutline | None = None


def _task_check() -> AnswerCheck:
    from conductor.scoring.answer_check import TaskAnswerCheck

    return TaskAnswerCheck()


@dataclass
class Session:
    """Everything a run needs; `solve` runs one question and yields its events.

    The end of a run is recorded by construction: every sink (the transcript writer
    aside) is isolated, so one that raises is logged and the run goes on; `RunFinished`
    is written and delivered before any learning starts; and if the run is cut off by
    anything at all (Ctrl-C, a signal turned into an exception, the consumer closing
    the generator, a bug), the `finally` writes a `RunFinished` from what was recorded.
    """

    meta_model: ChatModel
    expert_model: ChatModel | None = None
    sandbox: Sandbox | None = None
    config: RunConfig = field(default_factory=RunConfig)
    index: RunIndex | None = None
    runs_path: Path | None = None
    # Called as recall(question, ledger=...): its model calls go on the run's ledger.
    recall: Callable[..., Recall | None] | None = None
    # Called as hook(events, ledger=..., sandbox=..., cancelled=...) with the finished
    # run's events, a sandbox for its checks (a fresh one from `fresh_sandbox`, never
    # the run's own; None without a factory) and a callable that is true once the
    # session is cancelled; the notebook's write path hooks in here. Its model calls go
    # on the ledger as "learning".
    after_run: list[Callable[..., list[Event]]] = field(default_factory=list)
    # How the run asks its model (conductor/methods); None: meta-prompting, with Python
    # as `config.python` says.
    method: Method | None = None
    # Opens a sandbox like the run's for the after-run checks (tool tests, reproduced
    # answers, scorers that run code): what the run's cells left behind must not shape
    # them. Started only when a check runs code, closed when the hooks are done.
    fresh_sandbox: Callable[[], Sandbox | None] | None = None
    # Score each run when it ends (conductor/scoring/runs.py): a `RunScored` event
    # after `RunFinished` for a run with a target or a checker.
    scoring: bool = True
    # A session for one run (a batch's item) hands its sandbox back as the run ends,
    # before scoring and learning: a batch's next item takes the cell meanwhile.
    single_run: bool = False
    # The task's own check of answers (and of what programs print), asked before a
    # meta-prompting run takes an answer (conductor/scoring/answer_check.py).
    answer_check: AnswerCheck | None = field(default_factory=_task_check)
    conductor: Conductor | None = None
    # "idle", "running", "learning": lets a signal handler choose how to stop.
    phase: str = "idle"
    ledger: UsageLedger | None = None  # the current (or last) run's ledger
    last: RunResult = field(default_factory=RunResult)  # the current (or last) run
    # Why the session cancelled its own run (a sink's reader went away), if it did.
    stopped_by: str | None = None
    # What the run's record could not be stored in (its transcript, runs.db): the run
    # is then not a grade of the model, and a batch records it as a storage error.
    storage_failures: list[str] = field(default_factory=list)
    _dead: set[int] = field(default_factory=set, repr=False)
    _warned: set[int] = field(default_factory=set, repr=False)  # sinks that failed once
    _cut_off: bool = field(default=False, repr=False)  # ended by an exception, not the loop
    # A cancel asked for this run, kept until it ends: the loop clears its own flag when
    # it starts, and a cancel that came before that (a signal, Esc) was lost.
    _cancel_asked: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        # A recall shared by a batch's sessions checks tools in this session's sandboxes
        # (conductor/session/notebook_hooks.py: CheckedRecall).
        rebind = getattr(self.recall, "with_opener", None)
        if rebind is not None and self.fresh_sandbox is not None:
            self.recall = rebind(self.fresh_sandbox)
        self.conductor = Conductor(
            self.meta_model,
            self.expert_model,
            self.sandbox,
            self.config,
            recall=self.recall,
            method=self.method,
            answer_check=self.answer_check,
        )

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release what the session holds for its runs: the sandbox."""
        if self.sandbox is not None:
            self.sandbox.close()

    def run(self, question: str, **options: Any) -> RunResult:
        """Run `question` to its end, learning included, for a caller that does not
        stream; the options are `solve`'s."""
        for _ in self.solve(question, **options):
            pass
        return self.last

    def cancel(self) -> None:
        """Stop the run in flight at its next step, or the next run at its first one."""
        assert self.conductor is not None
        self._cancel_asked.set()
        self.conductor.cancel()

    @property
    def cancelled(self) -> bool:
        assert self.conductor is not None
        return self._cancel_asked.is_set() or self.conductor.cancelled

    def solve(
        self,
        question: str,
        *,
        sinks: tuple[EventSink, ...] = (),
        run_id: str | None = None,
        task: str = "",
        target: str | None = None,
        tags: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        assert self.conductor is not None
        directory = self.runs_path or runs_dir()
        writer: TranscriptWriter | None = None
        events: list[Event] = []
        ledger = self.ledger = UsageLedger()
        result = self.last = RunResult()
        self.stopped_by = None
        self.storage_failures = []
        self._dead = set()
        self._warned = set()
        self._cut_off = False
        if self.index is not None:
            # A stopped run does not wait for runs.db held locked by another program:
            # its transcript is the record, and runs.db catches up later.
            self.index.give_up = self._stopping
        finished: RunFinished | None = None
        started_at = time.monotonic()
        self.phase = "running"
        try:
            for event in self.conductor.run(
                question, run_id=run_id, task=task, target=target, tags=tags, ledger=ledger
            ):
                if isinstance(event, RunStarted):
                    result.started = event
                    if self._cancel_asked.is_set():
                        self.conductor.cancel()  # asked before the loop cleared its flag
                    writer = TranscriptWriter(directory / f"{event.run_id}.jsonl")
                    if self.index is not None:
                        self.index.attach(event.run_id, writer.path)
                elif isinstance(event, FinalAnswer):
                    result.answer = event.answer
                elif isinstance(event, RunFinished):
                    finished = result.finished = event
                self._deliver(event, writer, sinks)
                if not event.transient:
                    events.append(event)
                if event is finished:
                    self._fold(events, sinks)
                yield event
            if self.single_run and self.sandbox is not None:
                self.sandbox.close()
            verdict = self._score(result.outline) if result.outline is not None else None
            if verdict is not None:
                self._deliver(verdict, writer, sinks)
                events.append(verdict)
                yield verdict
            if (
                finished is not None
                and finished.status not in NO_LEARNING
                and not self.cancelled
                and not _off_protocol(events)
            ):
                self.phase = "learning"
                assert result.outline is not None
                for item in self._after(events, result.outline, ledger):
                    self._deliver(item, writer, sinks)
                    if isinstance(item, NotesWritten):
                        result.outline.notes_written.append(item)  # as the fold places it
                    yield item
        except BaseException as exc:
            self._cut_off = True
            if finished is None and events:
                # Cut off before the loop could say how the run ended: say it here.
                status = "error" if isinstance(exc, Exception) else "interrupted"
                finished = summarise(events, events[0].run_id, status=status)
                finished.usage = ledger.run_total()
                finished.meta_usage = ledger.total("meta")
                finished.duration_s = time.monotonic() - started_at
                if isinstance(exc, Exception):
                    error = ErrorEvent(
                        run_id=finished.run_id, message=str(exc), where=type(exc).__name__
                    )
                    self._deliver(error, writer, sinks)
                    events.append(error)
                self._deliver(finished, writer, sinks)
                events.append(finished)
                self._fold(events, sinks)
            raise
        finally:
            self.phase = "idle"
            self._cancel_asked.clear()
            if writer is not None:
                writer.close()

    def _fold(self, events: list[Event], sinks: tuple[EventSink, ...]) -> None:
        """Fold the finished run, once, and hand the fold to the runs index and to every
        sink that keeps the run's findings (a batch's runs.db feed)."""
        run = self.last.outline = outline(events)
        for target in (self.index, *sinks):
            if target is not None and hasattr(target, "record_findings"):
                self._guarded(target, None, "run_finished", partial(target.record_findings, run))

    def _score(self, run: RunOutline) -> RunScored | None:
        """The run's verdict by its task's scorer, added to its fold; a scorer that
        fails costs no run."""
        if not self.scoring:
            return None
        from conductor.scoring.runs import score_run

        try:
            verdict = score_run(run, scored_at="run end")
        except Exception:
            log.exception("scoring the run failed; the run itself is saved")
            return None
        if verdict is not None:
            run.scored = verdict  # what folding the verdict's event would do
        return verdict

    def _stopping(self) -> bool:
        return self._cut_off or self.cancelled

    def _after(self, events: list[Event], run: RunOutline, ledger: UsageLedger) -> list[Event]:
        produced: list[Event] = []
        checks = FreshSandbox(self.fresh_sandbox) if self.fresh_sandbox is not None else None
        try:
            for hook in self.after_run:
                mark = ledger.mark()
                try:
                    made = hook(
                        events,
                        ledger=ledger,
                        sandbox=checks,
                        cancelled=lambda: self.cancelled,
                        run=run,
                    )
                except Exception:  # learning must never cost the user the run
                    log.exception("an after-run hook failed; the run itself is saved")
                    continue
                spent = ledger.since(mark)
                for item in made:
                    if isinstance(item, NotesWritten):
                        item.usage = spent
                        spent = Usage()  # one event carries the hook's spending
                produced.extend(made)
        finally:
            if checks is not None:
                checks.close()
        return produced

    def _deliver(
        self, event: Event, writer: TranscriptWriter | None, sinks: tuple[EventSink, ...]
    ) -> None:
        """Hand an event to the transcript, the index and every sink, each on its own.

        The transcript is the record: a failure to write it is logged loudly, as is any
        other sink's, and the run goes on (the index can be rebuilt from transcripts).
        """
        targets: list[Any] = []
        if writer is not None:
            targets.append(writer)
        if self.index is not None and not event.transient:
            targets.append(self.index)
        targets.extend(sinks)
        for target in targets:
            self._guarded(target, writer, event.kind, partial(target.handle, event))

    def _guarded(
        self, target: Any, writer: TranscriptWriter | None, kind: str, call: Callable[[], object]
    ) -> None:
        """`call` (a delivery to `target`), with what a failure of it means handled."""
        if id(target) in self._dead:
            return
        try:
            call()
        except Exception as exc:
            if target is not writer and _reader_gone(exc):
                # Nobody reads this output any more (`| head`, a closed terminal):
                # stop the run, as a shell would, and record that it was stopped.
                self._dead.add(id(target))
                self.stopped_by = self.stopped_by or "output closed"
                self.cancel()
                return
            if target is writer or target is self.index or _stores(target):
                where = "the transcript" if target is writer else "runs.db"
                self.storage_failures.append(
                    f"{where} could not take a {kind} event ({type(exc).__name__}: {exc})"
                )
            if id(target) in self._warned:
                return  # said once per run: a full disk fails every event
            self._warned.add(id(target))
            if isinstance(exc, UserFacingError):
                log.warning("%s The run goes on.", exc)
                return
            log.warning(
                "%s could not take a %s event (%s: %s); the run goes on",
                type(target).__name__,
                kind,
                type(exc).__name__,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )


def _off_protocol(events: list[Event]) -> bool:
    """Whether the run was stopped because its model ignored the protocol: such a run
    says nothing about the task, only about the model's format."""
    from conductor_kernel.events import Observation
    from conductor_kernel.run.conversation import OFF_PROTOCOL

    return any(isinstance(e, Observation) and e.reason == OFF_PROTOCOL for e in events)


def _stores(target: Any) -> bool:
    """A sink that keeps the run's record (a batch's runs.db feed): its failure is a
    storage failure of the run, not a display's."""
    return bool(getattr(target, "stores_record", False))


def _reader_gone(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (
        isinstance(exc, OSError) and exc.errno in (errno.EIO, errno.EPIPE)
    )
