"""The notebook's tools: stored with their code note, re-tested in the sandbox, recalled
best-tested first (see lessons/forms/tools.py for what a tool is).

A tool is tested on other questions of its task type that have a known answer (a
target the scorer accepts, or a verified answer) or that the task's scorer checks
without one; each test is one sandbox run with the question on standard input, and
its pass rate is stored beside it. A question the tool passed adds its instruction's
words to what the tool knows.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from conductor_kernel.interfaces import Sandbox, TaskScoring
from conductor_kernel.stats import Z90, wilson_interval
from conductor_kernel.text.counts import plural
from lessons.forms.judging import scorer_verdict, usable_target
from lessons.forms.problems import core_input, same_question
from lessons.forms.tool_making import make_tool, outside_words
from lessons.forms.tools import (
    Tool,
    answer_from,
    applies,
    parses,
    program_for,
    reads,
    render_form,
)
from lessons.storage.store import Notebook
from lessons.values import NoteDraft

log = logging.getLogger("conductor.notebook")

TEST_TIMEOUT_S = 10.0
TESTS_PER_TOOL = 12


def _wilson(passes: int, tests: int, side: float) -> float:
    """One end of the Wilson score interval (90%) for `passes` of `tests`: side -1 the
    lower bound, +1 the upper."""
    low, high = wilson_interval(passes, tests, Z90)
    return low if side < 0 else high


@dataclass
class StoredTool:
    note_id: str
    type_id: str | None
    task: str
    tool: Tool
    tests: int
    passes: int

    @property
    def pass_rate(self) -> float:
        return self.passes / self.tests if self.tests else 0.0

    @property
    def rank_score(self) -> float:
        """Wilson lower bound of the pass rate: 12/12 ranks above 1/1 and 11/12."""
        return _wilson(self.passes, self.tests, -1.0) if self.tests else 0.0

    @property
    def upper_bound(self) -> float:
        """Wilson upper bound of the pass rate (1.0 untested): how good it may yet be."""
        return _wilson(self.passes, self.tests, +1.0) if self.tests else 1.0

    @property
    def failing(self) -> bool:
        """Its tests show it wrong more often than right (0 of 3, 2 of 12)."""
        return self.upper_bound < 0.5

    def describe(self) -> str:
        tested = (
            f"passed {self.passes} of {plural(self.tests, 'test')} on other questions of its kind"
            if self.tests
            else "not yet tested on other questions"
        )
        return (
            f'A program for questions of exactly the form "{render_form(self.tool)}"'
            f"{f' ({self.task})' if self.task else ''}: it reads those values and prints "
            f"the answer; {tested}."
        )


def tool_draft(
    question: str, code: str, stdout: str, answer: str, *, scoring: TaskScoring
) -> tuple[NoteDraft, Tool] | None:
    """The `tool` note a clean program that printed a verified answer makes, if any."""
    tool = make_tool(question, code, stdout, answer, scoring=scoring)
    if tool is None:
        return None
    draft = NoteDraft(
        kind="tool",
        text=f'A program for questions of exactly the form "{render_form(tool)}": it '
        "reads those values and prints the answer.",
        code=tool.program,
        confidence=0.8,
        skeleton=tool.tool_hash,
    )
    return draft, tool


def store_tool(conn: sqlite3.Connection, note_id: str, type_id: str, task: str, tool: Tool) -> None:
    """Keep the tool's spec beside its note (once; a second source adds to its words)."""
    row = conn.execute("select spec from tools where note_id = ?", (note_id,)).fetchone()
    if row is not None:
        known = Tool.from_json(row[0])
        known.vocabulary = sorted(set(known.vocabulary) | set(tool.vocabulary))
        # A second verified source in another form: the tool answers that form too.
        known.forms += [form for form in tool.forms if form not in known.forms]
        if len(known.shapes) == len(tool.shapes):
            known.shapes = [
                " ".join(sorted(set(a.split()) | set(b.split())))
                for a, b in zip(known.shapes, tool.shapes, strict=True)
            ]
        conn.execute(
            "update tools set spec = ?, updated_at = ? where note_id = ?",
            (known.to_json(), time.time(), note_id),
        )
        return
    conn.execute(
        "insert into tools (note_id, type_id, task, spec, updated_at) values (?, ?, ?, ?, ?)",
        (note_id, type_id, task, tool.to_json(), time.time()),
    )


