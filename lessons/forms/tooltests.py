"""Testing the tools a run made while learning from it, in that run's own sandbox.

`conductor notebook test-tools` tests every tool; this module tests only the tools one
run has just made (or made again), and does it inside the slow half of learning
(`lessons.write.prepare.prepare_run`), so a Ray worker can do it against its snapshot and
hand the results to the driver as data. Each tool is run on the stored questions of its
kind (the same task, or for questions without one the same task type) that have a
known answer or that the task's scorer checks without one, and that it has not been
tested on yet; the tool's own question and its repeats are left out.

Learning must not hold the user up, so the testing has a budget (`ToolBudget`): at most
`questions` sandbox runs in all and `seconds` of wall time, and it stops when the run's
session is cancelled. A test the budget cut short, or that the sandbox itself failed,
is not counted: it costs the tool that test, never the run or its other notes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.interfaces import Sandbox, TaskScoring
from lessons.forms.problems import core_input, same_question
from lessons.forms.tool_making import outside_words
from lessons.forms.toolbox import TEST_TIMEOUT_S, TESTS_PER_TOOL, judge_answer, testable
from lessons.forms.tools import Tool, answer_from, program_for, reads
from lessons.storage.store import Notebook
from lessons.values import NoteDraft

log = logging.getLogger("conductor.notebook")

LEARNING_TESTS = 12
"""Sandbox runs one learning may spend testing its tools (all of them together)."""
LEARNING_TEST_SECONDS = 20.0
"""Wall time one learning may spend testing its tools."""
MIN_TEST_SECONDS = 1.0
"""A test is not started with less time than this left in the budget."""


@dataclass
class ToolBudget:
    questions: int = LEARNING_TESTS
    # Read when a budget is made, so a test on a loaded machine can widen it.
    seconds: float = field(default_factory=lambda: LEARNING_TEST_SECONDS)
    stop: Callable[[], bool] | None = None
    """True once the run's session is cancelled: no further test starts."""
    clock: Callable[[], float] = time.monotonic


@dataclass
class ToolTestResult:
    """What one tool scored in this learning (JSON data: it crosses Ray)."""

    tested_on: list[str] = field(default_factory=list)  # run ids of the questions
    passed_on: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # instruction words of passed questions

    def to_dict(self) -> dict[str, Any]:
        return {"tested_on": self.tested_on, "passed_on": self.passed_on, "words": self.words}


@dataclass
class _Known:
    tool: Tool  # the stored tool the draft will join, else the draft's own
    tests: int = 0
    skip: set[str] = field(default_factory=set)  # run ids tested on, or the tool's sources


def run_tool_tests(
    book: Notebook,
    sandbox: Sandbox,
    tools: list[tuple[NoteDraft, Tool]],
    *,
    run_id: str,
    question: str,
    task: str,
    type_ids: list[str],
    budget: ToolBudget | None = None,
) -> tuple[dict[str, dict[str, Any]], str]:
    """Test each tool on stored questions of its kind, within the budget, judged by the
    notebook's scorers.

    A tool the notebook already holds (its note has the same text and program) is
    tested as stored, on questions it has not been tested on. Returns the results by
    the drafts' skeletons and a line saying what happened (the reflection's kind of
    status line: "tested …", "skipped: …", "stopped: …")."""
    budget = budget or ToolBudget()
    scoring = book.scoring
    deadline = budget.clock() + budget.seconds
    results: dict[str, dict[str, Any]] = {}
    runs = passes = 0
    stopped = ""
    needed = False
    for draft, new in tools:
        known = _known(book, draft, new)
        tool = known.tool
        wanted = TESTS_PER_TOOL - known.tests
        if wanted <= 0:
            continue
        needed = True
        skip = known.skip | {run_id}
        rows = _questions(book, tool, task, type_ids, question, skip, wanted)
        result = ToolTestResult()
        words: set[str] = set()
        for row in rows:
            if runs >= budget.questions:
                stopped = f"stopped at the cap of {budget.questions} questions"
            elif budget.stop is not None and budget.stop():
                stopped = "stopped: the run's session was cancelled"
            elif deadline - budget.clock() < MIN_TEST_SECONDS:
                stopped = f"stopped at the time budget of {budget.seconds:g} s"
            if stopped:
                break
            timeout = min(TEST_TIMEOUT_S, deadline - budget.clock())
            verdict, why = _one_test(tool, row, task, sandbox, timeout, scoring)
            if verdict is None:
                stopped = f"stopped: {why}"
                break
            runs += 1
            result.tested_on.append(row["run_id"])
            if verdict:
                passes += 1
                result.passed_on.append(row["run_id"])
                spans = reads(tool, row["question"], scoring=scoring) or []
                words |= set(outside_words(core_input(row["question"], scoring), spans))
        result.words = sorted(words)
        if result.tested_on:
            results[draft.skeleton] = result.to_dict()
        if stopped:
            break
    if not needed:
        return results, f"skipped: its tools already have {TESTS_PER_TOOL} tests"
    if runs == 0:
        # A tool is never tested on the questions it was made from (it would pass them).
        return results, stopped or (
            "skipped: no stored question of its kind that it was not made from or tested on"
        )
    summary = f"tested {len(results)} tool(s) on {runs} question(s): {passes} passed"
    return results, summary + (f"; {stopped}" if stopped else "")


