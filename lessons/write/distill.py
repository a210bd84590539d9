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

import logging
import re

from conductor_kernel.interfaces import ChatModel, TaskScoring
from conductor_kernel.text.counts import plural
from lessons import prompts
from lessons.forms.problems import core_input
from lessons.values import (
    EVIDENCE_WORDS,
    NOTE_KINDS,
    NoteDraft,
    Verification,
    code_skeleton,
    excerpt,
)
from lessons.write.asking import ask, echoes, is_placeholder
from lessons.write.budget import OverBudget
from lessons.write.verify import LEARNABLE_STATUSES, output_contains
from record.fold import RunOutline

log = logging.getLogger("conductor.notebook")

KINDS = NOTE_KINDS
MAX_CODE_CHARS = 6000
MAX_REFLECTION_NOTES = 4

__all__ = ["KINDS", "NoteDraft", "distill_run", "excerpt", "parse_reflection", "reflect"]


def _verified_phrase(verification: Verification) -> str:
    return EVIDENCE_WORDS.get(verification.level, "not verified")


def answered(run: RunOutline) -> bool:
    return run.answer is not None and bool(run.answer.strip())


def working_code(run: RunOutline) -> str | None:
    """The program that ran cleanly and printed the answer; else the last clean one."""
    clean = [x for x in run.execs if x.result.ok and x.code.strip()]
    if not clean or not answered(run):
        return None
    assert run.answer is not None
    printed = [x for x in clean if output_contains(x.result.stdout, run.answer)]
    chosen = (printed or clean)[-1]
    return chosen.code.strip()[:MAX_CODE_CHARS]


def describe_steps(run: RunOutline) -> list[str]:
    """The run's experts as procedure steps, consecutive repeats folded together."""
    steps: list[str] = []
    last = None
    for call in run.calls:
        if call.started is None:
            continue
        name = call.started.name
        if name == last:
            continue
        last = name
        if call.started.is_python:
            what = "wrote a program that ran cleanly" if call.code_ok else "wrote code"
            steps.append(f"Ask {name} for a program; it {what}.")
        else:
            steps.append(f"Consult {name}.")
    return steps


def roster(run: RunOutline) -> list[str]:
    """Expert names in the order first consulted."""
    seen: list[str] = []
    for call in run.calls:
        if call.started is not None and call.started.name not in seen:
            seen.append(call.started.name)
    return seen


def replies(run: RunOutline) -> list[tuple[str, str, str]]:
    """(expert, instruction, reply) of every call that answered, in the order they did."""
    return [
        (c.finished.name, c.instruction, c.finished.text)
        for c in run.replied
        if c.finished is not None and c.finished.error is None and c.finished.text.strip()
    ]


def program_errors(run: RunOutline) -> list[str]:
    """The last line of each program that failed, in the order they ran."""
    out = []
    for x in run.execs:
        if not x.result.ok:
            tail = (x.result.stderr or x.result.stdout).strip().splitlines()
            out.append(tail[-1] if tail else "the program failed")
    return out


def rounds_taken(run: RunOutline) -> int:
    return run.finished.rounds if run.finished is not None else 0


def task_input(run: RunOutline, scoring: TaskScoring) -> str:
    """The question less its task's description: what excerpts are cut from."""
    judge = scoring.judge_for(run.task)
    if judge is not None:
        return judge.task_input(run.question)
    return core_input(run.question, scoring)


def derivation(run: RunOutline) -> str:
    """How the answer was reached: the first expert reply that gave it, not shown it."""
    assert run.answer is not None
    for name, instruction, reply in replies(run):
        if output_contains(reply, run.answer) and not output_contains(instruction, run.answer):
            return f"{name}: {excerpt(reply, 400)}"
    for name, _instruction, reply in replies(run):
        if output_contains(reply, run.answer):
            return f"{name}: {excerpt(reply, 400)}"
    return ""


