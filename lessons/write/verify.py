"""How far a finished run's answer can be trusted, and on what evidence.

The answer is judged by the task's own scorer (the application's conductor/scoring,
reached through the kernel port `conductor_kernel.task_scoring`), never by a matcher
of the notebook's. Evidence, strongest first; every note records which one it has:

- `target`: the scorer compared the answer with a known answer. A rubric (the sonnet
  task's `ABAB CDCD EFEF GG, grass value jail`) or an empty target is no known answer.
- `checker`: the task's scorer decides without a target (Game of 24's arithmetic, a
  legal mating move, `sat(solution())` run in the sandbox, a sonnet's form).
- `tool`: a notebook tool tested on other questions of the kind, run on this question
  in the sandbox, gave the same answer: a fresh derivation that never saw the candidate.
- `independent`: two or more derivations that were not shown the candidate arrived at
  it (MoT's agreement, made strict): expert replies, or programs' output, whose
  instructions did not contain the answer.
- `sandbox-check`: a program that held the answer as data and tested it printed a
  passing verdict (not merely the answer).
- `none`: nothing checked it.

Without a target, only `checker`, `tool`, `independent` and `sandbox-check` give
`verified`; a program that printed the answer, or experts who were shown it and
agreed, do not.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import Sandbox
from conductor_kernel.task_scoring import RecognisedTask, TaskJudge, task_scoring

log = logging.getLogger("conductor.notebook")

LEVELS = ("target", "checker", "tool", "independent", "sandbox-check", "none")
EVIDENCE_WORDS = {
    "target": "the task's scorer accepted it against the known answer",
    "checker": "the task's scorer checked it without a known answer",
    "tool": "a tested tool, run afresh on the question, gave the same answer",
    "independent": "two derivations that were not shown it arrived at it",
    "sandbox-check": "a program that tested it in the sandbox passed it",
    "none": "not verified",
}
LEARNABLE_STATUSES = ("answered", "limit", "no_answer")
"""Run endings the notebook learns from; errors, interruptions and labelled non-answers
(a model saying it cannot) teach nothing about the task."""


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


def numbers_in(text: str) -> list[Fraction]:
    out = []
    for raw in _NUMBER_RE.findall(text):
        try:
            out.append(Fraction(raw.replace(",", "")))
        except (ValueError, ZeroDivisionError):
            continue
    return out


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


# -- the task's scorer -------------------------------------------------------------------


def judge_for(task: str) -> TaskJudge | None:
    """The judge of a task name (built-in or a scorer's name), None when unknown."""
    return task_scoring().judge_for(task)


def recognised_task(question: str) -> RecognisedTask | None:
    """The built-in task a question asked without one surely is (solve, the TUI)."""
    return task_scoring().recognise(question)


_CHOICE_TARGET = re.compile(r"^\(?[A-Za-z]\)$")
_NUMBER_TARGET = re.compile(r"^-?[\d,]*\d(?:\.\d+)?$")


def judge_by_target(target: str) -> TaskJudge:
    """A run without a task but with a target: the scorer its form calls for."""
    text = target.strip()
    if _CHOICE_TARGET.match(text):
        scorer = "choice"
    elif _NUMBER_TARGET.match(text):
        scorer = "numeric"
    else:
        scorer = "exact"
    return TaskJudge(f"({scorer})", scorer, "", True)


def usable_target(target: str | None, judge: TaskJudge | None) -> str | None:
    """The target as a known answer, or None when it is empty or only a rubric."""
    if target is None or not target.strip():
        return None
    if judge is not None and not judge.needs_target:
        return None  # the scorer decides alone; what the file holds is a rubric at most
    return target


def scorer_verdict(
    judge: TaskJudge,
    question: str,
    answer: str,
    target: str | None,
    *,
    sandbox: Sandbox | None = None,
) -> bool | None:
    """The task scorer's decision, or None when it cannot decide here."""
    if judge.needs_target and target is None:
        return None
    if judge.scorer == "p3" and sandbox is None:
        return None  # sat() only ever runs in the sandbox
    return task_scoring().verdict(judge, question, answer, target, sandbox)


# -- evidence without a target ----------------------------------------------------------


_VERDICT_WORDS = re.compile(r"(?i)\b(true|passed|pass|valid|correct|ok)\b")
_NEGATIVE = re.compile(r"(?i)\b(false|fail|failed|invalid|incorrect|wrong|error)\b")


def _answer_as_data(code: str, answer: str) -> bool:
    """Whether a program holds the candidate answer itself (not just computes it)."""
    squeezed = re.sub(r"\s+", "", answer)
    return len(squeezed) >= 3 and squeezed in re.sub(r"[\s'\"]", "", code)


def independent_derivations(events: list[Event], answer: str) -> int:
    """Expert replies and program outputs giving `answer` whose instruction did not."""
    instructions = {e.id: e.instruction for e in events if isinstance(e, ExpertCallStarted)}
    count = 0
    for event in events:
        if isinstance(event, ExpertCallFinished) and event.error is None:
            shown = instructions.get(event.parent_id or "", "")
            if output_contains(event.text, answer) and not output_contains(shown, answer):
                count += 1
    return count


def sandbox_checked(events: list[Event], answer: str) -> bool:
    """A clean program that holds the answer as data printed a passing verdict."""
    for event in events:
        if not isinstance(event, SandboxExec) or not event.result.ok:
            continue
        out = event.result.stdout
        passed = _VERDICT_WORDS.search(out) and not _NEGATIVE.search(out)
        if passed and _answer_as_data(event.code, answer):
            return True
    return False


def verify_run(
    events: list[Event],
    *,
    sandbox: Sandbox | None = None,
    reproduced: bool = False,
    use_target: bool = True,
) -> Verification:
    """The run's outcome and its evidence.

    `reproduced`: a tested tool gave the same answer (lessons/forms/tools.py decides it).
    `use_target=False` withholds the target, as the benchmark does to measure the
    labels given without one.
    """
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    answer = finished.final_answer if finished is not None else None
    judge = judge_for(started.task) if started is not None else None
    target = usable_target(started.target if started and use_target else None, judge)
    if judge is None and target is not None:
        judge = judge_by_target(target)
    if answer is None or not answer.strip():
        status = finished.status if finished is not None else "unfinished"
        return Verification("target" if target else "none", "unanswered", f"no answer ({status})")
    question = started.question if started is not None else ""
    recognised = None
    if judge is None and target is None and (started is None or not started.target):
        # Asked without a task (solve, the TUI): a question that surely is a built-in
        # task's is judged by its scorer, the known answer being what the question fixes.
        recognised = recognised_task(question)
        if recognised is not None:
            judge, question, target = recognised.judge, recognised.task_input, recognised.target
    if judge is not None:
        verdict = scorer_verdict(judge, question, answer, target, sandbox=sandbox)
        if verdict is not None:
            level = "checker" if target is None or recognised is not None else "target"
            words = EVIDENCE_WORDS[level]
            if recognised is not None:
                words = f"recognised as {judge.name} from the question; its scorer accepted it"
            if verdict:
                return Verification(level, "correct", words)
            if recognised is not None:
                why = f"recognised as {judge.name}; " + (
                    f"the question's answer is {target!r}" if target else "its checker failed it"
                )
            else:
                why = (
                    f"the known answer is {target!r}" if target else "the task's checker failed it"
                )
            return Verification(level, "wrong", why)
    if reproduced:
        return Verification("tool", "verified", EVIDENCE_WORDS["tool"])
    derivations = independent_derivations(events, answer)
    if derivations >= 2:
        return Verification("independent", "verified", f"{derivations} derivations not shown it")
    if sandbox_checked(events, answer):
        return Verification("sandbox-check", "verified", EVIDENCE_WORDS["sandbox-check"])
    return Verification("none", "unverified", "nothing independent checked the answer")
