"""Checked experience handed to the meta model in the carrier's own form.

Recall may find a program in the notebook whose answer to this very question the task's
own check accepted, run in a fresh sandbox before round 1 (lessons/read/tool_check.py;
the `Recall` event's `checked`). A weak model cannot search for a Game of 24 expression,
but it can cite one it is handed. With the tools carrier the conductor hands it over as
what it is: a `run_python` call the notebook made, with the program, and its result, so
the first turn the model writes follows the checked output, as a tool result it can
cite, never as an instruction. Nothing unchecked is handed over this way
(a program of another question, or one whose answer failed or could not be checked, is
only a note in the recall text), and the text and grammar carriers keep the recall
text's own line for it (`CHECKED ON YOUR QUESTION`).

The exchange comes after round 1's message (the question), as a tool-trained model
meets a call and its result in its own runs; it is built from the `Recall` event, and
round 1's `MetaTurnStarted` records it (`handed_calls`, `tool_results`), so a transcript
says exactly what the model saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from conductor_kernel import prompts
from conductor_kernel.carrier.tools import RUN_PYTHON
from conductor_kernel.interfaces import Message, ToolCall, ToolResult
from conductor_kernel.run.state import Handed
from conductor_kernel.text.quoted import inline

CALL_ID = "notebook-checked-1"
_NOTE_ID = re.compile(r"n[0-9a-f]{1,32}")
PRINTED = "what the program printed"
# An answer shown bare (one short line of plain characters) is easier for a small model
# to cite exactly; anything else is fenced as others' words.
_PLAIN_ANSWER = re.compile(r"[\w .,:;=+\-*/()%^'\"!?×÷−]{1,200}")


def shown_answer(answer: str) -> str:
    """The checked answer as the result shows it: bare when plain, else fenced."""
    text = answer.strip()
    return text if _PLAIN_ANSWER.fullmatch(text) else inline(PRINTED, text)


def checked_exchange(checked: Sequence[dict[str, Any]]) -> Handed | None:
    """The notebook's call of the program and its result, sent after round 1's message;
    None when no program was checked on the question."""
    if not checked:
        return None
    first = checked[0]
    code, answer = str(first.get("code") or ""), first.get("answer")
    if not code.strip() or answer is None:
        return None
    call = ToolCall(RUN_PYTHON, json.dumps({"code": code}), id=CALL_ID)
    made = Message("assistant", "", tool_calls=(call,))
    result = ToolResult(CALL_ID, RUN_PYTHON, result_content(first.get("note"), str(answer)))
    return Handed(made, (result,), str(answer).strip())


def result_content(note: object, answer: str) -> str:
    """The handed call's result: what the program printed, on a line of its own (a
    small model copies it from there; Qwen2.5-Coder-1.5B dropped the parentheses of
    `(1+11)*(13-11)` quoted inside a sentence, and re-ran the program when the result
    was a JSON object), and what the task's own check said of it."""
    return prompts.EXPERIENCE_RESULT.format(note=_cited(note), answer=shown_answer(answer))


def _cited(note: object) -> str:
    """How the result names the note: its id in brackets, when it is one this notebook
    could have made (a foreign id is never written outside a fence)."""
    text = str(note or "")
    return f" [{text}]" if _NOTE_ID.fullmatch(text) else ""