def what_went_wrong(run: RunOutline, verification: Verification) -> str:
    """The error, the disagreement, the check that failed: what a failure teaches."""
    parts = []
    if verification.outcome == "wrong":
        parts.append(f"the task's check rejected “{excerpt(run.answer or '', 160)}”")
        parts.append(f"({excerpt(verification.detail, 160)})")
    elif not answered(run):
        status = run.finished.status if run.finished is not None else ""
        parts.append(f"the run ended without an answer ({status or 'unknown'})")
    answers = []
    for name, _instruction, reply in replies(run):
        last = [line for line in reply.strip().splitlines() if line.strip()]
        if last:
            answers.append(f"{name} ended “{excerpt(last[-1], 80)}”")
    if len({a.split(" ended ")[1] for a in answers}) > 1:
        parts.append("the experts disagreed: " + "; ".join(answers[:3]))
    errors = program_errors(run)
    if errors:
        parts.append(f"a program failed with “{excerpt(errors[-1], 120)}”")
    return ", ".join(parts) + "."


def distill_run(
    run: RunOutline, verification: Verification, scoring: TaskScoring
) -> list[NoteDraft]:
    """Deterministic lessons from one run (no model): worked reasoning, what went wrong."""
    drafts: list[NoteDraft] = []
    problem = excerpt(task_input(run, scoring), 200)
    if run.status not in LEARNABLE_STATUSES:
        return drafts  # a system failure, a stop, a labelled non-answer teach nothing
    if not answered(run) or verification.outcome == "wrong":
        drafts.append(
            NoteDraft(
                kind="pitfall",
                text=f"On “{problem}”: {what_went_wrong(run, verification)}",
                confidence=0.8 if verification.outcome == "wrong" else 0.6,
                skeleton=f"{what_went_wrong(run, verification)}",
            )
        )
        return drafts
    assert run.answer is not None
    answer = excerpt(run.answer, 200)
    confidence = {"correct": 0.9, "verified": 0.75}.get(verification.outcome, 0.4)
    how = derivation(run)
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
    code = working_code(run) if verification.trustworthy else None
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
                skeleton=code_skeleton(code),
            )
        )
    steps = describe_steps(run)
    if steps and verification.trustworthy:
        numbered = " ".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
        drafts.append(
            NoteDraft(
                kind="procedure",
                text=f"A procedure that gave a {verification.outcome} answer in "
                f"{rounds_taken(run)} "
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


def reflection_prompt(run: RunOutline, verification: Verification) -> str:
    code = working_code(run) or ""
    return prompts.REFLECTION.format(
        question=excerpt(run.question, 2000),
        answer=excerpt(run.answer or "(no answer)", 600),
        outcome=prompts.OUTCOME_WORDS.get(verification.outcome, verification.outcome),
        target=(
            prompts.REFLECTION_TARGET.format(target=run.target)
            if run.target and verification.level == "target"
            else ""
        ),
        experts=", ".join(roster(run)) or "none",
        rounds=plural(rounds_taken(run), "round"),
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
    model: ChatModel, run: RunOutline, verification: Verification
) -> tuple[list[NoteDraft], str]:
    """Ask the model for generalised notes. Returns the drafts and a status line.

    A model that fails or answers out of form costs only the reflection, never the
    deterministic notes: the status says what happened.
    """
    prompt = reflection_prompt(run, verification)
    try:
        completion = ask(model, prompt, system=prompts.REFLECTION_SYSTEM, max_tokens=600)
    except OverBudget as exc:  # not made: the run's learning budget is spent
        return [], f"skipped: {exc}"
    except Exception as exc:  # a model failure is an observation about this reflection
        log.warning("reflection failed: %s", exc)
        return [], f"failed: {excerpt(str(exc), 160)}"
    drafts = parse_reflection(completion.text, prompt)
    if not drafts:
        if completion.stopped:
            return [], "failed: the reply repeated itself before any INSIGHT/PITFALL lesson"
        return [], "failed: the reply held no INSIGHT/PITFALL lines with a lesson"
    return drafts, f"ok: {len(drafts)} notes"
