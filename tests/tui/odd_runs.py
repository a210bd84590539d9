"""Odd runs for the TUI's no-crash tests: what real use and damaged files leave behind.

Each generator writes transcripts under the test's CONDUCTOR_HOME and indexes them the
way the writer would, so every screen reads them through its normal path.
"""

from __future__ import annotations

import json
from pathlib import Path

from conductor_kernel.events import (
    Event,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    MetaTurnStarted,
    NotesWritten,
    Recall,
    RunFinished,
    RunStarted,
    UnknownEvent,
)
from record.home import home_dir, runs_dir
from transcripts.index import RunIndex


def _write(run_id: str, lines: list[str], index: RunIndex) -> Path:
    path = runs_dir() / f"{run_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    index.attach(run_id, path)
    for line in lines:
        try:
            index.handle(Event.from_dict(json.loads(line)))
        except Exception:  # a damaged line is what some of these runs are about
            break
    return path


def _line(event: Event) -> str:
    return json.dumps(event.to_dict())


def _run(run_id: str, *middle: Event, status: str = "answered") -> list[str]:
    events: list[Event] = [
        RunStarted(run_id=run_id, question=f"odd run {run_id}", model="scripted"),
        *middle,
        RunFinished(run_id=run_id, status=status, final_answer="x", rounds=1),
    ]
    for event in events:
        event.run_id = run_id
    return [_line(e) for e in events]


def write_odd_runs() -> list[str]:
    """Write the odd runs; returns their ids."""
    index = RunIndex()
    note = {"id": "n1", "key": "shared key", "kind": "insight", "score": 1.0, "rank": 1}
    turn = MetaTurnStarted(round=1, user_message="q")
    runs: dict[str, list[str]] = {
        # A note shown and also merged into (the crash), and ids repeated.
        "odd-shown-and-merged": _run(
            "odd-shown-and-merged",
            Recall(notes=[note, dict(note), {"id": "n2"}], rendered="notes"),
            NotesWritten(note_ids=["n1", "n1", "n2", "n3"], merged=1),
            NotesWritten(note_ids=["n3"]),
        ),
        # Notes whose ids or keys are missing, empty, odd or not even text.
        "odd-note-ids": _run(
            "odd-note-ids",
            Recall(notes=[{}, {"id": None}, {"id": ""}, {"id": "a:b c"}, {"key": 3}]),
            NotesWritten(note_ids=["", "a:b c", "x\ny", "[bold]"]),
        ),
        "odd-empty-run": _run("odd-empty-run", status="no_answer"),
        "odd-unknown-kinds": _run(
            "odd-unknown-kinds",
            UnknownEvent(raw={"kind": "from_the_future"}),
            turn,
            MetaTurnFinished(parent_id=turn.id, round=1, text="[red]markup?[/] \x1b[31m"),
            ExpertCallStarted(parent_id=turn.id, round=1, name="", instruction=""),
            FinalAnswer(round=1, answer=""),
        ),
        "odd-rounds-out-of-order": _run(
            "odd-rounds-out-of-order",
            MetaTurnStarted(round=3),
            MetaTurnStarted(round=1),
            MetaTurnStarted(round=3),
            FinalAnswer(round=7, answer="late"),
        ),
    }
    for run_id, lines in runs.items():
        _write(run_id, lines, index)
    # Only a start (a run killed hard), a cut-short last line, and an empty file.
    started = _run("odd-no-end")[:1]
    _write("odd-no-end", started, index)
    cut = _run("odd-truncated", turn)
    _write("odd-truncated", [*cut[:-1], cut[-1][: len(cut[-1]) // 2]], index)
    _write("odd-empty-file", [], index)
    # Fields of the wrong type, as a hand-edited or foreign file may have them.
    wrong = [
        json.dumps(
            {"v": 1, "kind": "run_started", "run_id": "odd-wrong-types", "question": 42, "tags": []}
        ),
        json.dumps({"v": 1, "kind": "recall", "run_id": "odd-wrong-types", "notes": "n1"}),
        json.dumps({"v": 1, "kind": "notes_written", "run_id": "odd-wrong-types", "note_ids": 5}),
        json.dumps(
            {"v": 1, "kind": "meta_turn_started", "run_id": "odd-wrong-types", "round": "x"}
        ),
        json.dumps({"v": 1, "kind": "run_finished", "run_id": "odd-wrong-types", "rounds": None}),
        "not json at all",
    ]
    _write("odd-wrong-types", wrong, index)
    # A transcript the index points to that was deleted since.
    gone = _write("odd-deleted", _run("odd-deleted"), index)
    gone.unlink()
    (home_dir() / "runs").mkdir(exist_ok=True)
    return [
        *runs,
        "odd-no-end",
        "odd-truncated",
        "odd-empty-file",
        "odd-wrong-types",
        "odd-deleted",
    ]
