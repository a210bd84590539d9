"""Real runs for the export and diff tests: published records, replays of them (one
with an expert's reply changed), and a scripted run whose Expert Python code really
runs in a sandbox."""

from __future__ import annotations

import copy
from pathlib import Path

from conductor.replay.runner import question_of, replay_config
from conductor_kernel.events import Event
from conductor_kernel.run.loop import Conductor
from experts.replay import ReplayModel
from experts.scripted import ScriptedModel
from record.published import PublishedRecord, published_events, read_published
from record.writer import TranscriptWriter
from sandbox.subprocess_backend import SubprocessSandbox

GAME24_TURNS = (
    'I will ask for a program.\n\nExpert Python:\n"""\n'
    "Print an expression over 4 5 6 10 that equals 24, checked with eval.\n"
    '"""',
    'Expert Arithmetic Checker:\n"""\nCheck that (4 + 5 * 6) - 10 equals 24.\n"""',
    'Both agree.\n\n>> FINAL ANSWER:\n"""\n(4 + 5 * 6) - 10\n"""',
)


def game24_expert(name: str, instruction: str) -> str:
    if name == "Expert Python":
        return (
            "```python\nexpr = '(4 + 5 * 6) - 10'\nassert eval(expr) == 24\nprint(expr)\n```\n"
            "Please run this code!"
        )
    return "5*6 = 30, 4 + 30 = 34, 34 - 10 = 24: (4 + 5 * 6) - 10 is right."


def write(path: Path, events: list[Event]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with TranscriptWriter(path) as writer:
        for event in events:
            writer.handle(event)
    return path


def published_record(shared: Path, name: str, line: int = 1) -> PublishedRecord:
    published = read_published(shared / "transcripts" / name, limit=line)
    return published.records[line - 1]


def published_run(shared: Path, name: str, line: int = 1) -> list[Event]:
    return published_events(published_record(shared, name, line), source_file=name)


def replay(record: PublishedRecord) -> list[Event]:
    """The record through our real loop, both models answering from it (no sandbox)."""
    model = ReplayModel(record)
    conductor = Conductor(model, model, None, replay_config(record.notice_round))
    events = conductor.run(question_of(record), task=record.task, target=record.target)
    return [e for e in events if not e.transient]


def with_reply_changed(record: PublishedRecord, call_index: int, new_reply: str):
    """A copy of `record` in which one expert call's reply is `new_reply`."""
    changed = copy.deepcopy(record)
    calls = [c for c in changed.calls if c.reply is not None]
    old = calls[call_index].reply
    calls[call_index].reply = new_reply
    return changed, calls[call_index], old


def python_run() -> list[Event]:
    """A scripted Game of 24 run whose Expert Python code runs in a real subprocess sandbox."""
    model = ScriptedModel(GAME24_TURNS, game24_expert)
    sandbox = SubprocessSandbox()
    try:
        events = Conductor(model, model, sandbox).run(
            "Use 4 5 6 10 to make 24", task="GameOf24", target="24"
        )
        return [e for e in events if not e.transient]
    finally:
        sandbox.close()
