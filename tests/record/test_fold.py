"""The fold of a run's events (record/fold.py), on generated runs whose concurrent expert
calls interleave as the loop's threads make them: nothing is lost or placed twice, each
call stays whole, and what ran and replied keeps the order it happened in."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor_kernel.events import (
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
from conductor_kernel.interfaces import ExecResult
from record.fold import CallView, RunOutline, outline

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def runs(draw: st.DrawFn) -> list[Event]:
    """A run as the loop records it: rounds, calls started together then finishing in
    any order, programs, notes to the model, limits, an answer, learning after the end."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    events: list[Event] = [RunStarted(run_id="r", question="q")]
    if rng.random() < 0.5:
        events.append(Recall(run_id="r", notes=[{"id": "n1"}]))
    rounds = draw(st.integers(0, 5))
    turn = None
    for number in range(1, rounds + 1):
        turn = MetaTurnStarted(run_id="r", round=number)
        events += [turn, MetaTurnFinished(run_id="r", parent_id=turn.id, round=number)]
        calls = [
            ExpertCallStarted(run_id="r", parent_id=turn.id, round=number, index=i, name=f"E{i}")
            for i in range(rng.randint(0, 4))
        ]
        events += calls
        pending = [
            [
                *[
                    SandboxExec(run_id="r", parent_id=c.id, result=ExecResult(exit_code=0))
                    for _ in range(rng.randint(0, 2))
                ],
                *([Observation(run_id="r", parent_id=c.id, reason="no_code")] * (i % 2)),
                ExpertCallFinished(run_id="r", parent_id=c.id, name=c.name),
            ]
            for i, c in enumerate(calls)
        ]
        while any(pending):  # the threads' events interleave
            events.append(rng.choice([p for p in pending if p]).pop(0))
        if rng.random() < 0.3:
            events.append(Observation(run_id="r", parent_id=turn.id, reason="no_call_or_answer"))
        if rng.random() < 0.2:
            events.append(LimitHit(run_id="r", limit="tokens", value=1, maximum=1))
    if turn is not None and rng.random() < 0.6:
        events.append(FinalAnswer(run_id="r", parent_id=turn.id, answer="42"))
    events.append(RunFinished(run_id="r", status="answered"))
    if rng.random() < 0.5:
        events.append(NotesWritten(run_id="r"))
    return events


def placed(run: RunOutline) -> list[Event]:
    """Every event the outline holds, each where the fold put it."""
    out: list[Event] = [e for e in (run.started, run.finished) if e is not None]
    out += [*run.recalls, *run.notes_written, *run.loose]
    for r in run.rounds:
        out += [e for e in (r.started, r.finished) if e is not None] + r.events
        for c in r.calls:
            out += [e for e in (c.started, c.finished) if e is not None]
            out += [*c.execs, *c.observations]
    return out


@PROPERTY
@given(runs())
def test_every_event_is_placed_once(events: list[Event]) -> None:
    run = outline(events)
    assert sorted(e.id for e in placed(run)) == sorted(e.id for e in events)


@PROPERTY
@given(runs())
def test_each_call_is_whole_and_in_its_round(events: list[Event]) -> None:
    run = outline(events)
    for r in run.rounds:
        assert r.started is not None
        for call in r.calls:
            assert call.started is not None and call.started.parent_id == r.started.id
            inside = [*call.execs, *call.observations, call.finished]
            assert all(e is not None and e.parent_id == call.started.id for e in inside)
        # The timeline holds each call once, where it started, and the round's other
        # events, in the order they came.
        assert [x for x in r.timeline if isinstance(x, CallView)] == r.calls
        assert [x for x in r.timeline if not isinstance(x, CallView)] == r.events


@PROPERTY
@given(runs())
def test_what_ran_and_replied_keeps_the_order_it_happened_in(events: list[Event]) -> None:
    run = outline(events)
    assert run.execs == [e for e in events if isinstance(e, SandboxExec)]
    replies = [c.finished for c in run.replied]
    assert replies == [e for e in events if isinstance(e, ExpertCallFinished)]
    assert run.answer == next((e.answer for e in events if isinstance(e, FinalAnswer)), None)


@given(st.lists(st.text(max_size=5), min_size=1, max_size=6))
def test_a_stream_without_turn_starts_gets_a_round_per_finished_turn(texts: list[str]) -> None:
    """An older writer's or a hand-made stream: no starts, no parents."""
    events: list[Event] = [RunStarted(run_id="r", question="q")]
    for number, text in enumerate(texts, start=1):
        events.append(MetaTurnFinished(run_id="r", round=number, text=text))
        events.append(ExpertCallStarted(run_id="r", round=number, name=f"E{number}"))
    run = outline(events)
    assert [r.text for r in run.rounds] == texts
    assert [[c.name for c in r.calls] for r in run.rounds] == [
        [f"E{n}"] for n in range(1, len(texts) + 1)
    ]