def _one_test(
    tool: Tool,
    row: dict[str, Any],
    task: str,
    sandbox: Sandbox,
    timeout: float,
    scoring: TaskScoring,
) -> tuple[bool | None, str]:
    """Whether the tool answered the stored question right; None when the test does not
    count (the sandbox failed, or the budget, not the tool, ran out of time)."""
    stdin = core_input(row["question"], scoring)
    try:
        result = sandbox.run(program_for(tool), timeout=timeout, stdin=stdin)
    except Exception as exc:  # a sandbox that breaks costs the test, not the learning
        log.warning("a tool test could not run in the sandbox: %s", exc)
        return None, f"the sandbox failed ({type(exc).__name__}: {exc})"
    if result.infra_error:
        return None, f"the sandbox failed ({result.infra_error})"
    if result.timed_out and timeout < TEST_TIMEOUT_S:
        return None, f"the time budget ran out during a test ({timeout:.1f} s left)"
    answer = answer_from(tool, result.stdout) if result.ok else None
    if answer is None:
        return False, ""
    try:
        return judge_answer(row, task, answer, sandbox, scoring=scoring), ""
    except Exception as exc:
        log.warning("a tool test could not be judged: %s", exc)
        return None, f"the scorer failed ({type(exc).__name__}: {exc})"


def _known(book: Notebook, draft: NoteDraft, tool: Tool) -> _Known:
    """The stored tool the draft's note will join (the same text and program, as
    `lessons.storage.notes.add_note` decides), its tests, and the runs not to test it on."""
    rows = book.read(
        "select t.spec, t.tests, t.tested_on, n.source_run from tools t "
        "join notes n on n.id = t.note_id where n.retired = 0 and n.kind = 'tool' "
        "and (n.content_hash = ? or n.near_hash = ?) order by t.tests desc",
        (draft.content_hash, draft.near_hash),
    )
    if not rows:
        return _Known(tool)
    known = _Known(Tool.from_json(rows[0]["spec"]), int(rows[0]["tests"]))
    for row in rows:
        known.skip |= set(json.loads(row["tested_on"])) | {row["source_run"]}
    return known


def _questions(
    book: Notebook,
    tool: Tool,
    task: str,
    type_ids: list[str],
    question: str,
    skip: set[str],
    limit: int,
) -> list[dict[str, Any]]:
    """Stored questions of the tool's kind with a known or checkable answer that it can
    read, oldest first; none when the kind is unknown."""
    if task:
        where, args = "task = ?", [task]
    elif type_ids:
        where, args = f"type_id in ({','.join('?' * len(type_ids))})", list(type_ids)
    else:
        return []
    rows = book.read(
        "select run_id, question, task, answer, target, outcome from distilled_runs "
        f"where {where} order by at",
        args,
    )
    out: list[dict[str, Any]] = []
    for row in rows:
        if row["run_id"] in skip or same_question(row["question"], question):
            continue
        if testable(row, tool, task, scoring=book.scoring):
            out.append(dict(row))
            if len(out) >= limit:
                break
    return out
