"""From a finished run to note drafts: deterministic notes, and reflection when a model can.

Deterministic notes need no model and are the same every time:
- `example`: the question and the answer it got, with how that answer was verified (a
  worked solution, MoT's lesson); a wrong or missing answer gives a `pitfall` instead.
- `code`: the program that ran cleanly in the sandbox and printed the answer (the most
  reusable note of all, as Dynamic Cheatsheet found).
- `procedure`: the experts consulted, in order, the rounds and the outcome.

Reflection (ExpNote's lesson) asks the model for a few generalised insights and pitfalls,
each under a short key a later question would contain; it is told the correct answer
when one is known, and a failure with a known target is asked for pitfalls.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

from conductor.interfaces import ChatModel, Message
from notebook import prompts
from notebook.runview import RunView
from notebook.verify import Verification, output_contains

log = logging.getLogger("conductor.notebook")

KINDS = ("insight", "pitfall", "code", "procedure", "example")
MAX_CODE_CHARS = 6000
MAX_REFLECTION_NOTES = 4


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
        body = f"{self.kind}\x00{_squash(self.text)}\x00{_squash(self.code)}"
        return hashlib.sha256(body.encode()).hexdigest()[:32]

    @property
    def near_hash(self) -> str:
        basis = self.skeleton or f"{_squash(self.text)}\x00{_skeleton(self.code)}"
        return hashlib.sha256(f"{self.kind}\x00{basis}".encode()).hexdigest()[:24]


def _squash(text: str) -> str:
    return " ".join(text.split())


_STRING_RE = re.compile(r"(?s)('''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"[^\"\n]*\")")
_NUMBER_RE = re.compile(r"\b\d+(?:\.\d+)?\b")
_LITERAL_RUN_RE = re.compile(r"[-+]?[S0](?:\s*,\s*[-+]?[S0])*")


def _skeleton(code: str) -> str:
    """Code with its literals blanked, so programs differing only in data look alike."""
    code = _STRING_RE.sub("S", code)
    code = _NUMBER_RE.sub("0", code)
    code = re.sub(r"(?m)#.*$", "", code)
    code = _LITERAL_RUN_RE.sub("L", code)  # data lists of any length look alike
    return _squash(code)


def excerpt(text: str, limit: int) -> str:
    text = _squash(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _verified_phrase(verification: Verification) -> str:
    return {
        "target": "matched the known answer",
        "sandbox": "printed by a clean program run",
        "agreement": "given by two or more experts independently",
    }.get(verification.level, "not verified")


def working_code(view: RunView) -> str | None:
    """The program that ran cleanly and printed the answer; else the last clean one."""
    clean = [run for run in view.code_runs if run.ok and run.code.strip()]
    if not clean or not view.answered:
        return None
    assert view.answer is not None
    printed = [run for run in clean if output_contains(run.stdout, view.answer)]
    chosen = (printed or clean)[-1]
    return chosen.code.strip()[:MAX_CODE_CHARS]


def describe_steps(view: RunView) -> list[str]:
    """The run's experts as procedure steps, consecutive repeats folded together."""
    steps: list[str] = []
    last = None
    for step in view.steps:
        if step.name == last:
            continue
        last = step.name
        if step.is_python:
            what = "wrote a program that ran cleanly" if step.code_ok else "wrote code"
            steps.append(f"Ask {step.name} for a program; it {what}.")
        else:
            steps.append(f"Consult {step.name}.")
    return steps


