"""The run diff: alignment, what counts as a change, and the published-replay case."""

from __future__ import annotations

import io
from pathlib import Path

from export_runs import published_record, python_run, replay, with_reply_changed, write
from rich.console import Console

from conductor.cli import main
from conductor.export.diff import diff_renderables
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    MetaTurnFinished,
    MetaTurnStarted,
    RunStarted,
)
from record.fold import outline
from transcripts.run_diff import diff_runs, inline_diff


def scripted(rounds: list[list[tuple[str, str, str]]]) -> list[Event]:
    """A run from (expert, instruction, reply) calls per round."""
    events: list[Event] = [RunStarted(run_id="r", question="q")]
    for n, calls in enumerate(rounds, start=1):
        turn = MetaTurnStarted(round=n)
        text = "I ask " + ", ".join(name for name, _, _ in calls)
        events += [turn, MetaTurnFinished(parent_id=turn.id, round=n, text=text)]
        for name, instruction, reply in calls:
            call = ExpertCallStarted(parent_id=turn.id, round=n, name=name, instruction=instruction)
            events += [call, ExpertCallFinished(parent_id=call.id, name=name, text=reply)]
    return events


def test_inline_diff_keeps_the_common_words() -> None:
    ops = inline_diff("the cat sat on the mat", "the dog sat on the mat")
    assert ops == [("=", "the "), ("-", "cat"), ("+", "dog"), ("=", " sat on the mat")]
    assert "".join(t for op, t in ops if op != "+") == "the cat sat on the mat"
    assert "".join(t for op, t in ops if op != "-") == "the dog sat on the mat"


def test_identical_runs_have_no_change() -> None:
    run = scripted([[("Expert A", "do x", "x done")], [("Expert B", "check", "ok")]])
    diff = diff_runs(
        outline(run),
        outline(scripted([[("Expert A", "do x", "x done")], [("Expert B", "check", "ok")]])),
    )
    assert diff.identical and [p.status for p in diff.rounds] == ["same", "same"]


def test_an_extra_round_is_one_sided_and_later_rounds_stay_aligned() -> None:
    left = scripted([[("Expert A", "a", "1")], [("Expert C", "c", "3")]])
    right = scripted([[("Expert A", "a", "1")], [("Expert B", "b", "2")], [("Expert C", "c", "3")]])
    diff = diff_runs(outline(left), outline(right))
    assert [p.status for p in diff.rounds] == ["same", "only_right", "same"]
    assert diff.rounds[2].label == "2 / 3"


def test_a_different_reply_is_the_one_change_and_names_its_field() -> None:
    left = scripted([[("Expert A", "a", "one"), ("Expert B", "b", "two")]])
    right = scripted([[("Expert A", "a", "one"), ("Expert B", "b", "TWO")]])
    diff = diff_runs(outline(left), outline(right))
    (change,) = diff.changes
    _, call, field = change
    assert call is not None and call.name == "Expert B" and field is not None
    assert (field.name, field.left, field.right) == ("reply", "two", "TWO")


def test_code_and_output_differences_are_fields_of_the_call() -> None:
    left, right = python_run(), python_run()
    for event in right:
        if event.kind == "sandbox_exec":
            event.result.stdout = "(4 + 5 * 6) - 10 = 24\n"
    diff = diff_runs(outline(left), outline(right))
    assert [(c.name, f.name) for _, c, f in diff.changes] == [("Expert Python", "stdout")]


def test_replays_of_a_published_record_differ_exactly_where_one_reply_changed(
    shared_dir: Path,
) -> None:
    record = published_record(shared_dir, "without-python/geometric_shapes.jsonl", 1)
    changed, call, old = with_reply_changed(record, 0, "A different reply.\n(B) heptagon")
    diff = diff_runs(outline(replay(record)), outline(replay(changed)))
    assert len(diff.changes) == 1
    _, pair_call, field = diff.changes[0]
    assert pair_call is not None and field is not None
    assert pair_call.name == call.expert and field.name == "reply"
    assert (field.left, field.right) == (old, "A different reply.\n(B) heptagon")
    # Everything else lines up as the same, round by round.
    assert sum(p.status == "changed" for p in diff.rounds) == 1
    assert all(p.status in ("same", "changed") for p in diff.rounds)


def test_terminal_diff_names_the_change(shared_dir: Path, tmp_path: Path, capsys) -> None:
    record = published_record(shared_dir, "without-python/geometric_shapes.jsonl", 1)
    changed, call, _ = with_reply_changed(record, 0, "A CHANGED reply")
    left = write(tmp_path / "a.jsonl", replay(record))
    right = write(tmp_path / "b.jsonl", replay(changed))
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    for part in diff_renderables(diff_runs(outline(replay(record)), outline(replay(changed)))):
        console.print(part)
    text = buffer.getvalue()
    assert "1 difference in" in text and f"{call.expert}: reply differs" in text
    assert "CHANGED" in text
    # The CLI prints the same, and writes the HTML page on request.
    assert main(["runs", "diff", str(left), str(right)]) == 0
    assert "1 difference in" in capsys.readouterr().out
    page = tmp_path / "d.html"
    assert main(["runs", "diff", str(left), str(right), "-o", str(page)]) == 0
    assert "A CHANGED reply" in page.read_text()
