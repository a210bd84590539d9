"""Learning tests the tools a run made, in a sandbox of its own (never the run's), within
a budget.

The tools run for real in the subprocess sandbox; what is faked is only what a test
must control: a clock that says how long the tests took, and a sandbox that breaks,
is cancelled or is interrupted at a chosen run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from nb_support import run_events, sort_run

from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel.events import Event, NotesWritten, RunFinished
from conductor_kernel.interfaces import ExecResult, Message
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from lessons.forms.toolbox import StoredTool, best_tools, tools_of
from lessons.forms.tools import Tool
from lessons.forms.tooltests import ToolBudget
from lessons.read.recall import recall
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, learn_from_run
from record.reader import read_transcript
from sandbox.subprocess_backend import SubprocessSandbox

SORT = "Sort the following words alphabetically: List: "
KEEP = "words = {words!r}\nprint(' '.join(words))\n"  # right only for a sorted list
LISTS = [["pear", "apple", "fig"], ["yam", "kiwi", "date"], ["plum", "lime", "beet"],
         ["oat", "corn", "rye"], ["sage", "dill", "mint"], ["tea", "nut", "bay"],
         ["zest", "okra", "leek"]]  # fmt: skip


def by_eye(book: Notebook, count: int, *, options: LearnOptions | None = None) -> list[str]:
    """Stored runs of the kind answered right without a program (so they make no tool)."""
    ids = []
    for i, words in enumerate(LISTS[:count]):
        answer = " ".join(sorted(words))
        events = run_events(f"eye{i}", SORT + " ".join(words), answer, target=answer,
                            task="word_sorting")  # fmt: skip
        learn_from_run(book, events, options=options)
        ids.append(f"eye{i}")
    return ids


class Box:
    """The real subprocess sandbox, with what a test needs to see or break."""

    def __init__(self, before: Callable[[int, float], ExecResult | None] | None = None) -> None:
        self.inner = SubprocessSandbox()
        self.name = "subprocess"
        self.before = before
        self.timeouts: list[float] = []

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        self.timeouts.append(timeout)
        if self.before is not None:
            made = self.before(len(self.timeouts), timeout)
            if made is not None:
                return made
        return self.inner.run(code, timeout=timeout, stdin=stdin)

    def close(self) -> None:
        self.inner.close()


def written_of(events: list[Event]) -> NotesWritten:
    (written,) = [e for e in events if isinstance(e, NotesWritten)]
    return written


def test_learning_tests_a_new_tool_in_the_runs_sandbox_and_stores_its_pass_rate(
    tmp_path: Path,
) -> None:
    book = open_notebook(tmp_path / "nb.db")
    eyes = by_eye(book, 4)
    # A wrong answer with its target known: the tool is judged by the scorer there.
    learn_from_run(book, run_events("bad", SORT + "z y", "z y", target="y z", task="word_sorting"))
    box = Box()
    try:
        written = learn_from_run(
            book, sort_run("made", ["kiwi", "fig", "date"]), options=LearnOptions(sandbox=box)
        )
    finally:
        box.close()
    assert written is not None
    (tool,) = tools_of(book)
    assert (tool.passes, tool.tests) == (5, 5)
    row = book.read_one("select tested_on from tools where note_id = ?", (tool.note_id,))
    assert sorted(json.loads(row["tested_on"])) == sorted([*eyes, "bad"])
    assert written.tools == {tool.note_id: [5, 5]}
    assert written.tool_testing == "tested 1 tool(s) on 5 question(s): 5 passed"
    assert len(box.timeouts) == 5 and all(t == 10.0 for t in box.timeouts)
    rendered = recall(book, SORT + "zeta alpha mu").rendered.text
    assert "tested pass rate 100%" in rendered and "passed 5 of 5 tests" in rendered


def test_without_a_sandbox_learning_leaves_the_tool_untested_as_before(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 3)
    written = learn_from_run(book, sort_run("made", ["kiwi", "fig"]))
    assert written is not None
    (tool,) = tools_of(book)
    assert tool.tests == 0 and written.tools == {tool.note_id: [0, 0]}
    assert written.tool_testing == "skipped: no sandbox"


def test_a_tool_is_not_tested_on_the_question_it_was_made_from(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    box = Box()
    try:
        first = learn_from_run(
            book, sort_run("first", ["kiwi", "fig"]), options=LearnOptions(sandbox=box)
        )
        # The same program again: it joins the stored tool, whose only question is its own.
        again = learn_from_run(
            book, sort_run("again", ["pear", "date"]), options=LearnOptions(sandbox=box)
        )
    finally:
        box.close()
    assert first is not None and again is not None
    (tool,) = tools_of(book)
    assert tool.tests == 0 and box.timeouts == []
    expected = "skipped: no stored question of its kind that it was not made from or tested on"
    assert first.tool_testing == again.tool_testing == expected


def test_a_wrong_tool_is_measured_wrong_and_the_right_one_comes_first(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 4)
    box = Box()
    options = LearnOptions(sandbox=box)
    try:
        # Keeping the list's order is right for a list that is already sorted.
        lucky = run_events("lucky", SORT + "ash elm", "ash elm", target="ash elm",
                           task="word_sorting", code=KEEP.format(words=["ash", "elm"]))  # fmt: skip
        keep = learn_from_run(book, lucky, options=options)
        good = learn_from_run(book, sort_run("good", ["kiwi", "fig"]), options=options)
    finally:
        box.close()
    assert keep is not None and good is not None
    assert list(keep.tools.values()) == [[0, 4]]
    assert list(good.tools.values()) == [[5, 5]]  # the lucky question is one of its tests
    by_note = {t.note_id: t for t in tools_of(book)}
    (keep_id,), (good_id,) = keep.tools, good.tools
    assert by_note[keep_id].failing and not by_note[good_id].failing
    question = SORT + "zeta alpha mu"
    assert [t.note_id for t in best_tools(book, question, exclude_question=False)] == [good_id]
    top = recall(book, question).shown[0]
    assert top.note["id"] == good_id and "sorted" in top.note["code"]


def test_an_untested_tool_ranks_above_one_whose_tests_went_badly() -> None:
    tool = Tool("print(1)", [], 0)
    untested = StoredTool("n1", None, "", tool, tests=0, passes=0)
    poor = StoredTool("n2", None, "", tool, tests=2, passes=0)
    proven = StoredTool("n3", None, "", tool, tests=12, passes=12)
    assert untested.rank_score == poor.rank_score == 0.0
    assert untested.upper_bound > poor.upper_bound
    assert not poor.failing  # two failures are not yet proof
    assert StoredTool("n4", None, "", tool, tests=3, passes=0).failing
    order = sorted([poor, proven, untested], key=lambda s: (-s.rank_score, -s.upper_bound))
    assert [s.note_id for s in order] == ["n3", "n1", "n2"]


def test_the_budget_caps_the_questions(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 6)
    box = Box()
    try:
        options = LearnOptions(sandbox=box, tool_budget=ToolBudget(questions=3))
        written = learn_from_run(book, sort_run("made", ["kiwi", "fig"]), options=options)
    finally:
        box.close()
    assert written is not None and list(written.tools.values()) == [[3, 3]]
    assert written.tool_testing.endswith("stopped at the cap of 3 questions")
    assert len(box.timeouts) == 3


def test_the_budget_caps_the_time_and_a_test_it_cuts_short_does_not_count(
    tmp_path: Path,
) -> None:
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 6)
    now = [0.0]

    def slow(_n: int, timeout: float) -> ExecResult | None:
        now[0] += 8.0  # every test "takes" 8 s on the test's clock
        if timeout < 8.0:  # the budget's time ran out during this one
            return ExecResult(timed_out=True, backend="subprocess")
        return None

    box = Box(before=slow)
    try:
        budget = ToolBudget(seconds=20.0, clock=lambda: now[0])
        written = learn_from_run(
            book, sort_run("made", ["kiwi", "fig"]), options=LearnOptions(sandbox=box,
                                                                        tool_budget=budget)
        )  # fmt: skip
    finally:
        box.close()
    # 0 s: a test with 10 s; 8 s: another with 10 s; 16 s: one with the 4 s left, cut
    # short by the budget, so not counted; then no time is left.
    assert box.timeouts == [10.0, 10.0, 4.0]
    assert written is not None and list(written.tools.values()) == [[2, 2]]
    assert "stopped: the time budget ran out during a test" in written.tool_testing


@pytest.mark.parametrize("how", ["raises", "infra"])
def test_a_broken_sandbox_costs_the_tool_its_tests_not_the_learning(
    tmp_path: Path, how: str
) -> None:
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 3)

    def broken(n: int, _timeout: float) -> ExecResult | None:
        if n >= 2:  # the first test runs, then the sandbox breaks
            if how == "raises":
                raise OSError("the sandbox's runner went away")
            return ExecResult(infra_error="no Docker daemon", backend="docker")
        return None

    box = Box(before=broken)
    try:
        written = learn_from_run(
            book, sort_run("made", ["kiwi", "fig"]), options=LearnOptions(sandbox=box)
        )
    finally:
        box.close()
    assert written is not None and written.outcome == "correct"
    assert {r["kind"] for r in book.read("select kind from notes where source_run = 'made'")} == {
        "example", "code", "procedure", "tool"
    }  # fmt: skip
    assert list(written.tools.values()) == [[1, 1]]  # the test that ran counts, no other
    assert "stopped: the sandbox failed" in written.tool_testing


# -- through a session: a fresh sandbox for the checks, the session's cancel, its Ctrl-C ---


PROGRAM = "words = {words!r}\nprint(' '.join(sorted(words)))"


def meta(history: list[Message]) -> str:
    last = history[-1].content
    if last.startswith("ROUND 1"):
        words = re.findall(r"List: (.+)", last)[-1].split()
        return f'Expert Python:\n"""\nSort: {" ".join(words)}\n"""'
    return f'>> FINAL ANSWER:\n"""\n{last.split("stdout:")[1].split("```")[1].strip()}\n"""'


def expert(_name: str, instruction: str) -> str:
    words = instruction.split(": ", 1)[1].split()
    return f"```python\n{PROGRAM.format(words=words)}\n```\nPlease run this code!"


def session_with(tmp_path: Path, box: Box) -> tuple[Session, Notebook]:
    """A session whose run has a sandbox of its own and whose learning opens `box`."""
    model = ScriptedModel(meta, expert)
    book = open_notebook(tmp_path / "nb.db")
    run_box = Box()
    session = Session(meta_model=model, expert_model=model, sandbox=run_box,
                      config=RunConfig(max_rounds=3), runs_path=tmp_path / "runs",
                      fresh_sandbox=lambda: box)  # fmt: skip
    session.run_box = run_box  # type: ignore[attr-defined]
    NotebookHooks(book, model=model).attach(session)
    return session, book


def finished_on_disk(tmp_path: Path, run_id: str) -> RunFinished | None:
    return read_transcript(tmp_path / "runs" / f"{run_id}.jsonl").finished


def test_a_session_tests_its_tool_in_a_fresh_sandbox_never_the_runs(tmp_path: Path) -> None:
    box = Box()
    session, book = session_with(tmp_path, box)
    by_eye(book, 3)
    try:
        events = list(session.solve(SORT + "kiwi fig date", target="date fig kiwi"))
    finally:
        box.close()
    written = written_of(events)
    assert list(written.tools.values()) == [[3, 3]]
    # The run's own program ran in the run's sandbox; every test in the fresh one.
    assert len(session.run_box.timeouts) == 1  # type: ignore[attr-defined]
    assert len(box.timeouts) == 3
    (tool,) = tools_of(book)
    assert (tool.passes, tool.tests) == (3, 3)


def test_a_sandbox_that_fails_while_learning_costs_the_run_nothing(tmp_path: Path) -> None:
    def fail_after_the_run(n: int, _timeout: float) -> ExecResult | None:
        if n >= 1:
            raise RuntimeError("the container was removed")
        return None

    box = Box(before=fail_after_the_run)
    session, book = session_with(tmp_path, box)
    by_eye(book, 2)
    try:
        events = list(session.solve(SORT + "kiwi fig date", target="date fig kiwi"))
    finally:
        box.close()
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.status == "answered" and finished.final_answer == "date fig kiwi"
    stored = finished_on_disk(tmp_path, finished.run_id)
    assert stored is not None and stored.status == "answered"
    written = written_of(events)
    assert list(written.tools.values()) == [[0, 0]]
    assert written.tool_testing.startswith("stopped: the sandbox failed (RuntimeError")


def test_cancelling_the_session_while_learning_stops_the_tests_and_writes_nothing(
    tmp_path: Path,
) -> None:
    holder: list[Session] = []

    def cancel_in_the_first_test(n: int, _timeout: float) -> ExecResult | None:
        if n == 1:  # the first test (the run's program ran in the run's sandbox)
            holder[0].cancel()
        return None

    box = Box(before=cancel_in_the_first_test)
    session, book = session_with(tmp_path, box)
    holder.append(session)
    by_eye(book, 5)
    try:
        events = list(session.solve(SORT + "kiwi fig date", target="date fig kiwi"))
    finally:
        box.close()
    assert len(box.timeouts) == 1  # no test started after the cancel
    # Stopped while learning: the run stands as answered, and nothing is learned from it.
    assert not [e for e in events if isinstance(e, NotesWritten)]
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.status == "answered"
    learned = book.read("select 1 from distilled_runs where run_id = ?", (finished.run_id,))
    assert learned == []


def test_ctrl_c_while_testing_a_tool_stops_learning_and_keeps_the_run(tmp_path: Path) -> None:
    def interrupt(n: int, _timeout: float) -> ExecResult | None:
        if n == 2:  # the second test of the learning
            raise KeyboardInterrupt
        return None

    box = Box(before=interrupt)
    session, book = session_with(tmp_path, box)
    by_eye(book, 4)
    seen: list[Event] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            for event in session.solve(SORT + "kiwi fig date", target="date fig kiwi"):
                seen.append(event)
    finally:
        box.close()
    assert len(box.timeouts) == 2  # nothing ran after the interrupt
    finished = next(e for e in seen if isinstance(e, RunFinished))
    stored = finished_on_disk(tmp_path, finished.run_id)
    assert stored is not None and stored.status == "answered"
    assert not any(isinstance(e, NotesWritten) for e in seen)
    assert (
        book.read_one("select 1 from distilled_runs where run_id = ?", (finished.run_id,)) is None
    )
    assert session.phase == "idle"


@pytest.mark.parametrize("reply", ["USE: none", "USE: 3, 1", "KIND: sorting"])
def test_the_models_narrowing_never_hides_or_demotes_a_tool_whose_tests_passed(
    tmp_path: Path, reply: str
) -> None:
    """SmolLM2 answered the narrowing prompt with `USE: none` or reordered the list; the
    tool with a measured pass rate stays first, and the model picks among the rest."""
    book = open_notebook(tmp_path / "nb.db")
    by_eye(book, 4)
    box = Box()
    try:
        learn_from_run(
            book, sort_run("made", ["kiwi", "fig", "date"]), options=LearnOptions(sandbox=box)
        )
    finally:
        box.close()
    (tool,) = tools_of(book)
    assert tool.tests > 0 and tool.passes == tool.tests

    def experts(_name: str, prompt: str) -> str:
        return reply if "Notes from earlier work" in prompt else "none"

    model = ScriptedModel(["unused"], experts, name="online")
    model.offline = False  # type: ignore[attr-defined]
    question = SORT + "zeta alpha mu"
    narrowed = recall(book, question, model=model)
    assert narrowed.shown and narrowed.shown[0].note["id"] == tool.note_id
    lexical = recall(book, question)
    assert len(lexical.candidates) > 1  # so the model had others to drop or reorder
    if reply == "USE: none":
        assert [s.note["id"] for s in narrowed.shown] == [tool.note_id]
