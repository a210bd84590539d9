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

from conductor_kernel.interfaces import ChatModel
from lessons.write import prompts
from lessons.write.asking import ask, echoes, is_placeholder
from lessons.write.runview import RunView
from lessons.write.verify import (
    EVIDENCE_WORDS,
    LEARNABLE_STATUSES,
    Verification,
    judge_for,
    output_contains,
)

log = logging.getLogger("conductor.notebook")

KINDS = ("insight", "pitfall", "tool", "code", "procedure", "example")
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
    return EVIDENCE_WORDS.get(verification.level, "not verified")


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


def task_input(view: RunView) -> str:
    """The question less its task's description: what excerpts are cut from."""
    from lessons.forms.problems import core_input

    judge = judge_for(view.task)
    return judge.task_input(view.question) if judge is not None else core_input(view.question)


def derivation(view: RunView) -> str:
    """How the answer was reached: the first expert reply that gave it, not shown it."""
    assert view.answer is not None
    for name, instruction, reply in view.replies:
        if output_contains(reply, view.answer) and not output_contains(instruction, view.answer):
            return f"{name}: {excerpt(reply, 400)}"
    for name, _instruction, reply in view.replies:
        if output_contains(reply, view.answer):
            return f"{name}: {excerpt(reply, 400)}"
    return ""


def what_went_wrong(view: RunView, verification: Verification) -> str:
    """The error, the disagreement, the check that failed: what a failure teaches."""
    parts = []
    if verification.outcome == "wrong":
        parts.append(f"the task's check rejected “{excerpt(view.answer or '', 160)}”")
        parts.append(f"({excerpt(verification.detail, 160)})")
    elif not view.answered:
        parts.append(f"the run ended without an answer ({view.status or 'unknown'})")
    answers = []
    for name, _instruction, reply in view.replies:
        last = [line for line in reply.strip().splitlines() if line.strip()]
        if last:
            answers.append(f"{name} ended “{excerpt(last[-1], 80)}”")
    if len({a.split(" ended ")[1] for a in answers}) > 1:
        parts.append("the experts disagreed: " + "; ".join(answers[:3]))
    if view.errors:
        parts.append(f"a program failed with “{excerpt(view.errors[-1], 120)}”")
    return ", ".join(parts) + "."


def distill_run(view: RunView, verification: Verification) -> list[NoteDraft]:
    """Deterministic lessons from one run (no model): worked reasoning, what went wrong."""
    drafts: list[NoteDraft] = []
    problem = excerpt(task_input(view), 200)
    if view.status not in LEARNABLE_STATUSES:
        return drafts  # a system failure, a stop, a labelled non-answer teach nothing
    if not view.answered or verification.outcome == "wrong":
        drafts.append(
            NoteDraft(
                kind="pitfall",
                text=f"On “{problem}”: {what_went_wrong(view, verification)}",
                confidence=0.8 if verification.outcome == "wrong" else 0.6,
                skeleton=f"{what_went_wrong(view, verification)}",
            )
        )
        return drafts
    assert view.answer is not None
    answer = excerpt(view.answer, 200)
    confidence = {"correct": 0.9, "verified": 0.75}.get(verification.outcome, 0.4)
    how = derivation(view)
    drafts.append(
        NoteDraft(
            kind="example",
            text=(
                f"Solved ({_verified_phrase(verification)}): “{problem}” → “{answer}”."
                + (f" How: {how}" if how else "")
            ),
            confidence=confidence,
        )
    )
    code = working_code(view) if verification.trustworthy else None
    if code:
        drafts.append(
            NoteDraft(
                kind="code",
                text=(
                    "A program that ran cleanly in the sandbox and printed the verified answer; "
                    "its data came from one question: put the new question's in."
                ),
                code=code,
                confidence=confidence,
                skeleton=_skeleton(code),
            )
        )
    steps = describe_steps(view)
    if steps and verification.trustworthy:
        numbered = " ".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
        drafts.append(
            NoteDraft(
                kind="procedure",
                text=f"A procedure that gave a {verification.outcome} answer in {view.rounds} "
                f"rounds: {numbered} Then answer.",
                confidence=confidence,
                skeleton=f"{verification.outcome}\x00" + "\x00".join(steps),
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


def parse_reflection(text: str, prompt: str = "") -> list[NoteDraft]:
    """Notes from the model's reply; lines not in the asked form are ignored, and so are
    lines in the form that hold no lesson: the prompt's slots or words written back, a
    key or lesson with no words, a line already given."""
    drafts: list[NoteDraft] = []
    for match in _REFLECTION_LINE.finditer(text):
        key, lesson = excerpt(match.group("key"), 120), excerpt(match.group("text"), 600)
        if not _is_lesson(key, lesson, prompt):
            continue
        draft = NoteDraft(
            kind=match.group(1).lower(), key=key, text=lesson, confidence=0.6, author="reflection"
        )
        if all(d.content_hash != draft.content_hash for d in drafts):
            drafts.append(draft)
    return drafts[:MAX_REFLECTION_NOTES]


def _is_lesson(key: str, lesson: str, prompt: str) -> bool:
    words = re.findall(r"[^\W\d_]{2,}", lesson)
    return (
        len(words) >= 3
        and re.search(r"[^\W\d_]{2,}", key) is not None
        and not is_placeholder(key)
        and not is_placeholder(lesson)
        and not echoes(lesson, prompt)
    )


def reflect(
    model: ChatModel, view: RunView, verification: Verification
) -> tuple[list[NoteDraft], str]:
    """Ask the model for generalised notes. Returns the drafts and a status line.

    A model that fails or answers out of form costs only the reflection, never the
    deterministic notes: the status says what happened.
    """
    prompt = reflection_prompt(view, verification)
    try:
        completion = ask(model, prompt, system=prompts.REFLECTION_SYSTEM, max_tokens=600)
    except Exception as exc:  # a model failure is an observation about this reflection
        log.warning("reflection failed: %s", exc)
        return [], f"failed: {excerpt(str(exc), 160)}"
    drafts = parse_reflection(completion.text, prompt)
    if not drafts:
        if completion.stopped:
            return [], "failed: the reply repeated itself before any INSIGHT/PITFALL lesson"
        return [], "failed: the reply held no INSIGHT/PITFALL lines with a lesson"
    return drafts, f"ok: {len(drafts)} notes"