def distill_run(view: RunView, verification: Verification) -> list[NoteDraft]:
    """Deterministic notes from one run (no model)."""
    drafts: list[NoteDraft] = []
    question = excerpt(view.question, 300)
    if not view.answered and view.status in ("error", "interrupted"):
        return drafts  # a system failure or a user's stop teaches nothing about the task
    if not view.answered:
        drafts.append(
            NoteDraft(
                kind="pitfall",
                text=(
                    f"A run on “{question}” ended without an answer ({view.status or 'unknown'}, "
                    f"{view.rounds} rounds; experts: {', '.join(view.roster) or 'none'})."
                ),
                confidence=0.6,
            )
        )
        return drafts
    assert view.answer is not None
    answer = excerpt(view.answer, 300)
    if verification.outcome == "wrong":
        drafts.append(
            NoteDraft(
                kind="pitfall",
                text=(
                    f"Wrong answer: “{answer}” was given to “{question}”, but the known answer "
                    f"is “{excerpt(view.target or '', 200)}”. Experts consulted: "
                    f"{', '.join(view.roster) or 'none'}."
                ),
                confidence=0.9,
            )
        )
        return drafts
    confidence = {"correct": 0.9, "verified": 0.75}.get(verification.outcome, 0.4)
    drafts.append(
        NoteDraft(
            kind="example",
            text=(f"Worked example ({_verified_phrase(verification)}): “{question}” → “{answer}”."),
            confidence=confidence,
        )
    )
    code = working_code(view)
    if code:
        drafts.append(
            NoteDraft(
                kind="code",
                text=(
                    f"A program that ran cleanly in the sandbox and led to the answer “{excerpt(answer, 80)}” "
                    f"for “{excerpt(view.question, 160)}”. Adapt its data to the new question."
                ),
                code=code,
                confidence=confidence,
                skeleton=_skeleton(code),
            )
        )
    steps = describe_steps(view)
    if steps:
        outcome = {"correct": "correct", "verified": "verified"}.get(
            verification.outcome, "unverified"
        )
        numbered = " ".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
        drafts.append(
            NoteDraft(
                kind="procedure",
                text=f"A procedure that gave a {outcome} answer in {view.rounds} rounds: {numbered} Then answer.",
                confidence=confidence,
                skeleton=f"{outcome}\x00" + "\x00".join(steps),
            )
        )
    return drafts


# -- reflection ---------------------------------------------------------------------------


_REFLECTION_LINE = re.compile(
    r"^\s*[-*\d.)\s]*(INSIGHT|PITFALL)\s*\|\s*(?P<key>[^|]{2,120}?)\s*\|\s*(?P<text>.{8,600})$",
    re.I | re.M,
)


def reflection_prompt(view: RunView, verification: Verification) -> str:
    code = working_code(view) or ""
    return prompts.REFLECTION.format(
        question=excerpt(view.question, 2000),
        answer=excerpt(view.answer or "(no answer)", 600),
        outcome=prompts.OUTCOME_WORDS.get(verification.outcome, verification.outcome),
        target=(
            prompts.REFLECTION_TARGET.format(target=view.target)
            if view.target and verification.level == "target"
            else ""
        ),
        experts=", ".join(view.roster) or "none",
        rounds=view.rounds,
        code=prompts.REFLECTION_CODE.format(code=code[:2500]) if code else "",
        wanted=(
            prompts.WANT_PITFALLS
            if verification.outcome in ("wrong", "unanswered")
            else prompts.WANT_INSIGHTS
        ),
    )


def parse_reflection(text: str) -> list[NoteDraft]:
    """Notes from the model's reply; lines not in the asked form are ignored."""
    drafts = []
    for match in _REFLECTION_LINE.finditer(text):
        kind = match.group(1).lower()
        drafts.append(
            NoteDraft(
                kind=kind,
                key=excerpt(match.group("key"), 120),
                text=excerpt(match.group("text"), 600),
                confidence=0.6,
                author="reflection",
            )
        )
    return drafts[:MAX_REFLECTION_NOTES]


def reflect(
    model: ChatModel, view: RunView, verification: Verification
) -> tuple[list[NoteDraft], str]:
    """Ask the model for generalised notes. Returns the drafts and a status line.

    A model that fails or answers out of form costs only the reflection, never the
    deterministic notes: the status says what happened.
    """
    try:
        completion = model.complete(
            [Message("user", reflection_prompt(view, verification))],
            system=prompts.REFLECTION_SYSTEM,
            role="expert",
            max_tokens=600,
        )
    except Exception as exc:  # a model failure is an observation about this reflection
        log.warning("reflection failed: %s", exc)
        return [], f"failed: {excerpt(str(exc), 160)}"
    drafts = parse_reflection(completion.text)
    if not drafts:
        return [], "failed: the reply held no INSIGHT/PITFALL lines"
    return drafts, f"ok: {len(drafts)} notes"
