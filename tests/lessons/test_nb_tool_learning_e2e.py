"""`conductor solve` learns a tool and measures it in the run's own sandbox, end to end.

The real CLI, session, sandbox (subprocess, and Docker where there is an engine),
transcripts and notebook; the model is the openai SDK against the local wire server,
answering like a conductor that consults two experts (who sort the words by eye) and,
for some questions, Expert Python. `conductor notebook test-tools` is never run: every
pass rate below was measured by the learning after a solve.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from conductor_kernel import prompts
from conductor_kernel.events import NotesWritten, Recall
from equipment.wire_server import WireServer
from lessons import prompts as notebook_prompts
from lessons.forms import tooltests
from lessons.forms.toolbox import tools_of
from record.reader import read_transcript

SORT = "Sort the following words alphabetically: List: "
SORTED = "words = {words!r}\nprint(' '.join(sorted(words)))"
KEEP = "words = {words!r}\nprint(' '.join(words))"  # right only when already in order


def words_in(text: str, marker: str) -> list[str]:
    return re.findall(re.escape(marker) + r"(.+)", text)[-1].split()


class Conductor:
    """The wire server's replies: meta turns, experts, and the notebook's own calls."""

    def __init__(self) -> None:
        self.programs = True  # whether round 1 asks Expert Python too

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body["messages"]
        system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        last = str(messages[-1]["content"])
        if system == prompts.META_SYSTEM:
            if not any(m["role"] == "assistant" for m in messages):
                words = words_in(last, "List: ")
                # The experts get the words back to front: their sorted replies are then
                # derivations the instruction did not contain (independent evidence).
                backwards = " ".join(reversed(words))
                assert list(reversed(words)) != sorted(words), "pick another list"
                calls = [
                    f'Expert Linguist:\n"""\nPut these words in alphabetical order: {backwards}\n"""',
                    f'Expert Checker:\n"""\nPut these words in alphabetical order: {backwards}\n"""',
                ]  # fmt: skip
                if self.programs:
                    calls.append(f'Expert Python:\n"""\nSort these words: {" ".join(words)}\n"""')
                return "\n".join(calls)
            answer = re.findall(r"In order: (.+)", last)[-1]
            return f'>> FINAL ANSWER:\n"""\n{answer}\n"""'
        if system.startswith("You are Expert Python"):
            words = words_in(last, "Sort these words: ")
            program = KEEP if words == sorted(words) else SORTED
            return f"```python\n{program.format(words=words)}\n```\nPlease run this code!"
        if system.startswith("You are Expert"):
            return "In order: " + " ".join(sorted(words_in(last, "alphabetical order: ")))
        if system == notebook_prompts.TYPE_SYSTEM:
            return "KIND: 1\nDESCRIPTION: Put words in dictionary order.\nNAME: word sorting"
        if system == notebook_prompts.NARROW_SYSTEM:
            return "USE: 1, 2, 3"
        if system == notebook_prompts.REFLECTION_SYSTEM:
            return "INSIGHT | sort words | Let a program sort the words; eyes skip letters."
        return "SUGGESTIONS:\n- Sort with a program.\nPROCEDURE:\n1. Ask Expert Python."


def solve(
    words: list[str], args: list[str], capsys: pytest.CaptureFixture[str], home: Path
) -> tuple[list[Any], str]:
    code = main(["solve", SORT + " ".join(words), *args])
    out = capsys.readouterr().out
    assert code == 0, out
    (path,) = sorted((home / "runs").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)[-1:]
    return read_transcript(path).events, out


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["subprocess", pytest.param("docker", marks=pytest.mark.docker)]
)
def test_a_solve_learns_a_tool_whose_pass_rate_its_learning_measured(
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if backend == "docker":
        request.getfixturevalue("require_docker")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    # Learning's tests of a tool stop at a wall-clock budget; on a loaded machine the
    # default one can end them early, and the counts below would measure the load.
    monkeypatch.setattr(tooltests, "LEARNING_TEST_SECONDS", 600.0)
    notebook = tmp_path / "nb.db"
    replies = Conductor()
    with WireServer(responder=replies) as server:
        args = ["--model", f"openai:wire-model@{server.openai_url}", "--sandbox", backend,
                "--notebook", str(notebook), "--max-rounds", "4"]  # fmt: skip
        # Two questions answered by the experts alone: verified, no program, no tool.
        replies.programs = False
        for words in (["pear", "apple", "fig"], ["kiwi", "yam", "date"]):
            events, _ = solve(words, args, capsys, isolated_home)
            (written,) = [e for e in events if isinstance(e, NotesWritten)]
            # Asked without a task, the question is recognised as word sorting: its
            # scorer judged the answer against the sorted list (tests/conductor/scoring/test_recognise_task.py).
            assert written.outcome == "correct" and written.tools == {}
        replies.programs = True
        # An already sorted list: a program that keeps the order is right here only.
        events, _ = solve(["ash", "elm"], args, capsys, isolated_home)
        (keep,) = [e for e in events if isinstance(e, NotesWritten)]
        # A program that sorts.
        events, printed = solve(["lime", "plum", "beet"], args, capsys, isolated_home)
        (good,) = [e for e in events if isinstance(e, NotesWritten)]
        # A later question is shown the best-tested tool first.
        replies.programs = False
        events, _ = solve(["okra", "zest", "leek"], args, capsys, isolated_home)
        (shown,) = [e for e in events if isinstance(e, Recall)]
    assert keep.outcome == good.outcome == "correct"
    assert list(keep.tools.values()) == [[0, 2]]  # wrong on both earlier questions
    assert list(good.tools.values()) == [[3, 3]]  # right on all three
    assert good.tool_testing == "tested 1 tool(s) on 3 question(s): 3 passed"
    (good_id,) = good.tools
    assert f"tool {good_id}: passed 3 of 3 tests" in printed
    book = open_notebook(notebook)
    try:
        stored = {t.note_id: (t.passes, t.tests) for t in tools_of(book)}
        tested_on = book.read_one("select tested_on from tools where note_id = ?", (good_id,))
    finally:
        book.close()
    assert stored == {**{k: (0, 2) for k in keep.tools}, good_id: (3, 3)}
    assert len(json.loads(tested_on["tested_on"])) == 3
    first = shown.notes[0]
    assert first["id"] == good_id and first["kind"] == "tool"
    assert "tested pass rate 100%" in shown.rendered
