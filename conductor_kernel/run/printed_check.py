"""What the task's own check says of the lines a program printed.

A weak model passes on whatever its program printed, right or wrong; the check that runs
before a final answer is taken (conductor/scoring/answer_check.py) reads the printed lines
too, so that a failing line goes back to the expert and a passing one is named
(conductor_kernel/run/expert_call.py, conductor_kernel/run/meta.py).
"""

from __future__ import annotations

from collections.abc import Callable

from conductor_kernel.interfaces import CheckVerdict, ExecResult

# How many of a program's last printed lines are held to the task's check.
CHECKED_LINES = 40


def held_to_check(
    stdout: str, check: Callable[[str], CheckVerdict | None] | None
) -> tuple[str, CheckVerdict] | None:
    """What the task's own check says of a program's printed lines: the latest line it
    accepts, else the latest it rejects, with its verdict; None when it decides no line
    (the program may answer a part of the task) or there is no check."""
    if check is None:
        return None
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    rejected: tuple[str, CheckVerdict] | None = None
    for line in reversed(lines[-CHECKED_LINES:]):
        if len(line) > 2000:
            continue
        verdict = check(line)
        if verdict is not None and verdict.accepted:
            return line, verdict
        if verdict is not None and rejected is None:
            rejected = (line, verdict)
    return rejected


def passing_line(stdout: str, check: Callable[[str], CheckVerdict | None] | None) -> str | None:
    """The latest line of `stdout` the task's own check accepts; None if none does."""
    held = held_to_check(stdout, check)
    return held[0] if held is not None and held[1].accepted else None


def passed_by(
    result: ExecResult | None, check: Callable[[str], CheckVerdict | None] | None
) -> str | None:
    """The line a program that ran well printed and the check accepts; None otherwise."""
    return None if result is None or not result.ok else passing_line(result.stdout, check)
