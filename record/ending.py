"""What a run's end means for the person who asked: its answer and verdict, or why it
has none and what to do. One account from the run's fold, so the terminal, the TUI, the
batch reports, `serve` and MCP `solve` say the same thing about the same run.

The statuses, as `RunFinished.status` records them and this module tells them:

| status        | headline                   | reason taken from                       |
|---------------|----------------------------|-----------------------------------------|
| answered      | answered, right/wrong/...  | the verdict's detail (`RunScored`)      |
| declined      | declined                   | the model's last turn ("No answer: …")  |
| no_answer     | no answer                  | what the run last told the model        |
| error         | error in the model/sandbox | the first `ErrorEvent`'s message        |
| interrupted   | interrupted                | fixed: stopped before it answered       |
| limit         | rounds/tokens/… limit hit  | the `LimitHit`: which limit, its value  |
| unfinished    | unfinished                 | the transcript ends before `RunFinished`|
"""

from __future__ import annotations

from dataclasses import dataclass

from conductor_kernel.events import ErrorEvent, Event, LimitHit, Observation
from conductor_kernel.text.display import visible_line
from record.fold import RunOutline

REASON_CHARS = 500  # a reason is one line: enough for the demo's advice, never a page
NO_ANSWER_MARK = "No answer:"  # the demo's (and a polite model's) own wording
HEADLINES = {
    "answered": "answered",
    "declined": "declined",
    "no_answer": "no answer",
    "error": "error",
    "interrupted": "interrupted",
    "limit": "limit hit",
    "unfinished": "unfinished",
}
# The settings flag that raises each limit a run may hit.
LIMIT_FLAGS = {
    "rounds": "--max-rounds",
    "tokens": "--max-tokens",
    "cost": "--max-cost",
    "wall_time": "--max-wall",
}
# Exception names an `ErrorEvent.where` may hold, by the part of the system they come from
# (the loop names a failure it watched by its cause, one it caught by its type).
_CAUSES = {
    "model": ("Model", "UnknownModel", "ScriptExhausted", "ReplayExhausted"),
    "sandbox": ("Sandbox", "CellStart"),
    "storage": ("Database", "OSError", "PermissionError", "FileNotFound", "Disk"),
}


@dataclass(frozen=True)
class Ending:
    """A run's end as the user is told it."""

    run_id: str
    status: str  # RunFinished.status, or "unfinished"
    answer: str | None
    verdict: str = ""  # "right" | "wrong" | "" (not scored)
    cause: str = ""  # an error's part of the system, or the limit that was hit
    reason: str = ""  # why there is no answer; for an answer, the verdict's detail
    advice: str = ""  # what to do about it

    @property
    def answered(self) -> bool:
        return self.status == "answered" and self.answer is not None

    @property
    def headline(self) -> str:
        """`answered, right`, `declined`, `error in the model`, `rounds limit hit`..."""
        words = HEADLINES.get(self.status, self.status)
        if self.answered and self.verdict:
            return f"{words}, {self.verdict}"
        if self.status == "error" and self.cause:
            known = self.cause in _CAUSES
            return f"{words} in the {self.cause}" if known else f"{words} ({self.cause})"
        if self.status == "limit" and self.cause:
            return f"{self.cause.replace('_', ' ')} {words}"
        return words

    @property
    def why(self) -> str:
        """The reason and the advice, as one sentence or two."""
        reason = self.reason
        if reason and self.advice and not reason.endswith((".", "!", "?")):
            reason += "."
        return " ".join(part for part in (reason, self.advice) if part)

    def line(self) -> str:
        """One line for a terminal or a chat reply."""
        if self.answered:
            return f"{self.headline}: {self.reason}" if self.reason else self.headline
        failed = "the run failed: " if self.status == "error" else ""
        return f"No answer ({self.headline}): {failed}{self.why}"


def ending(run: RunOutline) -> Ending:
    """The account of `run`'s end, from its fold alone."""
    status = run.status
    answer = run.answer
    verdict = run.correctness
    if status == "answered" and answer is not None:
        said = {"correct": "right", "wrong": "wrong"}.get(verdict.label, "")
        return Ending(run.run_id, status, answer, said, reason=_one_line(verdict.detail))
    events = _events(run)
    if status == "error":
        error = next((e for e in events if isinstance(e, ErrorEvent)), None)
        cause = cause_of(error.where) if error is not None else ""
        message = error.message if error is not None else "the run failed"
        return Ending(
            run.run_id,
            status,
            None,
            cause=cause,
            reason=_one_line(message),
            advice=f"`conductor runs show {run.run_id}` has the whole run.",
        )
    if status == "limit":
        hit = next((e for e in reversed(events) if isinstance(e, LimitHit)), None)
        limit = hit.limit if hit is not None else ""
        reason = (
            f"the run reached its {limit} limit ({hit.maximum:g}) before it answered."
            if hit is not None
            else "the run reached a limit before it answered."
        )
        flag = LIMIT_FLAGS.get(limit)
        advice = f"Raise it with `{flag}` to let it go on." if flag else ""
        return Ending(run.run_id, status, None, cause=limit, reason=reason, advice=advice)
    if status == "declined":
        said = run.rounds[-1].text if run.rounds else ""
        if NO_ANSWER_MARK in said:
            said = said[said.rfind(NO_ANSWER_MARK) + len(NO_ANSWER_MARK) :]
        reason = _one_line(said) or "the model said it cannot answer this question."
        return Ending(run.run_id, status, None, reason=reason)
    if status == "no_answer":
        told = [e for e in events if isinstance(e, Observation) and e.reason != "declined"]
        reason = (
            _one_line(told[-1].message)
            if told
            else "the model ended without giving a final answer."
        )
        return Ending(run.run_id, status, None, reason=reason)
    if status == "interrupted":
        return Ending(
            run.run_id,
            status,
            None,
            reason="the run was stopped before it answered.",
            advice="What it did is saved; ask again to run it anew.",
        )
    if status == "answered":  # answered with no answer recorded: an odd transcript
        return Ending(run.run_id, status, None, reason="the record holds no final answer.")
    reason = run.problem or "the transcript ends before the run finished."
    return Ending(run.run_id, "unfinished", answer, reason=_one_line(reason))


def cause_of(where: str) -> str:
    """The part of the system an `ErrorEvent.where` names: model, sandbox, storage, or
    the name itself when it is none of those."""
    if where in _CAUSES:
        return where
    for cause, prefixes in _CAUSES.items():
        if where.startswith(prefixes):
            return cause
    return where or "unknown"


def _events(run: RunOutline) -> list[Event]:
    """Every round's events and the loose ones, in order enough for first and last."""
    return [e for r in run.rounds for e in r.events] + list(run.loose)


def _one_line(text: str) -> str:
    return visible_line(" ".join(text.split()))[:REASON_CHARS]
