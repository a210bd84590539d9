"""A sorting tool learned from a list of plain words, asked to sort a list with a sign
inside a word (`it&t`, `o'neill`, `co-op`). The form fits, but the words are written
with a character the learned list had none of, which alone kept the tool from the
question (Qwen2.5-Coder-1.5B with learning on missed exactly those items of word_sorting's
first 20). Now, where the task's own check decides the question and a sandbox is at hand,
such a tool runs on it and is shown only when its answer passes: always right when
shown, never shown without the check.
"""

from __future__ import annotations

import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import run_events

from conductor.scoring.notebook import open_notebook
from lessons.read.recall import RecallOptions, recall
from lessons.storage.store import Notebook
from lessons.write.learn import learn_from_run
from sandbox.subprocess_backend import SubprocessSandbox

SORTS = 'words = "{words}".split()\nprint(" ".join(sorted(words)))\n'
# Sorts only the words of letters alone: a list with signs comes out short.
DROPS_SIGNS = (
    'words = "{words}".split()\nprint(" ".join(sorted(w for w in words if w.isalpha())))\n'
)
LEARNED = ["pear", "apple", "fig", "kiwi"]


def _question(words: list[str]) -> str:
    return "Sort the following words alphabetically: List: " + " ".join(words)


def _book(folder: str, program: str) -> Notebook:
    book = open_notebook(Path(folder) / "nb.db")
    answer = " ".join(sorted(LEARNED))
    code = program.format(words=" ".join(LEARNED))
    learn_from_run(book, run_events("made", _question(LEARNED), answer, code=code))
    assert book.read("select 1 from tools"), "the learned run made no tool"
    return book


WORD = st.text(string.ascii_lowercase, min_size=2, max_size=8)
SIGNED = st.tuples(WORD, st.sampled_from("&'-."), WORD).map("".join)


@st.composite
def signed_lists(draw: st.DrawFn) -> list[str]:
    words = draw(st.lists(WORD, min_size=2, max_size=8, unique=True))
    signed = draw(st.lists(SIGNED, min_size=1, max_size=2, unique=True))
    mixed = draw(st.permutations(words + [w for w in signed if w not in words]))
    return list(mixed)


def _tool_notes(book: Notebook, question: str, sandbox: SubprocessSandbox | None) -> list[dict]:
    shown = recall(book, question, options=RecallOptions(k=5), sandbox=sandbox).shown
    return [s.note for s in shown if s.note["kind"] == "tool"]


def _tools_with_a_sandbox(book: Notebook, question: str) -> list[dict]:
    """The tool notes recall shows for `question` given a fresh sandbox to check in."""
    sandbox = SubprocessSandbox()
    try:
        return _tool_notes(book, question, sandbox)
    finally:
        sandbox.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=signed_lists())
def test_a_tool_for_plain_words_answers_a_list_with_signs_once_checked(words: list[str]) -> None:
    question = _question(words)
    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder, SORTS)
        tools = _tools_with_a_sandbox(book, question)
        assert len(tools) == 1, "the sorting tool was not shown with its checked answer"
        assert tools[0]["checked_answer"] == " ".join(sorted(words))
        # Without a sandbox nothing checks it here: the strict form alone decides.
        assert _tool_notes(book, question, None) == []


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=signed_lists())
def test_a_tool_whose_answer_fails_the_check_is_not_shown(words: list[str]) -> None:
    question = _question(words)
    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder, DROPS_SIGNS)
        assert _tools_with_a_sandbox(book, question) == []


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(WORD, min_size=2, max_size=8, unique=True),
    sign=st.sampled_from([",", ", ", ";", "; ", "()"]),
)
def test_a_list_written_another_way_gets_no_tool(words: list[str], sign: str) -> None:
    """Commas after words or words in brackets make another list, whose answer the
    learned program would get wrong (`apple, fig pear,`): no tool, checked or not."""
    written = sign.join(words) if sign != "()" else " ".join(f"({w})" for w in words)
    question = _question([written])
    with tempfile.TemporaryDirectory() as folder:
        book = _book(folder, SORTS)
        assert _tools_with_a_sandbox(book, question) == []
