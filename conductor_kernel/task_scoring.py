"""The port through which the notebook judges answers with the application's task scorers.

The scorers (Game of 24's arithmetic, the chess rules, a sonnet's form, `sat()` run in
the sandbox) belong to the application, above the notebook; the notebook must still
judge a run the way `conductor score` would (issue: trusted writes). So the kernel names
what the notebook needs, `TaskScoring`, and the application provides it as the Python
entry point `conductor.task_scoring` (see pyproject.toml). No import edge runs upward.

`use_task_scoring()` installs another implementation for a block (an embedding program,
a test); without any, nothing is judged by a scorer and the notebook falls back on the
evidence it can gather itself.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from importlib.metadata import entry_points
from typing import Protocol

from conductor_kernel.interfaces import Sandbox

log = logging.getLogger("conductor.task_scoring")

ENTRY_POINT_GROUP = "conductor.task_scoring"


@dataclass(frozen=True)
class TaskJudge:
    """A task's spec and scorer, and how to find the input part of a question."""

    name: str
    scorer: str
    description: str
    needs_target: bool

    def task_input(self, question: str) -> str:
        """The question less the task's description, as a task file holds it."""
        head = self.description.strip()
        if head and question.startswith(head):
            return question[len(head) :].strip()
        return question


@dataclass(frozen=True)
class RecognisedTask:
    """A question asked without a task that is surely an instance of one: the task's
    judge, the input its scorer reads, and the known answer the question fixes, if any."""

    judge: TaskJudge
    task_input: str
    target: str | None


class TaskScoring(Protocol):
    """What the notebook asks of the task scorers."""

    def judge_for(self, task: str) -> TaskJudge | None:
        """The judge of a task name (built-in or a scorer's name), None when unknown."""
        ...

    def verdict(
        self,
        judge: TaskJudge,
        question: str,
        answer: str,
        target: str | None,
        sandbox: Sandbox | None,
    ) -> bool | None:
        """The scorer's decision, or None when it cannot decide here."""
        ...

    def task_descriptions(self) -> tuple[str, ...]:
        """The built-in tasks' descriptions (a batch asks `description + input`)."""
        ...

    def claimed_number(self, answer: str, question: str) -> Fraction | None:
        """The number an answer commits to, as the numeric scorer reads it."""
        ...

    def recognise(self, question: str) -> RecognisedTask | None:
        """The task a question asked without one surely is (interactive runs), or None."""
        ...


class _NoScoring:
    """Nothing installed: no task is known, nothing is judged by a scorer."""

    def judge_for(self, task: str) -> TaskJudge | None:
        return None

    def verdict(
        self,
        judge: TaskJudge,
        question: str,
        answer: str,
        target: str | None,
        sandbox: Sandbox | None,
    ) -> bool | None:
        return None

    def task_descriptions(self) -> tuple[str, ...]:
        return ()

    def claimed_number(self, answer: str, question: str) -> Fraction | None:
        return None

    def recognise(self, question: str) -> RecognisedTask | None:
        return None


_lock = threading.Lock()
_installed: TaskScoring | None = None
_discovered: TaskScoring | None = None


def _discover() -> TaskScoring:
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    for point in found:
        try:
            factory = point.load()
            scoring: TaskScoring = factory()
            return scoring
        except Exception as exc:  # a broken plug-in must not stop a run from ending
            log.warning("the task scorers %r could not be loaded: %s", point.value, exc)
    return _NoScoring()


def task_scoring() -> TaskScoring:
    """The task scorers in use: an installed one, else the entry point's, else none."""
    global _discovered
    if _installed is not None:
        return _installed
    with _lock:
        if _discovered is None:
            _discovered = _discover()
        return _discovered


@contextlib.contextmanager
def use_task_scoring(scoring: TaskScoring | None) -> Iterator[None]:
    """Judge with `scoring` inside the block (None: with no scorers at all)."""
    global _installed
    previous = _installed
    _installed = scoring if scoring is not None else _NoScoring()
    try:
        yield
    finally:
        _installed = previous
