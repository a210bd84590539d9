"""A fitting tool's answer is checked on the question asked before recall offers it
(issue 25). That a question parses under a tool's form says the program can read it,
not that it answers it: here the tool is a search that only knows one shape of
expression and prints a wrong sum when that shape has no solution. Over generated Game
of 24 puzzles, a tool recall shows with a sandbox always answers the question right, and
it is shown exactly where its answer passes the task's check.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import run_events

from conductor.scoring.game24 import check_expression
from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel.interfaces import ExecResult
from lessons.read.recall import TOOLS_CHECKED, RecallOptions, recall
from lessons.read.render import CHECKED_HERE
from lessons.storage.store import Notebook
from lessons.write.learn import learn_from_run
from sandbox.subprocess_backend import SubprocessSandbox

# Finds only a * b - c - d; otherwise prints the plain sum, a wrong answer.
PARTIAL_SEARCH = """from itertools import permutations
NUMBERS = {numbers!r}
def find(nums):
    for a, b, c, d in permutations(nums):
        if a * b - c - d == 24:
            return f"{{a}} * {{b}} - {{c}} - {{d}}"
    return " + ".join(str(n) for n in nums)
print(find(NUMBERS))
"""
LEARNED = [3, 3, 5, 6]  # 5 * 6 - 3 - 3
SOLVABLE = [2, 2, 4, 7]  # 4 * 7 - 2 - 2: the partial search finds it
SAYS = CHECKED_HERE.strip()[:24]


def _question(numbers: list[int]) -> str:
    return f"Use {' '.join(map(str, numbers))} to make 24"


def _partial_answer(numbers: list[int]) -> str:
    scope: dict[str, Any] = {}
    exec(PARTIAL_SEARCH.format(numbers=numbers).replace("print(find(NUMBERS))", ""), scope)
    return str(scope["find"](numbers))


def _book(folder: str) -> Notebook:
    book = open_notebook(Path(folder) / "nb.db")
    answer = _partial_answer(LEARNED)
    events = run_events(
        "made", _question(LEARNED), answer, code=PARTIAL_SEARCH.format(numbers=LEARNED)
    )
    learn_from_run(book, events)
    assert book.read("select 1 from tools"), "the learned run made no tool"
    return book


def _right(numbers: list[int], answer: str | None) -> bool:
    return bool(answer) and check_expression(str(answer), numbers).correct


NUMBERS = st.lists(st.integers(1, 13), min_size=4, max_size=4).filter(
    lambda ns: sorted(ns) != sorted(LEARNED)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numbers=NUMBERS)
def test_a_shown_tool_answers_the_question_asked(numbers: list[int]) -> None:
    question = _question(numbers)
    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder)
        box = SubprocessSandbox()
        try:
            result = recall(book, question, options=RecallOptions(), sandbox=box)
            tools = [s.note for s in result.shown if s.note["kind"] == "tool"]
            # What the shown program prints on this question, run as the meta model would.
            printed = [box.run(t["code"], timeout=10) for t in tools]
        finally:
            box.close()
            book.close()
    works = _right(numbers, _partial_answer(numbers))
    assert bool(tools) == works, (question, works, [t["code"] for t in tools])
    for note, run in zip(tools, printed, strict=True):
        assert _right(numbers, run.stdout.strip().splitlines()[-1])
        assert note["checked_answer"] == _partial_answer(numbers)
        assert SAYS in result.rendered.text and note["checked_answer"] in result.rendered.text


def test_without_a_sandbox_the_tool_is_shown_unchecked() -> None:
    """Nothing ran it here, so nothing says its answer was checked on this question."""
    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder)
        result = recall(book, _question([1, 1, 1, 1]), options=RecallOptions())
        book.close()
    tools = [s.note for s in result.shown if s.note["kind"] == "tool"]
    assert tools and "checked_answer" not in tools[0]
    assert SAYS not in result.rendered.text


def test_a_tool_that_prints_nothing_readable_is_passed_over() -> None:
    class Silent:
        name = "silent"
        runs = 0

        def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
            self.runs += 1
            return ExecResult(stdout="", stderr="Traceback: boom", exit_code=1)

        def close(self) -> None: ...

    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder)
        # More fitting tools, each from its own run: every one prints nothing here.
        for i, numbers in enumerate(([2, 4, 5, 6], [1, 3, 4, 7], [3, 4, 5, 8], [1, 2, 3, 9])):
            # The same search written another way each time: four more tools.
            code = PARTIAL_SEARCH.format(numbers=numbers).replace(" - c - d", f" - c - d + {i} * 0")
            answer = _partial_answer(numbers)
            learn_from_run(book, run_events(f"more{i}", _question(numbers), answer, code=code))
        assert len(book.read("select 1 from tools")) > TOOLS_CHECKED
        silent = Silent()
        result = recall(book, _question(SOLVABLE), options=RecallOptions(), sandbox=silent)
        book.close()
    assert not [s for s in result.shown if s.note["kind"] == "tool"]
    # Only the best few are run before round 1: each check is a sandbox run.
    assert silent.runs == TOOLS_CHECKED


def test_a_sandbox_that_fails_leaves_the_tool_shown_as_unchecked() -> None:
    class Broken:
        name = "broken"

        def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
            return ExecResult(infra_error="docker daemon not reachable")

        def close(self) -> None: ...

    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder)
        result = recall(book, _question(SOLVABLE), options=RecallOptions(), sandbox=Broken())
        book.close()
    tools = [s.note for s in result.shown if s.note["kind"] == "tool"]
    assert tools and "checked_answer" not in tools[0]


def test_a_session_checks_in_a_fresh_sandbox_it_closes() -> None:
    """The session's recall opens a fresh sandbox (never the run's) only to check, and
    closes it before round 1."""
    opened: list[SubprocessSandbox] = []
    closed: list[SubprocessSandbox] = []

    class Counted(SubprocessSandbox):
        def close(self) -> None:
            closed.append(self)
            super().close()

    def fresh() -> SubprocessSandbox:
        opened.append(Counted())
        return opened[-1]

    class Unused:
        def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("recall alone calls no model here")

    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder)
        session = Session(meta_model=Unused(), fresh_sandbox=fresh)  # type: ignore[arg-type]
        NotebookHooks(book).attach(session, learn=False)
        assert session.conductor is not None and session.conductor.recall is not None
        event = session.conductor.recall(_question(SOLVABLE), ledger=None)
        book.close()
    assert event is not None and SAYS in event.rendered
    assert len(opened) == 1 and closed == [opened[0]]
