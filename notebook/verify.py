"""How far a finished run's answer can be trusted, from its events alone.

Levels, strongest first (MoT's lesson: keep only what is trustworthy without labels):
- `target`: the run knew the correct answer (RunStarted.target) and the answer matches
  it, leniently (case, spacing, punctuation, numbers written differently, a multiple
  choice letter, an arithmetic expression with the target value); or does not match.
- `sandbox`: a program ran cleanly (exit 0) and printed the answer.
- `agreement`: two or more expert replies contain the answer independently.
- `none`: nothing checked it.
"""

from __future__ import annotations

import ast
import operator
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from conductor.events import Event, ExpertCallFinished, RunFinished, RunStarted, SandboxExec

LEVELS = ("target", "sandbox", "agreement", "none")


@dataclass(frozen=True)
class Verification:
    level: str  # one of LEVELS
    outcome: str  # correct | wrong | verified | unverified | unanswered
    detail: str = ""

    @property
    def trustworthy(self) -> bool:
        return self.outcome in ("correct", "verified")


def normalise(text: str) -> str:
    """Lower case, accents folded, punctuation dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s.#+\-*/=()]", " ", text)
    return " ".join(text.split()).strip(" .")


_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_OPTION_RE = re.compile(r"^\(?([a-z])\)")


def numbers_in(text: str) -> list[Fraction]:
    out = []
    for raw in _NUMBER_RE.findall(text):
        cleaned = raw.replace(",", "")
        try:
            out.append(Fraction(cleaned))
        except (ValueError, ZeroDivisionError):
            continue
    return out


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def arithmetic_value(text: str) -> Fraction | None:
    """The exact value of a plain arithmetic expression (`(4 + 5*6) - 10`), else None."""
    expression = text.split("=")[0].replace("×", "*").replace("÷", "/").strip()
    if not expression or not re.fullmatch(r"[\d\s+\-*/().]+", expression):
        return None
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("not plain arithmetic")

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError):
        return None


def answers_match(answer: str, target: str) -> bool:
    """Whether `answer` gives `target`, judged leniently (see the module docstring)."""
    a, t = normalise(answer), normalise(target)
    if not a or not t:
        return False
    if a == t or a.replace(" ", "") == t.replace(" ", ""):
        return True
    option = _OPTION_RE.match(t)
    if option and len(t) <= 4:
        given = _OPTION_RE.match(a)
        return bool(given) and given.group(1) == option.group(1)
    target_numbers = numbers_in(t)
    if len(target_numbers) == 1 and _NUMBER_RE.fullmatch(t.replace(",", "")):
        if target_numbers[0] in numbers_in(a) and arithmetic_value(answer) is None:
            return True
        return arithmetic_value(answer) == target_numbers[0]
    # A move, word or phrase: the target as whole words inside the answer.
    return re.search(rf"(?<!\w){re.escape(t)}(?!\w)", a) is not None


def output_contains(output: str, answer: str) -> bool:
    """Whether program or expert output states the answer."""
    a, o = normalise(answer), normalise(output)
    if not a or not o:
        return False
    squeezed = a.replace(" ", "")
    if squeezed and squeezed in o.replace(" ", ""):
        return True
    head = normalise(answer.split("=")[0])
    if head and len(head) >= 3 and head.replace(" ", "") in o.replace(" ", ""):
        return True
    numbers = numbers_in(a)
    return len(numbers) == 1 and len(a) <= 24 and numbers[0] in numbers_in(o)


def verify_run(events: list[Event]) -> Verification:
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    answer = finished.final_answer if finished is not None else None
    if answer is None or not answer.strip():
        status = finished.status if finished is not None else "unfinished"
        level = "target" if started is not None and started.target else "none"
        return Verification(level, "unanswered", f"no answer (run {status})")
    if started is not None and started.target:
        if answers_match(answer, started.target):
            return Verification("target", "correct", "the answer matches the known target")
        return Verification("target", "wrong", f"the known target is {started.target!r}")
    for event in events:
        ok = isinstance(event, SandboxExec) and event.result.ok
        if ok and output_contains(event.result.stdout, answer):  # type: ignore[union-attr]
            return Verification("sandbox", "verified", "a clean program run printed it")
    agreeing = sum(
        1
        for e in events
        if isinstance(e, ExpertCallFinished) and e.error is None and output_contains(e.text, answer)
    )
    if agreeing >= 2:
        return Verification("agreement", "verified", f"{agreeing} expert replies give it")
    return Verification("none", "unverified", "nothing checked the answer")
