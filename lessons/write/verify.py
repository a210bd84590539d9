"""How far a finished run's answer can be trusted, and on what evidence.

The answer is judged by the task's own scorer (the application's conductor/scoring,
given to the notebook as a `conductor_kernel.interfaces.TaskScoring`), never by a
matcher of the notebook's. Evidence, strongest first; every note records which one it has:

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
from fractions import Fraction

from conductor_kernel.interfaces import Sandbox, TaskScoring
from lessons.forms.judging import judge_by_target, scorer_verdict, usable_target
from lessons.values import EVIDENCE_WORDS, Verification
from record.fold import RunOutline

log = logging.getLogger("conductor.notebook")

LEARNABLE_STATUSES = ("answered", "limit", "no_answer")
"""Run endings the notebook learns from; errors, interruptions and labelled non-answers
(a model saying it cannot) teach nothing about the task."""


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


# -- evidence without a target ----------------------------------------------------------


_VERDICT_WORDS = re.compile(r"(?i)\b(true|passed|pass|valid|correct|ok)\b")
_NEGATIVE = re.compile(r"(?i)\b(false|fail|failed|invalid|incorrect|wrong|error)\b")


def _answer_as_data(code: str, answer: str) -> bool:
    """Whether a program holds the candidate answer itself (not just computes it)."""
    squeezed = re.sub(r"\s+", "", answer)
    return len(squeezed) >= 3 and squeezed in re.sub(r"[\s'\"]", "", code)


_SMALL_SPACE = re.compile(r"(?i)^\s*\(?[a-j]\)?\s*$|^\s*(yes|no|true|false)\s*\.?\s*$")


def small_answer_space(answer: str) -> bool:
    """A choice letter or yes/no: replies agree on it by chance too often to count."""
    return bool(_SMALL_SPACE.match(answer))


def independent_derivations(run: RunOutline, answer: str) -> int:
    """Expert replies and program outputs giving `answer` whose instruction did not."""
    count = 0
    for call in run.replied:
        reply = call.finished
        if reply is not None and reply.error is None:
            shown = call.instruction
            if output_contains(reply.text, answer) and not output_contains(shown, answer):
                count += 1
    return count


def sandbox_checked(run: RunOutline, answer: str) -> bool:
    """A clean program that holds the answer as data printed a passing verdict."""
    for event in run.execs:
        if not event.result.ok:
            continue
        out = event.result.stdout
        passed = _VERDICT_WORDS.search(out) and not _NEGATIVE.search(out)
        if passed and _answer_as_data(event.code, answer):
            return True
    return False


def verify_run(
    run: RunOutline,
    *,
    scoring: TaskScoring,
    sandbox: Sandbox | None = None,
    reproduced: bool = False,
    use_target: bool = True,
) -> Verification:
    """The run's outcome and its evidence, judged with `scoring`'s task scorers.

    `reproduced`: a tested tool gave the same answer (lessons/forms/tools.py decides it).
    `use_target=False` withholds the target, as the benchmark does to measure the
    labels given without one.
    """
    started, finished = run.started, run.finished
    answer = finished.final_answer if finished is not None else None
    judge = scoring.judge_for(started.task) if started is not None else None
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
        recognised = scoring.recognise(question)
        if recognised is not None:
            judge, question, target = recognised.judge, recognised.task_input, recognised.target
    if judge is not None:
        verdict = scorer_verdict(scoring, judge, question, answer, target, sandbox=sandbox)
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
    derivations = independent_derivations(run, answer)
    if derivations >= 2 and not small_answer_space(answer):
        return Verification("independent", "verified", f"{derivations} derivations not shown it")
    if sandbox_checked(run, answer):
        return Verification("sandbox-check", "verified", EVIDENCE_WORDS["sandbox-check"])
    return Verification("none", "unverified", "nothing independent checked the answer")
