"""The meta-prompting paper's published records as our events, enough to learn from.

A record is `{input, target, message_log, output}` (README in
../shared/data/meta-prompting). This reads what the notebook needs: the question, the
experts called in each meta turn, the code Expert Python ran and what it printed, and
the final answer. A question with only a target (a task file line) becomes a run that
answered it, a solved example.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult
from conductor_kernel.protocol import parse_final_answer, parse_turn

CODE_MARK = "Here is the Python code used to solve the problem:"
OUTPUT_MARK = "Here is the output of the code when executed:"
_OUTPUT_BLOCK = re.compile(r"(?s)(Expert [^\n]{1,60}?)'s output:\s*\"\"\"(.*?)\"\"\"")
_ERROR_HINT = re.compile(r"Traceback \(most recent call last\)|\bError:|Exception:")


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def example_events(run_id: str, question: str, target: str, task: str = "") -> list[Event]:
    """A question solved with its known answer: the smallest run worth learning from."""
    return [
        RunStarted(run_id=run_id, question=question, target=target, task=task, model="published"),
        FinalAnswer(run_id=run_id, answer=target, round=1),
        RunFinished(run_id=run_id, status="answered", final_answer=target, rounds=1),
    ]


def _code_run(output: str) -> tuple[str, str] | None:
    """The code and what it printed, as the original harness appended them."""
    at = output.find(CODE_MARK)
    if at == -1:
        return None
    rest = output[at + len(CODE_MARK) :]
    code, _, printed = rest.partition(OUTPUT_MARK)
    return code.strip("\n"), printed.strip("\n")


def record_events(
    record: dict[str, Any], run_id: str, *, task: str = "", with_target: bool = True
) -> list[Event]:
    """A published transcript as events: meta turns, expert calls, code runs, answer."""
    question = str(record["input"])
    target = str(record.get("target")) if with_target and record.get("target") else None
    events: list[Event] = [
        RunStarted(run_id=run_id, question=question, target=target, task=task, model="published")
    ]
    log = record.get("message_log") or []
    pending: list[ExpertCallStarted] = []
    round_no = 0
    for message in log[1:]:
        content = str(message.get("content", ""))
        if message.get("role") == "assistant":
            round_no += 1
            events.append(MetaTurnFinished(run_id=run_id, round=round_no, text=content))
            parsed = parse_turn(content)
            pending = []
            for index, call in enumerate(parsed.dispatchable):
                started = ExpertCallStarted(
                    run_id=run_id,
                    round=round_no,
                    index=index,
                    name=call.name,
                    instruction=call.instruction,
                    is_python=call.is_python,
                )
                pending.append(started)
                events.append(started)
        elif pending:
            replies = _OUTPUT_BLOCK.findall(content)
            for started, (_name, body) in zip(pending, replies, strict=False):
                ran = _code_run(body) if started.is_python else None
                if ran is not None:
                    code, printed = ran
                    failed = bool(_ERROR_HINT.search(printed))
                    result = ExecResult(
                        stdout="" if failed else printed,
                        stderr=printed if failed else "",
                        exit_code=1 if failed else 0,
                        backend="published",
                    )
                    events.append(
                        SandboxExec(run_id=run_id, parent_id=started.id, code=code, result=result)
                    )
                events.append(
                    ExpertCallFinished(
                        run_id=run_id, parent_id=started.id, name=started.name, text=body
                    )
                )
            pending = []
    answer, _closed = parse_final_answer(str(record.get("output", "")))
    if answer is not None:
        events.append(FinalAnswer(run_id=run_id, round=round_no, answer=answer))
    events.append(
        RunFinished(
            run_id=run_id,
            status="answered" if answer is not None else "limit",
            final_answer=answer,
            rounds=round_no,
        )
    )
    return events
