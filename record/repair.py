"""Runs whose process died: telling that a process is gone, and ending its transcript.

A run killed with `kill -9` (or by a power cut) leaves `running` in runs.db and a
transcript with no `run_finished`. The next process that starts runs finds it (its pid,
with that pid's start time so a reused pid is not mistaken for it, is in runs.db),
appends an `error` and a `run_finished` (status `interrupted`, usage summed from the
events the run recorded) to its transcript, and records the end in runs.db.
"""

from __future__ import annotations

import os
from pathlib import Path

from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    FinalAnswer,
    MetaTurnFinished,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import Usage
from record.reader import read_transcript
from record.writer import TranscriptBusy, TranscriptWriter


def finish_transcript(path: Path, run_id: str) -> RunFinished | None:
    """Append the `run_finished` a dead process never wrote; None if it has one."""
    if not path.exists():
        return None
    transcript = read_transcript(path)
    if transcript.finished is not None:
        return transcript.finished
    started = transcript.started
    finished = summarise(transcript.events, run_id, status="interrupted")
    if started is not None:
        finished.duration_s = max(
            0.0, (transcript.events[-1].ts if transcript.events else started.ts) - started.ts
        )
    with TranscriptWriter(path) as writer:
        writer.handle(
            ErrorEvent(
                run_id=run_id,
                where="repair",
                message="The process running this run ended without finishing it (killed?); "
                "it was marked interrupted when conductor next started.",
            )
        )
        writer.handle(finished)
    return finished


def summarise(events: list[Event], run_id: str, *, status: str) -> RunFinished:
    """A `RunFinished` from the events a run recorded, for a run that could not say it."""
    usage, meta = Usage(), Usage()
    rounds = expert_calls = sandbox_runs = 0
    answer = None
    for event in events:
        if isinstance(event, MetaTurnFinished):
            rounds = max(rounds, event.round)
            usage += event.usage
            meta += event.usage
        elif isinstance(event, ExpertCallFinished):
            expert_calls += 1
            usage += event.usage
        elif isinstance(event, SandboxExec):
            sandbox_runs += 1
        elif isinstance(event, FinalAnswer):
            answer = event.answer
    return RunFinished(
        run_id=run_id,
        status=status,
        final_answer=answer,
        rounds=rounds,
        usage=usage,
        meta_usage=meta,
        expert_calls=expert_calls,
        sandbox_runs=sandbox_runs,
    )


DISK_FULL = (
    "disk full: the transcript was cut while being written (the disk had no room), and "
    "runs.db never heard of the run; it was marked ended when conductor next started."
)
ENDED_UNSEEN = (
    "The process running this run ended without finishing it, and runs.db never heard "
    "of the run; it was marked interrupted when conductor next started."
)


def end_unrecorded(path: Path) -> RunFinished | None:
    """End a transcript runs.db never recorded (its writes failed too) whose writer is
    gone; None while a live process still writes it. A file that is empty or ends
    mid-line was cut by a full disk (whole lines are written at once, so a killed
    process leaves none cut): it ends as `error` with the reason; one with whole lines
    as `interrupted`, like any dead run. A run whose start was lost gets one from the
    file name, so that the run can be indexed and seen."""
    cut = path.stat().st_size == 0 or not _ends_whole(path)  # before the writer mends it
    try:
        writer = TranscriptWriter(path, only_if_free=True)
    except TranscriptBusy:
        return None
    with writer:
        transcript = read_transcript(path)
        if transcript.finished is not None:
            return transcript.finished
        cut = cut or transcript.problem is not None
        started = transcript.started
        run_id = started.run_id if started is not None else path.stem
        events = transcript.events
        if started is None:
            lost = RunStarted(run_id=run_id, question="", tags={"start_lost": True})
            writer.handle(lost)
            events = [lost, *events]
        finished = summarise(events, run_id, status="error" if cut else "interrupted")
        writer.handle(
            ErrorEvent(run_id=run_id, where="repair", message=DISK_FULL if cut else ENDED_UNSEEN)
        )
        writer.handle(finished)
    return finished


def _ends_whole(path: Path) -> bool:
    if path.stat().st_size == 0:
        return True
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