def record_tests(conn: sqlite3.Connection, note_id: str, result: dict[str, Any]) -> list[int]:
    """Add tests made while learning (lessons/forms/tooltests.py) to a stored tool, inside the
    writer's transaction; a question it was already tested on is not counted twice.
    Returns the tool's [passes, tests] after."""
    row = conn.execute(
        "select tested_on, spec, passes, tests from tools where note_id = ?", (note_id,)
    ).fetchone()
    if row is None:
        return [0, 0]
    done = json.loads(row[0])
    fresh = [r for r in dict.fromkeys(result.get("tested_on", [])) if r not in done]
    if not fresh:
        return [row[2], row[3]]
    passed = sum(1 for r in fresh if r in set(result.get("passed_on", [])))
    tool = Tool.from_json(row[1])
    if passed:
        tool.vocabulary = sorted(set(tool.vocabulary) | set(result.get("words", [])))
    conn.execute(
        "update tools set tests = tests + ?, passes = passes + ?, tested_on = ?, spec = ?, "
        "updated_at = ? where note_id = ?",
        (len(fresh), passed, json.dumps(done + fresh), tool.to_json(), time.time(), note_id),
    )
    return [row[2] + passed, row[3] + len(fresh)]


def _stored(row: Any) -> StoredTool:
    return StoredTool(
        row["note_id"],
        row["type_id"],
        row["task"],
        Tool.from_json(row["spec"]),
        row["tests"],
        row["passes"],
    )


def tools_of(book: Notebook, type_ids: list[str] | None = None) -> list[StoredTool]:
    """The tools whose notes are not retired (of the given types)."""
    where = f" where type_id in ({','.join('?' * len(type_ids))})" if type_ids else ""
    rows = book.read("select * from tools" + where, type_ids or [])
    if not rows:
        return []  # the common case, kept free of any join with the notes
    marks = ",".join("?" * len(rows))
    retired = {
        r["id"]
        for r in book.read(
            f"select id from notes where retired = 1 and id in ({marks})",
            [r["note_id"] for r in rows],
        )
    }
    return [_stored(r) for r in rows if r["note_id"] not in retired]


def best_tools(
    book: Notebook,
    question: str,
    type_ids: list[str] | None = None,
    *,
    exclude_question: bool,
    signs_in_words: bool = False,
) -> list[StoredTool]:
    """Tools that apply to `question`, best-tested first; tools their tests show failing
    are left out. With `signs_in_words`, the tools that apply only once a word may hold
    signs (`parses`): those are for a check on the question to decide."""
    found = []
    for stored in tools_of(book, type_ids):
        if stored.failing:
            continue
        fits = applies(stored.tool, question, scoring=book.scoring)
        if signs_in_words:
            fits = not fits and parses(
                stored.tool, question, scoring=book.scoring, signs_in_words=True
            )
        if not fits:
            continue
        if exclude_question:
            source = book.read_one(
                "select source_question from notes where id = ?", (stored.note_id,)
            )
            if source and same_question(source["source_question"], question):
                continue
        found.append(stored)
    # An untested tool ranks above one whose tests have not shown it good yet.
    found.sort(key=lambda s: (-s.rank_score, -s.upper_bound, -s.tests))
    return found


def run_tool(tool: Tool, question: str, sandbox: Sandbox, *, scoring: TaskScoring) -> str | None:
    """The tool's answer to `question`, run in the sandbox; None when it gave none."""
    stdin = core_input(question, scoring)
    result = sandbox.run(program_for(tool), timeout=TEST_TIMEOUT_S, stdin=stdin)
    if not result.ok:
        return None
    return answer_from(tool, result.stdout)


