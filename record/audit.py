"""Audit findings: automatic checks over one run's events, the things an auditor looks for.

Pure functions over the event stream (ours, or a published record imported into it).
Each check is a heuristic that flags a run for a human to look at; the rules are spelled
out in docs/tui.md so an auditor knows what a badge means and what it cannot see.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult
from conductor_kernel.protocol import parse_turn

AUDIT_FORMAT_VERSION = 1

# kind -> (short badge, what it means). The order is the order of columns in reports.
FINDING_KINDS: dict[str, tuple[str, str]] = {
    "unconfirmed_answer": (
        "unconf",
        "the final answer was not confirmed by a second expert or by a sandbox run",
    ),
    "hidden_context": (
        "ctx",
        "an expert instruction leans on context the expert cannot see",
    ),
    "ignored_error": (
        "err",
        "a Python error or timeout that the meta model's next turn did not take up",
    ),
    "changed_after_verified": (
        "changed",
        "the final answer differs from one that code or an expert had verified",
    ),
    "limit_hit": ("limit", "a run or sandbox limit was reached"),
    "nudged": ("nudge", "the meta model had to be nudged to call an expert or answer"),
    "fabricated_reply": (
        "fake",
        "the meta model wrote an expert's reply itself",
    ),
}

# Phrases that point at something only the meta model has seen (the paper's
# "fresh eyes" failure): an expert has no "above" and no "before".
_HIDDEN_CONTEXT_RE = re.compile(
    r"(?i)\b("
    r"the above|(?:mentioned|shown|given|described|provided|stated) above"
    r"|as (?:before|previously|discussed|mentioned|we discussed)"
    r"|(?:the|your|our) (?:previous|prior|earlier|last) "
    r"(?:solution|answer|response|reply|step|steps|code|output|attempt|calculation|result|expression|suggestion|list)s?"
    r"|previous(?:ly)? (?:provided|given|suggested|found|proposed|computed)"
    r"|(?:you|we) (?:said|found|gave|computed|proposed|suggested) (?:earlier|before|previously)"
    r"|from before|earlier (?:solution|answer|response|result|expression)s?"
    r")\b"
)
# Words with which a meta turn takes up a failed program.
_ACK_RE = re.compile(
    r"(?i)(error|exception|traceback|bug|fix|fail|timed? ?out|time limit|did ?n[o']t (run|work|finish)"
    r"|issue|mistake|incorrect|wrong|again|retry|re-run|rerun)"
)
_TRACEBACK_RE = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception): ", re.M)
_TRIVIAL_OUTPUTS = {"true", "false", "none", "", "nosolution", "novalidexpressionfound"}


@dataclass
class Finding:
    kind: str
    message: str
    round: int | None = None
    event_id: str | None = None

    @property
    def badge(self) -> str:
        return FINDING_KINDS[self.kind][0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AuditReport:
    run_id: str
    task: str = ""
    question: str = ""
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counted = Counter(f.kind for f in self.findings)
        return {kind: counted[kind] for kind in FINDING_KINDS if counted[kind]}

    @property
    def badges(self) -> list[str]:
        return [FINDING_KINDS[kind][0] for kind in self.counts()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": AUDIT_FORMAT_VERSION,
            "run_id": self.run_id,
            "task": self.task,
            "question": self.question,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
        }


def normalise(text: str) -> str:
    """Case, spacing, quotes and trailing full stops do not change an answer."""
    text = text.strip().strip("\"'`").rstrip(".").lower()
    return re.sub(r"\s+", "", text)


def program_failed(result: ExecResult) -> bool:
    """A failure of the code itself (not of the sandbox): non-zero exit, timeout, traceback."""
    if result.infra_error:
        return False
    if result.timed_out or result.oom_killed or result.signal:
        return True
    if result.exit_code not in (0, None):
        return True
    return bool(_TRACEBACK_RE.search(result.stderr) or _TRACEBACK_RE.search(result.stdout))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _same_shape(a: str, b: str) -> bool:
    """Both numbers or both not: a program printing `24` did not verify an expression."""
    numeric = re.compile(r"-?[\d,.]+")
    return bool(numeric.fullmatch(a)) == bool(numeric.fullmatch(b))


@dataclass
class _Round:
    number: int
    text: str = ""
    calls: list[ExpertCallStarted] = field(default_factory=list)
    replies: list[ExpertCallFinished] = field(default_factory=list)
    execs: list[SandboxExec] = field(default_factory=list)


def _group(events: Iterable[Event]) -> tuple[RunStarted | None, list[_Round], list[Event]]:
    """The run's start, its rounds in order, and every event (rounds hold references)."""
    started: RunStarted | None = None
    rounds: list[_Round] = []
    everything: list[Event] = []
    for event in events:
        everything.append(event)
        if isinstance(event, RunStarted):
            started = event
        elif isinstance(event, MetaTurnStarted):
            rounds.append(_Round(event.round or len(rounds) + 1))
        elif not rounds:
            continue
        elif isinstance(event, MetaTurnFinished):
            rounds[-1].text = event.text
        elif isinstance(event, ExpertCallStarted):
            rounds[-1].calls.append(event)
        elif isinstance(event, ExpertCallFinished):
            rounds[-1].replies.append(event)
        elif isinstance(event, SandboxExec):
            rounds[-1].execs.append(event)
    return started, rounds, everything


