"""Text no UTF-8 encoder takes (lone surrogates, which a model's JSON can carry as
`\\ud800` escapes) still ends recorded: every event in the transcript, exact, and the
run in runs.db; and one transcript runs.db cannot index does not stop a rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.session import Session
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from record.reader import read_transcript
from transcripts.index import RunIndex

ODD = ["\ud800", "a\udfffb", "\udc80\ud83d", "ok \U0001f600 then \ud800 alone"]


@pytest.mark.parametrize("odd", ODD)
def test_a_lone_surrogate_from_a_model_is_recorded_exactly(tmp_path: Path, odd: str) -> None:
    reply = f"checked {odd}"
    turns = [f'Expert Checker:\n"""\nCheck {odd}.\n"""', f'>> FINAL ANSWER:\n"""\n4{odd}2\n"""']
    model = ScriptedModel(turns, lambda name, instruction: reply)
    index = RunIndex(tmp_path / "runs.db")
    session = Session(
        model, config=RunConfig(python=False), runs_path=tmp_path / "runs", index=index
    )
    events = [e for e in session.solve(f"q {odd}") if not e.transient]
    assert events[-1].kind in ("run_finished", "notes_written")
    (path,) = (tmp_path / "runs").glob("*.jsonl")
    transcript = read_transcript(path, strict=True)
    assert [e.kind for e in transcript.events] == [e.kind for e in events]
    assert transcript.started.question == f"q {odd}"
    assert transcript.finished.final_answer == f"4{odd}2"
    assert any(getattr(e, "output", None) == reply for e in transcript.events)
    row = index.get(transcript.started.run_id)
    assert row is not None and row["status"] == "answered"
    assert row["final_answer"].startswith("4") and row["final_answer"].endswith("2")


def test_a_transcript_that_cannot_be_indexed_does_not_stop_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs = tmp_path / "runs"
    for _ in range(2):
        model = ScriptedModel(['>> FINAL ANSWER:\n"""\n42\n"""'], lambda n, i: "")
        list(Session(model, config=RunConfig(python=False), runs_path=runs).solve("q"))
    first, second = sorted(runs.glob("*.jsonl"))
    # A count no SQLite integer holds: the reader takes it, SQLite cannot store it.
    text = first.read_text().replace('"rounds": 1', '"rounds": ' + "9" * 30)
    assert text != first.read_text()
    first.write_text(text)
    done = RunIndex.reindex(tmp_path / "runs.db", runs)
    index = done.index
    assert done.count == 1 and index is not None
    assert [path for path, _ in done.skipped] == [first]
    assert index.get(second.stem) is not None
    assert first.name in caplog.text
