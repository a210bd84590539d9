"""Audit findings: automatic checks over one run, the things an auditor looks for.

Pure functions over the run's fold (record/fold.py), ours or a published record imported
into events. Each check is a heuristic that flags a run for a human to look at; the
rules are spelled out in docs/tui.md so an auditor knows what a badge means and what it
cannot see. The values (kinds, `Finding`, `AuditReport`) are in record/findings.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    Observation,
)
from conductor_kernel.interfaces import ExecResult
from conductor_kernel.protocol import parse_turn
from record.findings import AUDIT_FORMAT_VERSION, FINDING_KINDS, AuditReport, Finding
from record.fold import RoundView, RunOutline

__all__ = [
    "AUDIT_FORMAT_VERSION",
    "FINDING_KINDS",
    "AuditReport",
    "Finding",
    "audit_outline",
    "audited",
    "normalise",
    "program_failed",
    "summarise",
]

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


def _turns(run: RunOutline) -> list[RoundView]:
    """The rounds the meta model took. A round the fold opened for calls recorded before
    any meta turn has no turn to judge, and is left out."""
    return [r for r in run.rounds if r.started is not None]


def _started(r: RoundView) -> list[ExpertCallStarted]:
    return [c.started for c in r.calls if c.started is not None]


def _replies(r: RoundView) -> list[ExpertCallFinished]:
    """The round's expert replies, in the order they came."""
    return [c.finished for c in r.replied if c.finished is not None]


def audit_outline(run: RunOutline) -> AuditReport:
    """Every finding for one run."""
    rounds = _turns(run)
    report = AuditReport(run_id=run.run_id, task=run.task, question=run.question)
    report.findings += _unconfirmed(run.final, rounds)
    report.findings += _hidden_context(rounds)
    report.findings += _ignored_errors(rounds)
    report.findings += _changed_after_verified(run.final, rounds)
    report.findings += _limits(run, rounds)
    report.findings += _nudges(run)
    report.findings += _fabricated(rounds)
    return report


def audited(run: RunOutline) -> RunOutline:
    """`run` with its audit and each finding placed beside the call or round it points
    at (else at its round number), as the pages and views show them."""
    run.audit = audit_outline(run)
    calls = {c.started.id: c for c in run.calls if c.started is not None}
    calls |= {x.id: c for c in run.calls for x in c.execs}
    by_number = {r.number: r for r in run.rounds}
    for r in run.rounds:
        r.findings.clear()
        for c in r.calls:
            c.findings.clear()
    for finding in run.audit.findings:
        call = calls.get(finding.event_id or "")
        if call is not None:
            call.findings.append(finding)
        elif finding.round in by_number:
            by_number[finding.round].findings.append(finding)
    return run


def _unconfirmed(final: FinalAnswer | None, rounds: list[RoundView]) -> list[Finding]:
    if final is None:
        return []
    answer = normalise(final.answer)
    if not answer:
        return []
    experts = {
        reply.parent_id or reply.id
        for r in rounds
        for reply in _replies(r)
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


def _hidden_context(rounds: list[RoundView]) -> list[Finding]:
    found = []
    for r in rounds:
        for call in _started(r):
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


def _ignored_errors(rounds: list[RoundView]) -> list[Finding]:
    found = []
    for i, r in enumerate(rounds):
        failed = [x for x in r.execs if program_failed(x.result)]
        if not failed or i + 1 >= len(rounds):
            continue
        after = rounds[i + 1]
        retried_python = any(
            c.is_python or c.name.lower() == "expert python" for c in _started(after)
        )
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


def _changed_after_verified(final: FinalAnswer | None, rounds: list[RoundView]) -> list[Finding]:
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
        aside = r.answer_written if _started(r) else None
        if aside:
            cand = normalise(aside)
            replies = " ".join(normalise(x.text or x.output) for x in _replies(r))
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


def _outside_calls(run: RunOutline) -> list[tuple[RoundView | None, Event]]:
    """Limits, errors, notes to the model and answers outside any call, in the order
    they came, each with its round (None before the first)."""
    out: list[tuple[RoundView | None, Event]] = [(None, e) for e in run.loose]
    out += [(r, e) for r in run.rounds for e in r.events]
    return out


def _limits(run: RunOutline, rounds: list[RoundView]) -> list[Finding]:
    found = [
        Finding("limit_hit", f"{e.limit} limit ({e.value:g} of {e.maximum:g})", event_id=e.id)
        for _r, e in _outside_calls(run)
        if isinstance(e, LimitHit)
    ]
    for r in rounds:
        for x in r.execs:
            for hit in x.result.limits_hit:
                found.append(
                    Finding("limit_hit", f"sandbox {hit} limit", round=r.number, event_id=x.id)
                )
    return found


def _nudges(run: RunOutline) -> list[Finding]:
    found = []
    for r, e in _outside_calls(run):
        # The round as the meta turn numbered it (a round without a turn has none).
        number = r.started.round if r is not None and r.started is not None else None
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


def _fabricated(rounds: list[RoundView]) -> list[Finding]:
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
