"""The values both of the notebook's paths share, below all of them: a note before it is
stored (`NoteDraft`), how far an answer was verified (`Verification`, with the words
that say each level), how text is cut for a note or a prompt (`excerpt`), and the
scorer a notebook has when it is given none (`NO_SCORING`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from fractions import Fraction

from conductor_kernel.interfaces import RecognisedTask, Sandbox, TaskJudge

# -- a note before it is stored ----------------------------------------------------------


# The kinds of note the notebook writes (lessons/write/distill.py); recall names no other.
NOTE_KINDS = ("insight", "pitfall", "tool", "code", "procedure", "example")


@dataclass
class NoteDraft:
    kind: str
    text: str
    code: str = ""
    key: str = ""  # filled from the task type when empty
    confidence: float = 0.5
    author: str = "distill"
    # What makes two notes "the same" though not byte-identical (see near_hash).
    skeleton: str = ""

    @property
    def content_hash(self) -> str:
        body = f"{self.kind}\x00{squash(self.text)}\x00{squash(self.code)}"
        return hashlib.sha256(body.encode()).hexdigest()[:32]

    @property
    def near_hash(self) -> str:
        basis = self.skeleton or f"{squash(self.text)}\x00{code_skeleton(self.code)}"
        return hashlib.sha256(f"{self.kind}\x00{basis}".encode()).hexdigest()[:24]


def squash(text: str) -> str:
    return " ".join(text.split())


def excerpt(text: str, limit: int) -> str:
    text = squash(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_STRING_RE = re.compile(r"(?s)('''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"[^\"\n]*\")")
_NUMBER_RE = re.compile(r"\b\d+(?:\.\d+)?\b")
_LITERAL_RUN_RE = re.compile(r"[-+]?[S0](?:\s*,\s*[-+]?[S0])*")


def code_skeleton(code: str) -> str:
    """Code with its literals blanked, so programs differing only in data look alike."""
    code = _STRING_RE.sub("S", code)
    code = _NUMBER_RE.sub("0", code)
    code = re.sub(r"(?m)#.*$", "", code)
    code = _LITERAL_RUN_RE.sub("L", code)  # data lists of any length look alike
    return squash(code)


# -- how far an answer was verified (lessons/write/verify.py decides) --------------------

LEVELS = ("target", "checker", "tool", "independent", "sandbox-check", "none")
EVIDENCE_WORDS = {
    "target": "the task's scorer accepted it against the known answer",
    "checker": "the task's scorer checked it without a known answer",
    "tool": "a tested tool, run afresh on the question, gave the same answer",
    "independent": "two derivations that were not shown it arrived at it",
    "sandbox-check": "a program that tested it in the sandbox passed it",
    "none": "not verified",
}


# What a note's evidence is worth, by an honest name: `checked` (the task's scorer or
# checker, or a program that tested the answer, on this very question), `corroborated`
# (independent derivations agreed: never proof), `unverified`, and `rejected` (the run's
# answer was judged wrong: a failure to learn from, never an answer to reuse).
TRUST_NAMES = ("checked", "corroborated", "unverified", "rejected")
_CHECKED = ("target", "checker", "sandbox-check")
_CORROBORATED = ("tool", "independent", "agreement")


def trust_name(level: str, outcome: str) -> str:
    """The trust name of a note verified at `level` with `outcome`."""
    if outcome == "wrong":
        return "rejected"
    if outcome not in ("correct", "verified"):
        return "unverified"
    if level in _CHECKED:
        return "checked"
    return "corroborated" if level in _CORROBORATED else "unverified"


@dataclass(frozen=True)
class Verification:
    level: str  # one of LEVELS
    outcome: str  # correct | wrong | verified | unverified | unanswered
    detail: str = ""

    @property
    def trustworthy(self) -> bool:
        return self.outcome in ("correct", "verified")


# -- no scorer ---------------------------------------------------------------------------


class NoScoring:
    """The scorers of a notebook given none: no task is known, no scorer compares an
    answer with a target or checks it, no task description is taken off a question. The
    notebook then judges only on the evidence it gathers itself (agreeing derivations, a
    program that checked the answer, a tested tool)."""

    def judge_for(self, task: str) -> TaskJudge | None:
        return None

    def verdict(
        self,
        judge: TaskJudge,
        question: str,
        answer: str,
        target: str | None,
        sandbox: Sandbox | None,
    ) -> bool | None:
        return None

    def task_descriptions(self) -> tuple[str, ...]:
        return ()

    def claimed_number(self, answer: str, question: str) -> Fraction | None:
        return None

    def recognise(self, question: str) -> RecognisedTask | None:
        return None


NO_SCORING = NoScoring()
