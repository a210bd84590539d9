"""The notebook in a `Session`: recall before round 1, learning after every run.

`NotebookHooks.attach(session)` (or `build_session`, from the settings' `notebook`,
`recall` and `learn`) wires both in. Recall is read-only; learning is the only writer.
With `--no-learn` the notebook is only read: no notes, and no counters move.

Every notebook it uses is opened by `conductor.scoring.notebook.open_notebook`, with the
application's task scorers.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from conductor.scoring.notebook import open_notebook
from conductor.session.fresh_sandbox import FreshSandbox
from conductor_kernel.events import Event, Recall
from conductor_kernel.interfaces import ChatModel, Sandbox
from conductor_kernel.limits.ledger import UsageLedger
from lessons.read.recall import RecallOptions, recall
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, model_can_reflect, write_or_skip
from lessons.write.prepare import prepare_run
from record.fold import RunOutline

if TYPE_CHECKING:
    from conductor.session import Session

log = logging.getLogger("conductor.notebook")


class NotebookHooks:
    def __init__(
        self,
        book: Notebook,
        *,
        model: ChatModel | None = None,
        recall_options: RecallOptions | None = None,
        learn_options: LearnOptions | None = None,
    ) -> None:
        self.book = book
        self.model = model
        self.recall_options = recall_options or RecallOptions()
        self.learn_options = learn_options or LearnOptions()

    @classmethod
    def open(
        cls, path: Path | str | None = None, *, model: ChatModel | None = None
    ) -> NotebookHooks:
        """Hooks on the notebook at `path` (the default notebook when None)."""
        return cls(open_notebook(path), model=model)

    def _model(self, ledger: UsageLedger | None, purpose: str) -> ChatModel | None:
        """The model for the notebook's own calls, metered on the run's ledger."""
        if self.model is None or ledger is None or not model_can_reflect(self.model):
            return self.model  # an offline model makes no paid calls for the notebook
        return ledger.metered(self.model, purpose)

    def recall(
        self, question: str, *, ledger: UsageLedger | None = None, sandbox: Sandbox | None = None
    ) -> Recall:
        """The `Recall` event for a question (with no notes when nothing is relevant).

        The narrowing call's usage goes on `ledger`. A fitting tool's answer is checked
        in `sandbox` (a fresh one, never the run's) before it is offered. A notebook
        that cannot be read costs the run its notes, not the run itself.
        """
        model = self._model(ledger, "recall") if model_can_reflect(self.model) else None
        try:
            result = recall(
                self.book, question, model=model, options=self.recall_options, sandbox=sandbox
            )
        except sqlite3.Error as exc:
            log.warning("the notebook %s could not be read for recall: %s", self.book.path, exc)
            return Recall(task_type=None, notes=[], rendered="", tokens=0)
        best = result.best_type
        return Recall(
            task_type=f"{best['name']} ({best['id']})" if best else None,
            notes=result.event_notes(),
            rendered=result.rendered.text,
            tokens=result.rendered.tokens,
            checked=result.checked(),
        )

    def after_run(
        self,
        events: list[Event],
        *,
        ledger: UsageLedger | None = None,
        sandbox: Sandbox | None = None,
        cancelled: Callable[[], bool] | None = None,
        run: RunOutline | None = None,
    ) -> list[Event]:
        """Learn from a finished run (`run`: its session's fold of `events`); its model
        calls go on `ledger` as "learning".

        `sandbox` is a fresh one the session opened for these checks, never the run's
        own (conductor/session/fresh_sandbox.py): the tools the run made are tested in it,
        within the options' budget, and testing stops once `cancelled()` says the
        session was.
        """
        model = self._model(ledger, "learning")
        options = learning_options(self.learn_options, sandbox, cancelled)
        prepared = prepare_run(
            self.book, run if run is not None else events, model=model, options=options
        )
        if prepared is None:
            return []
        if cancelled is not None and cancelled():
            # Stopped while learning (a batch's first Ctrl-C, Esc in the TUI): the run
            # stands as recorded, and nothing is learned from it, as the CLI promises.
            log.info("run %s: stopped while learning; nothing written", prepared.run_id)
            return []
        return [write_or_skip(self.book, prepared, model=model, options=options)]

    def attach(self, session: Session, *, recall: bool = True, learn: bool = True) -> None:
        if recall:
            checked = CheckedRecall(self, session.fresh_sandbox)
            session.recall = checked
            if session.conductor is not None:
                session.conductor.recall = checked
        if learn:
            session.after_run.append(self.after_run)

    def close(self) -> None:
        self.book.close()


@dataclass(frozen=True)
class CheckedRecall:
    """The notebook's recall for a session: a fitting tool's answer is checked in a
    fresh sandbox from `opener`, started only if a check runs and closed at once.

    A batch builds its hooks once, on a template session with no sandbox, and hands the
    same recall to every item's session: each session rebinds it to its own opener
    (`with_opener`), so an item's recall checks tools as a `solve` does."""

    hooks: NotebookHooks
    opener: Callable[[], Sandbox | None] | None = None

    def with_opener(self, opener: Callable[[], Sandbox | None] | None) -> CheckedRecall:
        return replace(self, opener=opener)

    def __call__(self, question: str, *, ledger: UsageLedger | None = None) -> Recall:
        checks = FreshSandbox(self.opener) if self.opener is not None else None
        try:
            return self.hooks.recall(question, ledger=ledger, sandbox=checks)
        finally:
            if checks is not None:
                checks.close()


def learning_options(
    base: LearnOptions, sandbox: Sandbox | None, cancelled: Callable[[], bool] | None
) -> LearnOptions:
    """`base` for one run: the sandbox for its checks and its session's cancel flag.
    A copy, since one set of hooks serves every thread of a batch."""
    budget = replace(base.tool_budget, stop=cancelled or base.tool_budget.stop)
    return replace(base, sandbox=sandbox or base.sandbox, tool_budget=budget)
