"""Recall that pays (issue 25): when a checked tool fits the question as asked, the meta
model is told plainly that it can run it as it is, and the recall is the tool (and notes
of this very question), not other questions' answers and procedures. A tool whose answers
were only corroborated, whose code is cut to fit, or that fits another question is never
said to be runnable.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nb_support import SORT_CODE, run_events

from conductor.scoring.notebook import open_notebook
from lessons.forms.tool_making import make_tool
from lessons.read.recall import RecallOptions, recall
from lessons.read.render import RUNNABLE, render_note
from lessons.values import NO_SCORING
from lessons.write.learn import learn_from_run

# No vowels: never an instruction word ("with", "then"), which no list of data holds.
WORD = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=2, max_size=8)
WORDS = st.lists(WORD, min_size=3, max_size=7, unique=True)
SAYS = RUNNABLE.strip()[:20]


def _question(words: list[str]) -> str:
    # Not a built-in task's form: no scorer checks it unless a target is known.
    return "Put these words in dictionary order: " + " ".join(words)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(learned=st.lists(WORDS, min_size=1, max_size=3), asked=WORDS, checked=st.booleans())
def test_a_fitting_tool_is_said_runnable_exactly_when_its_answers_were_checked(
    learned: list[list[str]], asked: list[str], checked: bool
) -> None:
    assume(asked not in learned)  # the question itself is never recalled in evaluation
    with tempfile.TemporaryDirectory() as folder:
        book = open_notebook(Path(folder) / "nb.db")
        for i, words in enumerate(learned):
            answer = " ".join(sorted(words))
            # Checked: the scorer accepted it against its target; else two experts
            # agreed and nothing checked it (corroborated, never checked).
            events = run_events(
                f"r{i}",
                _question(words),
                answer,
                target=answer if checked else None,
                code=SORT_CODE.format(words=words),
                experts=("Expert Linguist", "Expert Reviewer"),
                expert_replies=(f"Answer: {answer}", f"Answer: {answer}"),
                instructions=("Sort these words.", "Sort these words too."),
            )
            learn_from_run(book, events)
        result = recall(book, _question(asked), options=RecallOptions(exclude_question=True))
        kinds = [s.note["kind"] for s in result.shown]
        said = SAYS in result.rendered.text
        if said:
            # Told it can run the tool: the tool comes first, with its whole program,
            # written out for this question's words, and nothing of another question.
            assert checked and kinds[0] == "tool"
            assert "procedure" not in kinds[1:]
            assert repr(asked) in result.shown[0].note["code"] or all(
                w in result.shown[0].note["code"] for w in asked
            )
            assert "ANOTHER QUESTION" not in result.rendered.text
        elif kinds and kinds[0] == "tool":
            assert not checked
        if checked:  # a checked tool of this form always fits another list of words
            assert kinds[0] == "tool" and said
        book.close()


def test_a_cut_or_different_tool_is_never_said_runnable() -> None:
    note = {"id": "n1", "kind": "tool", "verification": "checker", "outcome": "verified",
            "helpful": 0, "harmful": 0, "source_run": "r", "key": "", "text": "A program.",
            "code": "print(1)\n" * 50, "runnable": True, "tool_tests": 0}  # fmt: skip
    assert SAYS in render_note(note, code_chars=3000)
    assert SAYS not in render_note(note, code_chars=100)  # cut to fit: not runnable as is
    assert SAYS not in render_note({**note, "differs": "other words"}, code_chars=3000)
    assert "not yet tested" in render_note(note, code_chars=3000)


def test_a_program_that_runs_code_held_as_text_makes_no_tool() -> None:
    question = "Use 4 5 6 10 to make 24"
    direct = "NUMBERS = [4, 5, 6, 10]\nprint('(4 * 5) - (6 - 10)')\n"
    assert make_tool(question, direct, "(4 * 5) - (6 - 10)\n", "(4 * 5) - (6 - 10)",
                     scoring=NO_SCORING) is not None  # fmt: skip
    wrapped = f"NUMBERS = [4, 5, 6, 10]\nexec(compile({direct!r}, 'recalled', 'exec'))\n"
    assert make_tool(question, wrapped, "(4 * 5) - (6 - 10)\n", "(4 * 5) - (6 - 10)",
                     scoring=NO_SCORING) is None  # fmt: skip
