"""Small published records written in the paper's format, for replay and import tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from record.published import CODE_HEADER, OUTPUT_HEADER, RUN_MARKER

Q = '"""'
SYSTEM = 'Answer the question. End with:\n\n>> FINAL ANSWER:\n"""\n[answer]\n"""'
FEEDBACK = "What follows from this? Check the solution before answering."
NUDGE = 'Give your final answer as >> FINAL ANSWER:\n"""\n[answer]\n"""'
CODE = "print(sorted(['pear', 'apple']))\n"
PY_REPLY = f"Here is a program:\n\n```python\n{CODE}```\n\n{RUN_MARKER}"


def call(name: str, instruction: str) -> str:
    return f"{name}:\n{Q}\n{instruction}\n{Q}"


def answer(text: str) -> str:
    return f"So we are done.\n\n>> FINAL ANSWER:\n{Q}\n{text}\n{Q}"


def python_output(reply: str, code: str, printed: str) -> str:
    """Expert Python's block as the harness wrote it: reply, code, what the code printed."""
    return f"{reply}{CODE_HEADER}{code.strip()}{OUTPUT_HEADER}{printed}"


def outputs(round_no: int, *blocks: tuple[str, str]) -> str:
    quoted = "".join(f"{name}'s output:\n{Q}\n{text}\n{Q}" for name, text in blocks)
    return f"ROUND {round_no}:\n\n{quoted}\n\n{FEEDBACK}"


def record(question: str, target: str, *turns: tuple[str, str | None]) -> dict[str, Any]:
    """A record from (meta turn, user turn after it or None) pairs."""
    log = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"ROUND 1:\n\nSolve it.\n\nQuestion: Sort.\n\n{question}"},
    ]
    for meta, user in turns:
        log.append({"role": "assistant", "content": meta})
        if user is not None:
            log.append({"role": "user", "content": user})
    return {"input": question, "target": target, "message_log": log, "output": log[-1]["content"]}


def sorting_record(printed: str = "['apple', 'pear']") -> dict[str, Any]:
    """Expert Python sorts two words, a reviewer and a linguist check in one turn, answer."""
    return record(
        "pear apple",
        "apple pear",
        (
            call("Expert Python", "Sort the words pear and apple."),
            outputs(2, ("Expert Python", python_output(PY_REPLY, CODE, printed))),
        ),
        (
            call("Expert Reviewer", "Is 'apple pear' sorted?")
            + "\n\n"
            + call("Expert Linguist", "Alphabetise: pear, apple."),
            outputs(3, ("Expert Reviewer", "Yes."), ("Expert Linguist", "apple pear")),
        ),
        (answer("apple pear"), None),
    )


def retry_defect_record() -> dict[str, Any]:
    """Expert Python's reply was lost: two meta turns in a row, the second fabricates it."""
    return record(
        "kiwi fig",
        "fig kiwi",
        ("ROUND 1:\n\n" + call("Expert Python", "Sort kiwi and fig."), None),
        (
            f"Expert Python's output:\n{Q}\nfig kiwi\n{Q}\n\n" + answer("fig kiwi"),
            None,
        ),
    )


def write_file(path: Path, *records: dict[str, Any], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return path
