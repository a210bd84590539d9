"""Python programming puzzles (P3): the answer's `solution()` must satisfy `sat`.

The item's input is the puzzle, a function `sat(x, ...)`; the answer is Python code
defining `solution()`. Judging means running untrusted code, so it runs ONLY in the
`Sandbox` handed in (`ScoringEnv.sandbox`), never on this host; without one, scoring
stops with a message saying how to get one.

Our rule builds one program: `from typing import *`, the answer's code (taken from
its last ```python block when it has one), then the puzzle's own `sat` (defined last,
so an answer cannot replace it with one that always agrees), then a call
`sat(solution())`, and prints a random marker with the verdict. Correct only when
`sat` returned True itself, not just something truthy.

The paper ran the answer's code with the answer's OWN `sat` when it defined one,
with a 3 s limit, and counted any output containing "True" (a print in
`solution()` or an error message quoting `True` counted as a pass).
"""

from __future__ import annotations

import secrets

from conductor.errors import UserFacingError
from conductor.interfaces import ExecResult
from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.taskfile import TaskItem

NEEDS_TARGET = False
PAPER_TIMEOUT_S = 3.0
_FENCE = "```python"


class NoSandboxError(UserFacingError):
    """P3 answers were to be judged with nowhere safe to run them."""


def answer_code(answer: str) -> str:
    """The code in an answer: its last ```python block, else the answer itself."""
    if _FENCE in answer:
        return answer.split(_FENCE)[-1].split("```")[0].strip("\n")
    return answer.strip("\n")


def judge_program(code: str, sat: str, marker: str) -> str:
    return "\n".join(
        [
            "from typing import *",
            code,
            "",
            sat,
            "",
            "_verdict = sat(solution())",
            f"print({marker!r}, _verdict is True)",
            "",
        ]
    )


def _run(program: str, env: ScoringEnv, timeout: float) -> ExecResult:
    if env.sandbox is None:
        raise NoSandboxError(
            "scoring programming puzzles runs the answers' code, and no sandbox was "
            "given; pass one (conductor score --sandbox auto|docker|bwrap)"
        )
    result = env.sandbox.run(program, timeout=timeout)
    if result.infra_error:
        raise NoSandboxError(
            f"the {result.backend or 'sandbox'} sandbox failed: {result.infra_error}; "
            "`conductor sandbox doctor` tells what works here"
        )
    return result


def _failure(result: ExecResult) -> str:
    if result.timed_out:
        return "timed out"
    tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return f"exit {result.exit_code}: {tail[:120]}"


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    code = answer_code(answer)
    if "def solution" not in code:
        return Verdict(False, "the answer defines no solution()")
    sat = str(item.metadata.get("sat") or item.input)
    marker = f"P3-VERDICT-{secrets.token_hex(8)}"
    result = _run(judge_program(code, sat, marker), env, env.timeout_s)
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(marker):
            passed = line.endswith("True")
            return Verdict(passed, "sat(solution()) is True" if passed else "sat returned False")
    return Verdict(False, f"did not finish: {_failure(result)}")


def paper_program(answer: str, puzzle: str) -> str:
    """The program the published evaluation ran for an answer."""
    if _FENCE in answer:
        answer = answer.split(_FENCE)[-1].strip().split("```")[0].strip()
    if "def sat" in answer:
        prefix = "" if "from typing" in answer else "from typing import *\n"
        program = f"{prefix}{answer}\nanswer = solution()\nprint(sat(answer))"
    else:
        program = (
            f"from typing import *\n{puzzle}\n{answer}\nanswer = solution()\nprint(sat(answer))"
        )
    return program.replace("List[", "list[")


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    answer = paper_answer(output, lowercase=False, strip=False)
    result = _run(paper_program(answer, item.input), env, PAPER_TIMEOUT_S)
    # The published harness read stdout, or stderr when stdout was empty.
    seen = result.stdout.strip() or result.stderr.strip()
    return not result.timed_out and "True" in seen
