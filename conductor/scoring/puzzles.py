"""Python programming puzzles (P3): the answer's `solution()` must satisfy `sat`.

The item's input is the puzzle, a function `sat(x, ...)`; the answer is Python code
defining `solution()`. Judging runs untrusted code, so it runs ONLY in the `Sandbox`
handed in (`ScoringEnv.sandbox`), never on this host; without one, scoring stops with
a message saying how to get one.

Our rule judges in two separate sandbox runs, so that nothing the answer does can
reach the check:

1. **The answer's run**: `from typing import *`, the answer's code (its last
   ```python block when it has one), then `solution()` is called and its value
   written as JSON after a random marker. The puzzle's `sat` is not in this program:
   an answer that redefines `sat`, patches builtins, prints `True`, forges the
   checker's output, exits early (status 0 or not), raises, loops or exhausts memory
   changes nothing but its own value, or leaves none.
2. **The check's run**: `from typing import *`, the puzzle's own `sat`, the value
   read back from JSON (plain data: numbers, strings, booleans, lists, dicts), then
   `sat(value)`; correct only when it returns `True` itself, not just something truthy.

A value that is not JSON data (a set, an object with a forged `__eq__`) is wrong; every
answer type the P3 file declares (int, float, str, bool, lists of them) is JSON data.

The paper ran the answer's code with the answer's OWN `sat` when it defined one, with
a 3 s limit, and counted any output containing "True" (a print in `solution()` or an
error message quoting `True` counted as a pass).
"""

from __future__ import annotations

import base64
import json
import secrets
import zlib

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.tasks.files import TaskItem
from conductor_kernel.errors import UserFacingError
from conductor_kernel.interfaces import ExecResult

NEEDS_TARGET = False
PAPER_TIMEOUT_S = 3.0
MAX_VALUE_CHARS = 6_000_000  # a packed value beyond this is not read back
# Open sandboxes for P3 with these options: run 1's stdout carries the solution's value.
SANDBOX_OPTIONS = {"keep_bytes": 2 * MAX_VALUE_CHARS + 4096}
_FENCE = "```python"
_DIGITS = "import sys as _sys\nif hasattr(_sys, 'set_int_max_str_digits'):\n    _sys.set_int_max_str_digits(0)\n"


class NoSandboxError(UserFacingError):
    """P3 answers were to be judged with nowhere safe to run them."""


def answer_code(answer: str) -> str:
    """The code in an answer: its last ```python block, else the answer itself."""
    if _FENCE in answer:
        return answer.split(_FENCE)[-1].split("```")[0].strip("\n")
    return answer.strip("\n")


def value_program(code: str, marker: str) -> str:
    """Run 1: the answer's code, then its solution's value (JSON, zlib, base64) after `marker`."""
    return "\n".join(
        [
            "from typing import *",
            code,
            "",
            _DIGITS,
            "import base64 as _b64, json as _json, zlib as _zlib",
            "_value = _json.dumps(solution(), allow_nan=True).encode()",
            "_packed = _b64.b64encode(_zlib.compress(_value, 9)).decode()",
            f"print('\\n' + {marker!r} + _packed, flush=True)",
            "",
        ]
    )


def check_program(sat: str, value_json: str, marker: str) -> str:
    """Run 2: the puzzle's own `sat` on the value, and the verdict after `marker`."""
    return "\n".join(
        [
            "from typing import *",
            _DIGITS,
            "import base64 as _b64, json as _json, zlib as _zlib",
            f"_value = _json.loads(_zlib.decompress(_b64.b64decode({value_json!r})))",
            sat,
            "",
            f"print({marker!r}, sat(_value) is True, flush=True)",
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
    if result.oom_killed:
        return "ran out of memory"
    tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return f"exit {result.exit_code}: {tail[:120]}"


def _after_marker(stdout: str, marker: str) -> str | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            return line[len(marker) :]
    return None


def solution_value(answer: str, env: ScoringEnv) -> tuple[str | None, str]:
    """Run 1: the answer's solution() value, packed (JSON, zlib, base64), or None and why."""
    code = answer_code(answer)
    if "def solution" not in code:
        return None, "the answer defines no solution()"
    marker = f"P3-VALUE-{secrets.token_hex(8)}:"
    result = _run(value_program(code, marker), env, env.timeout_s)
    value = _after_marker(result.stdout, marker) if result.ok else None
    if value is None:
        return None, f"solution() gave no value: {_failure(result)}"
    if result.stdout_truncated or len(value) > MAX_VALUE_CHARS:
        return None, (
            f"solution()'s value ({result.stdout_bytes:,} bytes packed) is more than the "
            "sandbox passes back; open it with puzzles.SANDBOX_OPTIONS (Docker)"
        )
    try:
        json.loads(zlib.decompress(base64.b64decode(value, validate=True)))
    except (ValueError, zlib.error):
        return None, "solution()'s value did not come back as JSON"
    return value, ""


def check_value(sat: str, value_json: str, env: ScoringEnv) -> Verdict:
    """Run 2: the puzzle's `sat` on a value, in a program the answer never touched."""
    marker = f"P3-VERDICT-{secrets.token_hex(8)}"
    result = _run(check_program(sat, value_json, marker), env, env.timeout_s)
    verdict = _after_marker(result.stdout, marker)
    if verdict is None:
        return Verdict(False, f"sat did not finish on the value: {_failure(result)}")
    passed = verdict.strip() == "True"
    return Verdict(passed, "sat(solution()) is True" if passed else "sat returned no True")


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    value, why = solution_value(answer, env)
    if value is None:
        return Verdict(False, why)
    return check_value(str(item.metadata.get("sat") or item.input), value, env)


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
