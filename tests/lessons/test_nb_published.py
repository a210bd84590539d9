"""Learning from the paper's published records (needs ../shared; skips without it)."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from conductor_kernel.events import FinalAnswer, SandboxExec
from lessons.published import example_events, read_records, record_events
from lessons.read.recall import recall
from lessons.storage.store import Notebook
from lessons.write.learn import learn_from_run
from lessons.write.verify import verify_run


def test_published_transcripts_read_as_runs(shared_dir: Path) -> None:
    path = shared_dir / "transcripts" / "with-python" / "word_sorting.jsonl"
    outcomes = [
        verify_run(record_events(r, f"ws-{i}", task="word_sorting")).outcome
        for i, r in enumerate(read_records(path))
    ]
    # The paper scores 249 of 250 with Python (README); so does the task's scorer.
    assert outcomes.count("correct") == 249
    # Without the task's name the target's form picks the scorer (words: exact).
    unnamed = verify_run(record_events(next(read_records(path)), "ws-x"))
    assert (unnamed.level, unnamed.outcome) == ("target", "correct")
    game = next(read_records(shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"))
    events = record_events(game, "g-0")
    assert any(isinstance(e, FinalAnswer) for e in events)
    runs = [e for e in events if isinstance(e, SandboxExec)]
    assert runs and all(r.code.strip() for r in runs)


def test_learned_published_runs_are_recalled_for_the_same_task(
    shared_dir: Path, tmp_path: Path
) -> None:
    book = Notebook(tmp_path / "notebook.db")
    transcripts = shared_dir / "transcripts" / "with-python"
    for name in ("word_sorting", "geometric_shapes", "multistep_arithmetic_two"):
        for i, record in enumerate(islice(read_records(transcripts / f"{name}.jsonl"), 12)):
            learn_from_run(book, record_events(record, f"{name}-{i}"))
    sonnets = shared_dir / "tasks" / "Sonnets-Standard.jsonl"
    for i, record in enumerate(islice(read_records(sonnets), 12)):
        learn_from_run(book, example_events(f"sonnet-{i}", record["input"], record["target"]))
    for name in ("word_sorting", "geometric_shapes", "multistep_arithmetic_two"):
        record = list(islice(read_records(transcripts / f"{name}.jsonl"), 100))[-1]
        shown = recall(book, record["input"]).shown
        assert shown and {s.note["source_run"].rsplit("-", 1)[0] for s in shown} == {name}
    sonnet = list(islice(read_records(sonnets), 40))[-1]
    assert {s.note["source_run"][:6] for s in recall(book, sonnet["input"]).shown} == {"sonnet"}
    # A task never seen: nothing clears the threshold.
    chess = next(read_records(shared_dir / "tasks" / "CheckmateInOne.jsonl"))
    assert recall(book, chess["input"]).shown == []
