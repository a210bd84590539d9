"""Learning from the paper's published records (needs ../shared; skips without it), read
through the one reader and conversion of published records (record/published/)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nb_support import verify_events

from conductor.scoring.notebook import open_notebook
from conductor.tasks.files import read_task_file
from conductor_kernel.events import FinalAnswer, SandboxExec
from lessons.read.recall import recall
from lessons.write.learn import learn_from_run
from record.published import example_events, published_events, read_published


def test_published_transcripts_read_as_runs(shared_dir: Path) -> None:
    path = shared_dir / "transcripts" / "with-python" / "word_sorting.jsonl"
    records = read_published(path).records
    outcomes = [verify_events(published_events(r)).outcome for r in records]
    # The paper scores 249 of 250 with Python (README); so does the task's scorer.
    assert outcomes.count("correct") == 249
    # Without the task's name the target's form picks the scorer (words: exact).
    unnamed = verify_events(published_events(replace(records[0], task="")))
    assert (unnamed.level, unnamed.outcome) == ("target", "correct")
    game = read_published(shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl", limit=1)
    events = published_events(game.records[0])
    assert any(isinstance(e, FinalAnswer) for e in events)
    runs = [e for e in events if isinstance(e, SandboxExec)]
    assert runs and all(r.code.strip() for r in runs)


def test_learned_published_runs_are_recalled_for_the_same_task(
    shared_dir: Path, tmp_path: Path
) -> None:
    book = open_notebook(tmp_path / "notebook.db")
    transcripts = shared_dir / "transcripts" / "with-python"
    names = ("word_sorting", "geometric_shapes", "multistep_arithmetic_two")
    for name in names:
        for i, record in enumerate(read_published(transcripts / f"{name}.jsonl", limit=12).records):
            # Learned without the task's name: recall must find the kind by itself.
            learn_from_run(book, published_events(replace(record, task=""), run_id=f"{name}-{i}"))
    sonnets = read_task_file(shared_dir / "tasks" / "Sonnets-Standard.jsonl").items
    for i, item in enumerate(sonnets[:12]):
        learn_from_run(book, example_events(f"sonnet-{i}", item.input, item.target or ""))
    for name in names:
        record = read_published(transcripts / f"{name}.jsonl", limit=100).records[-1]
        shown = recall(book, record.question).shown
        assert shown and {s.note["source_run"].rsplit("-", 1)[0] for s in shown} == {name}
    assert {s.note["source_run"][:6] for s in recall(book, sonnets[39].input).shown} == {"sonnet"}
    # A task never seen: nothing clears the threshold.
    chess = read_task_file(shared_dir / "tasks" / "CheckmateInOne.jsonl").items[0]
    assert recall(book, chess.input).shown == []
