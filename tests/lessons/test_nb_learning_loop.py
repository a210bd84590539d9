"""The learning loop a user can see, with the real conductor and code really running.

The first question of a kind is solved by Expert Python's program in the (unsafe,
subprocess) sandbox; the notebook distills that program. The second question of the
kind gets the program in its first meta turn, the `Recall` event names the note, and the
note's counters move with how the second run ends.
"""

from __future__ import annotations

import re
from pathlib import Path

from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel.events import Event, MetaTurnStarted, NotesWritten, Recall
from conductor_kernel.interfaces import Message
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from lessons.storage.store import Notebook
from sandbox.subprocess_backend import SubprocessSandbox

PROGRAM = "words = {words!r}\nprint(' '.join(sorted(words, key=str.lower)))"


def meta(history: list[Message]) -> str:
    """Round 1: have Expert Python sort the words; then answer with what it printed."""
    last = history[-1].content
    if last.startswith("ROUND 1"):
        # The question is last: recalled notes above it may quote older lists.
        words = re.findall(r"List: (.+)", last)[-1].split()
        # It cites the notes it was shown, as the recall asks (credit where used).
        cited = " ".join(re.findall(r"\[n[0-9a-f]{11}\]", last))
        ask = f'Expert Python:\n"""\nSort these words alphabetically: {" ".join(words)}\n"""'
        return f"Using {cited}.\n{ask}" if cited else ask
    printed = re.search(r"stdout:\n```\n(.*?)\n```", last, re.S)
    return f'>> FINAL ANSWER:\n"""\n{printed.group(1) if printed else "?"}\n"""'


def expert(_name: str, instruction: str) -> str:
    words = instruction.split(": ", 1)[1].split()
    code = PROGRAM.format(words=words)
    return f"```python\n{code}\n```\nPlease run this code!"


def solve(session: Session, words: list[str], target: str) -> list[Event]:
    question = "Sort the following words alphabetically: List: " + " ".join(words)
    return list(session.solve(question, target=target))


def conductor_with_notebook(
    tmp_path: Path,
) -> tuple[ScriptedModel, SubprocessSandbox, Notebook, Session]:
    """The scripted conductor with a fresh notebook attached (recall and learning on)."""
    model = ScriptedModel(meta, expert)
    sandbox = SubprocessSandbox()
    book = open_notebook(tmp_path / "notebook.db")
    session = Session(
        meta_model=model,
        expert_model=model,
        sandbox=sandbox,
        config=RunConfig(max_rounds=4, python_timeout_s=20),
        runs_path=tmp_path / "runs",
    )
    NotebookHooks(book, model=model).attach(session)
    return model, sandbox, book, session


def test_second_question_of_a_kind_gets_the_working_code(tmp_path: Path) -> None:
    _model, sandbox, book, session = conductor_with_notebook(tmp_path)
    try:
        first = solve(session, ["pear", "Apple", "fig"], target="Apple fig pear")
        (nothing_yet,) = [e for e in first if isinstance(e, Recall)]
        assert nothing_yet.notes == [] and nothing_yet.rendered == ""
        (written,) = [e for e in first if isinstance(e, NotesWritten)]
        assert written.outcome == "correct"
        tool_note = book.read_one("select * from notes where kind = 'tool'")
        assert tool_note is not None and "_p(0)" in tool_note["code"]
        assert tool_note["id"] in written.note_ids

        second = solve(session, ["kiwi", "banana", "Cherry"], target="banana Cherry kiwi")
    finally:
        sandbox.close()
    (recall,) = [e for e in second if isinstance(e, Recall)]
    # The tool comes first, written out with the new question's words, not the old ones.
    assert recall.notes[0]["id"] == tool_note["id"] and recall.notes[0]["kind"] == "tool"
    shown = recall.notes[0]
    assert shown["score"] > 0 and shown["relevance"] >= 0.5 and shown["rank"] == 1
    first_turn = next(e for e in second if isinstance(e, MetaTurnStarted) and e.round == 1)
    assert "['kiwi', 'banana', 'Cherry']" in first_turn.user_message
    assert "sorted(words, key=str.lower)" in first_turn.user_message
    assert tool_note["id"] in first_turn.user_message
    code_note = tool_note
    (learned,) = [e for e in second if isinstance(e, NotesWritten)]
    assert learned.outcome == "correct"
    assert learned.feedback[code_note["id"]] == "helpful"
    after = book.read_one(
        "select helpful, harmful, uses from notes where id = ?", (code_note["id"],)
    )
    assert (after["helpful"], after["harmful"], after["uses"]) == (1, 0, 1)
    recalled = book.read(
        "select run_id, outcome from recalls where note_id = ?", (code_note["id"],)
    )
    assert [(r["run_id"], r["outcome"]) for r in recalled] == [(learned.run_id, "correct")]


def test_a_recalled_note_counts_harm_when_the_run_goes_wrong(tmp_path: Path) -> None:
    _model, sandbox, book, session = conductor_with_notebook(tmp_path)
    try:
        solve(session, ["pear", "apple"], target="apple pear")
        # A target the program cannot produce: this run is judged wrong.
        second = solve(session, ["kiwi", "banana"], target="kiwi banana")
    finally:
        sandbox.close()
    (recall,) = [e for e in second if isinstance(e, Recall)]
    (learned,) = [e for e in second if isinstance(e, NotesWritten)]
    assert learned.outcome == "wrong"
    assert recall.notes and set(learned.feedback.values()) == {"harmful"}  # all were cited
    harmed = book.read("select id from notes where harmful = 1")
    assert {r["id"] for r in harmed} == {n["id"] for n in recall.notes}
