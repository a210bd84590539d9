"""The one fold of a run's events: rounds, the expert calls of each, the sandbox runs of
each call, plus the recalls, notes written, answer and totals.

Every reader of a run reads this shape (the audit, the HTML page and the Markdown
export, the run diff, the TUI, the replay's comparison, the notebook), so a transcript
is grouped the same way wherever it is used. Pure grouping: no I/O beyond
`outline_file`, no judgement. The audit (record/audit.py) reads an outline and places
its findings on it (`audited`); until then `audit` is empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conductor_kernel.carrier.tools import answer_written
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
    RunScored,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import Usage
from record.correctness import Correctness
from record.findings import AuditReport, Finding


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

    @property
    def code_ok(self) -> bool:
        """Some program of this call ran cleanly."""
        return any(x.result.ok for x in self.execs)


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
    # Concurrent calls interleave: what their programs ran and when their replies came,
    # in the order it happened (each is also under its own call).
    execs: list[SandboxExec] = field(default_factory=list)
    replied: list[CallView] = field(default_factory=list)
    # The calls (where each started) and the events above, in the order they came: a
    # transcript read top to bottom, each call whole.
    timeline: list[CallView | Event] = field(default_factory=list)

    @property
    def prompt(self) -> str:
        return self.started.user_message if self.started is not None else ""

    @property
    def text(self) -> str:
        return self.finished.text if self.finished is not None else ""

    @property
    def shown_text(self) -> str:
        """The turn as a reader is shown it: its text and the tool calls it made."""
        return self.finished.shown_text if self.finished is not None else ""

    @property
    def answer_written(self) -> str | None:
        """The final answer the turn wrote, whether or not it was taken: in the text
        protocol, or as the first `final_answer` call it made."""
        if self.finished is None:
            return None
        return answer_written(self.finished.text, self.finished.tool_calls)

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
    scored: RunScored | None = None  # the last verdict on the answer, if it was scored
    # Events outside any round (a limit or error before round 1, after the last).
    loose: list[Event] = field(default_factory=list)
    audit: AuditReport = field(default_factory=lambda: AuditReport(run_id=""))
    problem: str | None = None  # why reading the transcript stopped early, if it did

    @property
    def question(self) -> str:
        return self.started.question if self.started is not None else ""

    @property
    def task(self) -> str:
        return self.started.task if self.started is not None else ""

    @property
    def target(self) -> str | None:
        return self.started.target if self.started is not None else None

    @property
    def answer(self) -> str | None:
        """The final answer the run ended with (its `RunFinished` says it last)."""
        if self.finished is not None and self.finished.final_answer is not None:
            return self.finished.final_answer
        return self.final.answer if self.final is not None else None

    @property
    def recall(self) -> Recall | None:
        """The notes the run was shown (the last recall, if it was asked more than once)."""
        return self.recalls[-1] if self.recalls else None

    @property
    def calls(self) -> list[CallView]:
        return [c for r in self.rounds for c in r.calls]

    @property
    def execs(self) -> list[SandboxExec]:
        """Every sandbox run, in the order they ran."""
        return [x for r in self.rounds for x in r.execs]

    @property
    def replied(self) -> list[CallView]:
        """Every call that got a reply, in the order the replies came."""
        return [c for r in self.rounds for c in r.replied]

    @property
    def usage(self) -> Usage:
        if self.finished is not None:
            return self.finished.usage
        total = Usage()
        for r in self.rounds:
            total = total + r.usage
        return total

    @property
    def correctness(self) -> Correctness:
        """Whether the answer is right: the run's `RunScored`, else a batch's score."""
        if self.scored is not None:
            return Correctness.of_event(self.scored)
        return Correctness.of_score(self.finished.score if self.finished is not None else None)

    @property
    def score(self) -> dict | None:
        """The verdict as a score dict (the HTML's shape); None if never scored."""
        if self.scored is not None:
            return self.correctness.to_dict()
        return self.finished.score if self.finished is not None else None

    @property
    def status(self) -> str:
        return self.finished.status if self.finished is not None else "unfinished"


def outline(events: list[Event], *, problem: str | None = None) -> RunOutline:
    """Group `events` by their parents; events whose parent is unknown go to the round
    they came in (a published record or an older writer may lack some starts; a stream
    with no meta turn starts at all gets a round per finished meta turn)."""
    out = RunOutline(problem=problem)
    rounds: dict[str, RoundView] = {}  # meta turn id -> round
    calls: dict[str, CallView] = {}  # expert call id -> call
    home: dict[int, RoundView] = {}  # id() of a call -> the round it is in
    current: RoundView | None = None

    def round_for(number: int = 0) -> RoundView:
        nonlocal current
        if current is None:
            current = RoundView(number or len(out.rounds) + 1)
            out.rounds.append(current)
        return current

    def place(call: CallView, where: RoundView) -> CallView:
        where.calls.append(call)
        where.timeline.append(call)
        home[id(call)] = where
        return call

    def note(event: Event, where: RoundView) -> None:
        where.events.append(event)
        where.timeline.append(event)

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
            target = rounds.get(event.parent_id or "")
            if target is None:
                if current is not None and current.started is None and current.finished:
                    current = None  # no starts at all: each finished turn is a round
                target = round_for(event.round)
            target.finished = event
        elif isinstance(event, ExpertCallStarted):
            where = rounds.get(event.parent_id or "") or round_for(event.round)
            calls[event.id] = place(CallView(started=event), where)
        elif isinstance(event, ExpertCallFinished):
            finished_call = calls.get(event.parent_id or "") or place(CallView(), round_for())
            finished_call.finished = event
            home[id(finished_call)].replied.append(finished_call)
        elif isinstance(event, SandboxExec):
            owner = calls.get(event.parent_id or "") or place(CallView(), round_for())
            owner.execs.append(event)
            home[id(owner)].execs.append(event)
        elif isinstance(event, Observation) and event.parent_id in calls:
            calls[event.parent_id or ""].observations.append(event)
        elif isinstance(event, NotesWritten):
            out.notes_written.append(event)
        elif isinstance(event, RunFinished):
            out.finished = event
        elif isinstance(event, RunScored):
            out.scored = event
        elif isinstance(event, FinalAnswer):
            out.final = event
            note(event, rounds.get(event.parent_id or "") or round_for(event.round))
        elif isinstance(event, Observation | LimitHit | ErrorEvent):
            holder = rounds.get(event.parent_id or "") or current
            if holder is not None:
                note(event, holder)
            else:
                out.loose.append(event)
        if not out.run_id and event.run_id:
            out.run_id = event.run_id
    return out


def outline_file(path: Path | str) -> RunOutline:
    """A transcript file's outline; a bad line ends reading and is reported, not raised."""
    from record.reader import read_transcript

    transcript = read_transcript(path)
    problem = str(transcript.problem) if transcript.problem is not None else None
    return outline(transcript.events, problem=problem)
