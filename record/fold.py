"""A run's events arranged as the reader sees it: rounds, the expert calls of each, the
sandbox runs of each call, plus the notes, findings, answer and totals.

The HTML page, the run diff and its views all read this one shape, so a transcript is
grouped the same way wherever it is shown. Pure: no I/O beyond `outline_file`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    NotesWritten,
    Observation,
    Recall,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import Usage
from record.audit import AuditReport, Finding, audit_events


@dataclass
class CallView:
    """One expert call: what it was asked, what it saw, what it said, what ran."""

    started: ExpertCallStarted | None = None
    finished: ExpertCallFinished | None = None
    execs: list[SandboxExec] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.started is not None:
            return self.started.name
        return self.finished.name if self.finished is not None else "Expert"

    @property
    def instruction(self) -> str:
        return self.started.instruction if self.started is not None else ""

    @property
    def reply(self) -> str:
        return self.finished.text if self.finished is not None else ""

    @property
    def output(self) -> str:
        return self.finished.output if self.finished is not None else ""

    @property
    def usage(self) -> Usage:
        return self.finished.usage if self.finished is not None else Usage()

    @property
    def is_python(self) -> bool:
        return bool(self.started and self.started.is_python) or bool(self.execs)


@dataclass
class RoundView:
    """One meta turn: the message it answered, its text, its calls, and what followed."""

    number: int
    started: MetaTurnStarted | None = None
    finished: MetaTurnFinished | None = None
    calls: list[CallView] = field(default_factory=list)
    # Observations, limits, errors and the final answer, in the order they came.
    events: list[Event] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def prompt(self) -> str:
        return self.started.user_message if self.started is not None else ""

    @property
    def text(self) -> str:
        return self.finished.text if self.finished is not None else ""

    @property
    def usage(self) -> Usage:
        """The meta turn's own usage plus its experts'."""
        total = self.finished.usage if self.finished is not None else Usage()
        for call in self.calls:
            total = total + call.usage
        return total


@dataclass
class RunOutline:
    run_id: str = ""
    started: RunStarted | None = None
    recalls: list[Recall] = field(default_factory=list)
    rounds: list[RoundView] = field(default_factory=list)
    final: FinalAnswer | None = None
    finished: RunFinished | None = None
    notes_written: list[NotesWritten] = field(default_factory=list)
    # Events outside any round (a limit or error before round 1, after the last).
    loose: list[Event] = field(default_factory=list)
    audit: AuditReport = field(default_factory=lambda: AuditReport(run_id=""))
    problem: str | None = None  # why reading the transcript stopped early, if it did

    @property
    def question(self) -> str:
        return self.started.question if self.started is not None else ""

    @property
    def calls(self) -> list[CallView]:
        return [c for r in self.rounds for c in r.calls]

    @property
    def usage(self) -> Usage:
        if self.finished is not None:
            return self.finished.usage
        total = Usage()
        for r in self.rounds:
            total = total + r.usage
        return total

    @property
    def score(self) -> dict | None:
        return self.finished.score if self.finished is not None else None

    @property
    def status(self) -> str:
        return self.finished.status if self.finished is not None else "unfinished"


def outline(events: list[Event], *, problem: str | None = None) -> RunOutline:
    """Group `events` by their parents; events whose parent is unknown go to the round
    they came in (a published record or an older writer may lack some starts)."""
    out = RunOutline(problem=problem)
    rounds: dict[str, RoundView] = {}  # meta turn id -> round
    calls: dict[str, CallView] = {}  # expert call id -> call
    current: RoundView | None = None

    def round_for(number: int = 0) -> RoundView:
        nonlocal current
        if current is None:
            current = RoundView(number or len(out.rounds) + 1)
            out.rounds.append(current)
        return current

    for event in events:
        if isinstance(event, RunStarted):
            out.started, out.run_id = event, event.run_id
        elif isinstance(event, Recall):
            out.recalls.append(event)
        elif isinstance(event, MetaTurnStarted):
            current = RoundView(event.round or len(out.rounds) + 1, started=event)
            out.rounds.append(current)
            rounds[event.id] = current
        elif isinstance(event, MetaTurnFinished):
            target = rounds.get(event.parent_id or "") or round_for(event.round)
            target.finished = event
        elif isinstance(event, ExpertCallStarted):
            call = CallView(started=event)
            calls[event.id] = call
            (rounds.get(event.parent_id or "") or round_for(event.round)).calls.append(call)
        elif isinstance(event, ExpertCallFinished):
            finished_call = calls.get(event.parent_id or "")
            if finished_call is None:
                finished_call = CallView()
                round_for().calls.append(finished_call)
            finished_call.finished = event
        elif isinstance(event, SandboxExec):
            owner = calls.get(event.parent_id or "")
            if owner is None:
                owner = CallView()
                round_for().calls.append(owner)
            owner.execs.append(event)
        elif isinstance(event, Observation) and event.parent_id in calls:
            calls[event.parent_id or ""].observations.append(event)
        elif isinstance(event, NotesWritten):
            out.notes_written.append(event)
        elif isinstance(event, RunFinished):
            out.finished = event
        elif isinstance(event, FinalAnswer):
            out.final = event
            (rounds.get(event.parent_id or "") or round_for(event.round)).events.append(event)
        elif isinstance(event, Observation | LimitHit | ErrorEvent):
            holder = rounds.get(event.parent_id or "") or current
            (holder.events if holder is not None else out.loose).append(event)
        if not out.run_id and event.run_id:
            out.run_id = event.run_id
    out.audit = audit_events(events)
    _place_findings(out, calls)
    return out


def _place_findings(out: RunOutline, calls: dict[str, CallView]) -> None:
    """Each finding goes beside the call or round it points at, else to its round number."""
    exec_ids = {x.id: c for c in out.calls for x in c.execs}
    by_number = {r.number: r for r in out.rounds}
    for finding in out.audit.findings:
        call = calls.get(finding.event_id or "") or exec_ids.get(finding.event_id or "")
        if call is not None:
            call.findings.append(finding)
        elif finding.round in by_number:
            by_number[finding.round].findings.append(finding)


def outline_file(path: Path | str) -> RunOutline:
    """A transcript file's outline; a bad line ends reading and is reported, not raised."""
    from record.reader import read_transcript

    transcript = read_transcript(path)
    problem = str(transcript.problem) if transcript.problem is not None else None
    return outline(transcript.events, problem=problem)