def audit_events(events: Iterable[Event]) -> AuditReport:
    """Every finding for one run."""
    started, rounds, everything = _group(events)
    report = AuditReport(
        run_id=started.run_id if started else (everything[0].run_id if everything else ""),
        task=started.task if started else "",
        question=started.question if started else "",
    )
    final = next((e for e in reversed(everything) if isinstance(e, FinalAnswer)), None)
    report.findings += _unconfirmed(final, rounds)
    report.findings += _hidden_context(rounds)
    report.findings += _ignored_errors(rounds)
    report.findings += _changed_after_verified(final, rounds)
    report.findings += _limits(everything, rounds)
    report.findings += _nudges(everything, rounds)
    report.findings += _fabricated(rounds)
    return report


def _unconfirmed(final: FinalAnswer | None, rounds: list[_Round]) -> list[Finding]:
    if final is None:
        return []
    answer = normalise(final.answer)
    if not answer:
        return []
    experts = {
        reply.parent_id or reply.id
        for r in rounds
        for reply in r.replies
        if not reply.error and answer in normalise(reply.text or reply.output)
    }
    programs = [
        x
        for r in rounds
        for x in r.execs
        if x.result.ok and not program_failed(x.result) and answer in normalise(x.result.stdout)
    ]
    if len(experts) >= 2 or programs:
        return []
    seen = "one expert" if experts else "no expert"
    return [
        Finding(
            "unconfirmed_answer",
            f"{seen} and no sandbox run showed the final answer {final.answer[:60]!r}",
            round=final.round or None,
            event_id=final.id,
        )
    ]


def _hidden_context(rounds: list[_Round]) -> list[Finding]:
    found = []
    for r in rounds:
        for call in r.calls:
            m = _HIDDEN_CONTEXT_RE.search(call.instruction)
            if m:
                found.append(
                    Finding(
                        "hidden_context",
                        f"{call.name} was told {m.group(0)!r}, which it has never seen",
                        round=r.number,
                        event_id=call.id,
                    )
                )
    return found


def _ignored_errors(rounds: list[_Round]) -> list[Finding]:
    found = []
    for i, r in enumerate(rounds):
        failed = [x for x in r.execs if program_failed(x.result)]
        if not failed or i + 1 >= len(rounds):
            continue
        after = rounds[i + 1]
        retried_python = any(c.is_python or c.name.lower() == "expert python" for c in after.calls)
        if _ACK_RE.search(after.text) or retried_python:
            continue
        what = "timed out" if failed[0].result.timed_out else "failed"
        found.append(
            Finding(
                "ignored_error",
                f"a program {what} in round {r.number}; round {after.number} went on without taking it up",
                round=after.number,
                event_id=failed[0].id,
            )
        )
    return found


def _changed_after_verified(final: FinalAnswer | None, rounds: list[_Round]) -> list[Finding]:
    if final is None:
        return []
    answer = normalise(final.answer)
    verified: list[tuple[str, int, str]] = []  # (candidate, round, how)
    # All meta turns, normalised, in one string: "repeated later" is one find from an offset.
    texts = [normalise(r.text) for r in rounds]
    starts, total = [], 0
    for text in texts:
        starts.append(total)
        total += len(text) + 1
    joined = "\0".join(texts)
    for i, r in enumerate(rounds):
        later = starts[i + 1] if i + 1 < len(rounds) else len(joined)
        for x in r.execs:
            line = _last_line(x.result.stdout)
            cand = normalise(line)
            clean = x.result.ok and not program_failed(x.result)
            if clean and cand not in _TRIVIAL_OUTPUTS and joined.find(cand, later) != -1:
                verified.append((line, r.number, "printed by code and repeated by the meta model"))
        aside = parse_turn(r.text).final_answer if r.calls else None
        if aside:
            cand = normalise(aside)
            replies = " ".join(normalise(x.text or x.output) for x in r.replies)
            if cand and cand in replies:
                verified.append((aside, r.number, "set aside for expert calls that confirmed it"))
    if not verified:
        return []
    candidate, number, how = verified[-1]
    cand = normalise(candidate)
    if not _same_shape(cand, answer) or cand in answer or answer in cand:
        return []
    return [
        Finding(
            "changed_after_verified",
            f"{candidate[:50]!r} ({how}, round {number}) became {final.answer[:50]!r}",
            round=final.round or None,
            event_id=final.id,
        )
    ]


def _limits(events: list[Event], rounds: list[_Round]) -> list[Finding]:
    found = [
        Finding("limit_hit", f"{e.limit} limit ({e.value:g} of {e.maximum:g})", event_id=e.id)
        for e in events
        if isinstance(e, LimitHit)
    ]
    for r in rounds:
        for x in r.execs:
            for hit in x.result.limits_hit:
                found.append(
                    Finding("limit_hit", f"sandbox {hit} limit", round=r.number, event_id=x.id)
                )
    return found


def _nudges(events: list[Event], rounds: list[_Round]) -> list[Finding]:
    found = []
    number = None
    for e in events:
        if isinstance(e, MetaTurnStarted):
            number = e.round
        if isinstance(e, Observation) and e.reason == "no_call_or_answer":
            found.append(
                Finding(
                    "nudged",
                    f"round {number} neither called an expert nor answered",
                    round=number,
                    event_id=e.id,
                )
            )
    return found


def _fabricated(rounds: list[_Round]) -> list[Finding]:
    return [
        Finding(
            "fabricated_reply",
            f"round {r.number} holds an expert's output written by the meta model",
            round=r.number,
        )
        for r in rounds
        if r.text and parse_turn(r.text).fabricated_outputs
    ]


def summarise(reports: Iterable[AuditReport]) -> dict[str, dict[str, int]]:
    """Per task: runs audited, runs flagged by each kind of finding."""
    table: dict[str, dict[str, int]] = {}
    for report in reports:
        row = table.setdefault(report.task or "(no task)", {"runs": 0})
        row["runs"] += 1
        for kind in report.counts():
            row[kind] = row.get(kind, 0) + 1
    return table
