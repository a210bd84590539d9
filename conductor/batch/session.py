"""One session of `conductor batch`, wherever its items run (in this process or on Ray).

What both ways share: the identity that names the batch's folder, the session's entry
in batch.json (opened before the items run, completed after), the notebook's state
before and after, the batch.log handler, the report assembled from results.jsonl, and
how the command ends (interrupted, stopped, or an exit code). See docs/batch.md.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conductor.batch.records import ItemRecord
from conductor.batch.report import notebook_state, peak_rss_mb, summarize
from conductor.batch.runner import BatchStopped, SessionOutcome
from conductor.batch.setup import BatchSetup
from conductor.batch.store import BatchFolder, ResultsLog
from conductor.config import Settings
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import TaskSpec
from conductor_kernel.text.display import VisibleFormatter

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def batch_identity(
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    setup: BatchSetup,
    *,
    learn_order: str,
) -> dict[str, Any]:
    """What decides the batch's results, hashed into its id (`batch_store.batch_id`)."""
    return {
        "task_file": str(Path(args.task_file).resolve()),
        "spec": spec.to_dict(),
        "replay": args.replay,
        "python": settings.run.python,
        "limits": {k: v for k, v in settings.run.limits().items() if k != "python_timeout_s"},
        "learn_order": learn_order if settings.learn else None,
        **setup.identity,
    }


@dataclass
class BatchSession:
    """This invocation's entry in batch.json and the notebook's state around it."""

    folder: BatchFolder
    setup: BatchSetup
    number: int
    info: dict[str, Any]
    notebook: dict[str, Any]


def open_session(
    folder: BatchFolder,
    args: argparse.Namespace,
    settings: Settings,
    setup: BatchSetup,
    concurrency: int,
    **extra: Any,
) -> BatchSession:
    """Record the session's start in batch.json and the notebook as it is before."""
    info: dict[str, Any] = {
        "started_at": time.time(),
        "concurrency": concurrency,
        "limit": args.limit,
        "argv": sys.argv[1:],
        **extra,
    }
    number = folder.record_session(info)
    notebook: dict[str, Any] = {
        "path": setup.notebook,
        "recall": settings.recall,
        "learn": settings.learn,
    }
    if setup.notebook:
        notebook["before"] = notebook_state(setup.notebook)
    return BatchSession(folder, setup, number, info, notebook)


def close_session(session: BatchSession, outcome: SessionOutcome, **extra: Any) -> None:
    """Complete the session's entry in batch.json; the notebook as it is after."""
    session.info.update(
        number=session.number,
        ended_at=time.time(),
        ran=outcome.ran,
        finished=outcome.finished,
        wall_s=round(outcome.wall_s, 3),
        stopped=outcome.stopped,
        peak_rss_mb=peak_rss_mb(),
        **extra,
    )
    session.folder.record_session(session.info)
    if session.setup.notebook:
        session.notebook["after"] = notebook_state(session.setup.notebook)


@contextmanager
def batch_log(folder: Path) -> Iterator[None]:
    """The `conductor` loggers also write to the folder's batch.log while this lasts."""
    handler = LogFile(folder / "batch.log", encoding="utf-8")
    handler.setFormatter(VisibleFormatter(LOG_FORMAT))
    root = logging.getLogger("conductor")
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.INFO, logging.INFO))
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


class LogFile(logging.FileHandler):
    """batch.log, which a full disk (or any write error) cuts short without stopping
    the batch: said once on stderr, never as logging's traceback, closing included."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        self._say(sys.exc_info()[1])

    def close(self) -> None:
        try:
            super().close()
        except OSError as exc:  # the last lines could not be flushed
            self._say(exc)
            stream, self.stream = self.stream, None
            with contextlib.suppress(OSError):
                if stream is not None:
                    os.close(stream.fileno())

    def _say(self, exc: BaseException | None) -> None:
        if self.failed:
            return
        self.failed = True
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        print(
            f"warning: cannot write {self.baseFilename} ({why}); the batch goes on and "
            "its results are kept, but this log is cut here. Free some space.",
            file=sys.stderr,
        )


def session_report(
    session: BatchSession,
    args: argparse.Namespace,
    spec: TaskSpec,
    items: list[TaskItem],
    log: ResultsLog,
) -> dict[str, Any]:
    """The report over the latest record of every item in scope (not yet written)."""
    latest = log.read()
    in_scope: list[ItemRecord] = [latest[i.id] for i in items if i.id in latest]
    folder, setup = session.folder, session.setup
    header = {
        "batch_id": folder.batch_id,
        "folder": str(folder.path),
        "task": spec.name,
        "scorer": spec.scorer,
        "task_file": str(Path(args.task_file).resolve()),
        "model": setup.model_name,
        "replay": args.replay,
    }
    return summarize(
        in_scope,
        total=len(items),
        header=header,
        session=session.info,
        notebook=session.notebook if setup.notebook else None,
    )


# Every item in scope finished, and not one of them was an answer that could be graded
# (all errors, declined, without an answer): the batch measured nothing of the model.
NOTHING_SCORED = 3


def exit_code(outcome: SessionOutcome, report: dict[str, Any]) -> int:
    """0 when every item finished, 1 when some remain, 3 when every item finished but
    no answer was scored; Ctrl-C and a stop are raised."""
    if outcome.user_interrupt:
        raise KeyboardInterrupt
    if outcome.stopped:
        errors = report.get("failures", {}).get("error", 0)
        # Items that ended in a system error are finished too: only --retry-errors
        # runs them again, and the message must say so.
        again = f" (add --retry-errors to run the {errors} that ended `error` again)"
        raise BatchStopped(
            f"batch stopped: {outcome.stopped}. Fix that, then re-run the same command: "
            f"the {report['items']['finished']} finished items are kept and skipped"
            f"{again if errors else ''}."
        )
    if report["items"]["remaining"]:
        return 1
    nothing = report["items"]["finished"] and not report["accuracy"].get("answers_scored")
    return NOTHING_SCORED if nothing else 0