def _test_questions(book: Notebook, stored: StoredTool, limit: int) -> list[dict[str, Any]]:
    """Questions of the tool's type with a known or checkable answer, not yet tried."""
    tool_row = book.read_one("select tested_on from tools where note_id = ?", (stored.note_id,))
    tried = set(json.loads(tool_row["tested_on"])) if tool_row else set()
    source = book.read_one("select source_run from notes where id = ?", (stored.note_id,))
    # Its kind: the same task when the runs named one, else the same task type.
    column, value = ("task", stored.task) if stored.task else ("type_id", stored.type_id)
    rows = book.read(
        "select run_id, question, task, answer, target, outcome from distilled_runs "
        f"where {column} = ? order by at",
        (value,),
    )
    out = []
    for row in rows:
        if row["run_id"] in tried or (source and row["run_id"] == source["source_run"]):
            continue
        if testable(row, stored.tool, stored.task, scoring=book.scoring):
            out.append(dict(row))
        if len(out) >= limit:
            break
    return out


def testable(row: dict[str, Any], tool: Tool, task: str, *, scoring: TaskScoring) -> bool:
    """Whether a stored question can test the tool: its answer is known or the task's
    scorer checks one without it, and the tool can read the question."""
    judge = scoring.judge_for(row["task"] or task)
    # A question asked without a task that is surely a built-in one is checkable too.
    checkable = (judge is None and scoring.recognise(row["question"]) is not None) or (
        judge is not None and not judge.needs_target
    )
    known = usable_target(row["target"], judge) is not None or row["outcome"] in (
        "correct",
        "verified",
    )
    return (checkable or known) and reads(tool, row["question"], scoring=scoring) is not None


def judge_answer(
    row: dict[str, Any], task: str, answer: str, sandbox: Sandbox | None, *, scoring: TaskScoring
) -> bool:
    """Whether a tool's answer to a stored question is right, by the task's scorer."""
    judge = scoring.judge_for(row["task"] or task)
    target = usable_target(row["target"], judge)
    recognised = scoring.recognise(row["question"]) if judge is None and target is None else None
    if recognised is not None:  # its scorer, not the one stored answer of many
        verdict = scorer_verdict(
            scoring,
            recognised.judge,
            recognised.task_input,
            answer,
            recognised.target,
            sandbox=sandbox,
        )
        return bool(verdict)
    if judge is not None:
        known = target
        if known is None and judge.needs_target and row["outcome"] in ("correct", "verified"):
            known = row["answer"]  # the stored verified answer stands in for a target
        verdict = scorer_verdict(scoring, judge, row["question"], answer, known, sandbox=sandbox)
        return bool(verdict)
    wanted = target or row["answer"] or ""
    return " ".join(answer.split()).lower() == " ".join(wanted.split()).lower()


def retest_tool(book: Notebook, stored: StoredTool, sandbox: Sandbox, *, limit: int) -> StoredTool:
    """Run the tool on up to `limit` new questions of its kind; store what it scored."""
    tried, passed, words = [], [], set(stored.tool.vocabulary)
    scoring = book.scoring
    for row in _test_questions(book, stored, limit):
        tried.append(row["run_id"])
        answer = run_tool(stored.tool, row["question"], sandbox, scoring=scoring)
        if answer is not None and judge_answer(row, stored.task, answer, sandbox, scoring=scoring):
            passed.append(row["run_id"])
            spans = reads(stored.tool, row["question"], scoring=scoring) or []
            words |= set(outside_words(core_input(row["question"], scoring), spans))
    if not tried:
        return stored
    result = {"tested_on": tried, "passed_on": passed, "words": sorted(words)}
    stored.passes, stored.tests = book.write(
        lambda conn: record_tests(conn, stored.note_id, result)
    )
    stored.tool.vocabulary = sorted(words)
    return stored


def retest_tools(
    book: Notebook,
    sandbox: Sandbox,
    *,
    type_ids: list[str] | None = None,
    per_tool: int = TESTS_PER_TOOL,
) -> list[StoredTool]:
    """Bring every tool (of the given types) up to `per_tool` tests."""
    out = []
    for stored in tools_of(book, type_ids):
        wanted = per_tool - stored.tests
        out.append(retest_tool(book, stored, sandbox, limit=wanted) if wanted > 0 else stored)
    return out
