"""Transcripts: written as the run goes, readable after kill -9, indexed and searchable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conductor.export.markdown import to_markdown
from conductor.session import Session
from conductor_kernel.errors import TranscriptError
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    MetaTurnFinished,
    RunFinished,
    RunScored,
    RunStarted,
)
from experts.scripted import ScriptedModel
from record.fold import outline
from record.reader import iter_events, read_transcript
from transcripts.index import RunIndex

ANSWER = '>> FINAL ANSWER:\n"""\nParis\n"""'
CALL = 'Expert Geographer:\n"""\nName the capital of France.\n"""'


def solve(
    tmp_path: Path, question: str = "Capital of France?"
) -> tuple[list[Event], Path, RunIndex]:
    index = RunIndex(tmp_path / "runs.db")
    session = Session(
        ScriptedModel([CALL, ANSWER], lambda n, i: "Paris."),
        index=index,
        runs_path=tmp_path / "runs",
    )
    events = list(session.solve(question, task="geo", target="Paris"))
    return events, tmp_path / "runs" / f"{events[0].run_id}.jsonl", index


def test_transcript_round_trips_every_persistent_event(tmp_path: Path) -> None:
    events, path, _ = solve(tmp_path)
    lines = path.read_text().splitlines()
    assert all(json.loads(line)["v"] == 1 for line in lines)
    persisted = [e for e in events if not e.transient]
    read = read_transcript(path)
    assert read.complete and read.problem is None
    assert [e.to_dict() for e in read.events] == [e.to_dict() for e in persisted]
    assert isinstance(read.events[0], RunStarted) and isinstance(read.events[-2], RunFinished)
    # A run with a target is scored when it ends: its verdict follows its end.
    assert isinstance(read.events[-1], RunScored) and read.events[-1].correct is not None


def test_truncated_line_is_reported_with_its_number(tmp_path: Path) -> None:
    _, path, _ = solve(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    read = read_transcript(broken)
    assert len(read.events) == 3
    assert read.problem is not None and read.problem.line == 4
    assert "cut short" in str(read.problem) and "broken.jsonl:4" in str(read.problem)
    with pytest.raises(TranscriptError):
        list(iter_events(broken))


def test_non_json_and_non_event_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "run_started", "run_id": "r1"}\nnot json\n')
    read = read_transcript(path)
    assert read.problem is not None and read.problem.line == 2
    path.write_text('{"kind": "run_started"}\n[1, 2]\n')
    assert "not an event" in str(read_transcript(path).problem)


KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    from conductor.session import Session
    from experts.scripted import ScriptedModel

    def meta(messages):
        if len(messages) >= 5:
            time.sleep(60)  # hangs here until killed
        return 'Expert Geographer:\\n\\"\\"\\"\\nName a capital.\\n\\"\\"\\"'

    session = Session(ScriptedModel(meta, lambda n, i: "Paris."), runs_path=__import__("pathlib").Path(sys.argv[1]))
    for event in session.solve("Capital of France?"):
        print(event.kind, flush=True)
    """
)


def test_kill_9_mid_run_keeps_every_finished_event(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(KILLED_RUN)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    seen = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        seen.append(line)
        if seen.count("meta_turn_started") == 3:
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [path] = list((tmp_path / "runs").glob("*.jsonl"))
    read = read_transcript(path)
    assert read.problem is None and not read.complete
    kinds = [e.kind for e in read.events]
    assert kinds.count("meta_turn_finished") == 2 and kinds.count("expert_call_finished") == 2
    assert kinds[-1] == "meta_turn_started"


def test_index_records_and_searches_runs(tmp_path: Path) -> None:
    events, path, index = solve(tmp_path, "Which city is the capital of France?")
    run_id = events[0].run_id
    row = index.get(run_id[:12])
    assert row is not None and row["status"] == "answered" and row["final_answer"] == "Paris"
    assert row["path"] == str(path) and row["task"] == "geo"
    assert [r["run_id"] for r in index.search("capital")] == [run_id]
    assert index.search("Berlin") == []
    # The index can be rebuilt from the files alone.
    fresh = RunIndex(tmp_path / "rebuilt.db")
    assert fresh.rebuild(tmp_path / "runs") == 1
    assert fresh.get(run_id)["final_answer"] == "Paris"


def test_markdown_export_holds_the_whole_run(tmp_path: Path) -> None:
    events, _, _ = solve(tmp_path)
    md = to_markdown(outline(events))
    assert md.startswith("# Run ")
    assert "Name the capital of France." in md and "## Final answer" in md and "Paris" in md
    assert md.count("## Round") == 2
    assert [type(e) for e in events].count(MetaTurnFinished) == 2
    assert [type(e) for e in events].count(ExpertCallFinished) == 1
