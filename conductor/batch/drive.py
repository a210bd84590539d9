"""One driver for every batch: a plain one, a comparison of methods, one on a Ray cluster.

The driver opens the batch's session in its folder (batch.json), keeps the batch log,
makes the plan, says what is left to run, runs it with the caller's progress shown, and
closes the session. A caller chooses only its runner (`local_runner` on this machine,
the cluster's `RayBatchRunner`) and what it reports, so the three batch commands of the
CLI parse, call `drive`, and print.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from conductor.batch import session as batch_session
from conductor.batch.records import ItemRecord, Tally
from conductor.batch.runner import BatchPlan, BatchRunner, SessionOutcome
from conductor.batch.setup import BatchSetup, IndexSink, make_scorer
from conductor.batch.store import BatchFolder
from conductor.config import Settings
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import TaskSpec

R = TypeVar("R", bound=BatchRunner)


class Progress(Protocol):
    """What the driver needs of a progress display (the CLI's conductor/cli/progress.py)."""

    def update(self, record: ItemRecord, tally: Tally) -> None: ...

    def shown(self, tally: Tally) -> AbstractContextManager[Any]: ...


# The runner for a plan, given the session it runs in (its number goes in each record).
RunnerFactory = Callable[[BatchPlan, batch_session.BatchSession], R]


@dataclass
class Driven(Generic[R]):
    """What a driven batch leaves for its report."""

    session: batch_session.BatchSession
    runner: R
    outcome: SessionOutcome


@contextlib.contextmanager
def _nothing(runner: Any, todo: list[TaskItem]) -> Iterator[None]:
    yield


def drive(
    folder: BatchFolder,
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    items: list[TaskItem],
    setup: BatchSetup,
    *,
    concurrency: int,
    progress: Progress,
    make_runner: RunnerFactory[R] | None = None,
    announce: Callable[[R, list[TaskItem]], str],
    describe: Callable[[TaskItem], dict[str, Any]] | None = None,
    recorded: dict[str, Any] | None = None,
    around: Callable[[R, list[TaskItem]], AbstractContextManager[Any]] = _nothing,
    closing: Callable[[], dict[str, Any]] = dict,
) -> Driven[R]:
    """Run the plan's pending items, on this machine unless `make_runner` says where
    (a cluster's). `announce(runner, todo)` is the line said before (on stderr);
    `around(runner, todo)` holds what lives while the items run (a cluster's workers);
    `recorded` goes into the session's entry at its start, `closing()` at its end."""
    runners = make_runner or local_runner(
        setup, concurrency=concurrency, progress=progress, retry_errors=args.retry_errors
    )
    session = batch_session.open_session(
        folder, args, settings, setup, concurrency, **(recorded or {})
    )
    with batch_session.batch_log(folder.path):
        plan = BatchPlan(
            folder.path,
            folder.batch_id,
            spec.name,
            items,
            setup.question,
            make_scorer(spec, setup.sandbox_name, settings),
            {"batch_id": folder.batch_id},
            describe=describe,
        )
        runner = runners(plan, session)
        todo = runner.pending()
        with around(runner, todo):
            print(announce(runner, todo), file=sys.stderr)
            with progress.shown(runner.tally):
                outcome = runner.run()
    batch_session.close_session(session, outcome, **closing())
    return Driven(session, runner, outcome)


def local_runner(
    setup: BatchSetup, *, concurrency: int, progress: Progress, retry_errors: bool
) -> RunnerFactory[Any]:
    """Items run in this process's threads, each into the batch's runs.db."""

    def make(plan: BatchPlan, session: batch_session.BatchSession) -> BatchRunner:
        index = IndexSink(plan.folder / "runs")
        runner = BatchRunner(
            plan,
            setup.make_session,
            concurrency=concurrency,
            sinks=(index,),
            on_record=progress.update,
            retry_errors=retry_errors,
            session_no=session.number,
            cells=setup.cells,
        )
        # A stopped batch does not wait for runs.db held locked by another program: the
        # transcripts have the runs, and the next start brings runs.db up to date.
        index.index.give_up = runner.stopping
        return runner

    return make
