"""The batch report: accuracy, tokens, rounds and failures by kind (report.json and
report.md), the notebook before and after, and a failure that would fail every item.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batch_support import (
    BATCH_FLAGS,
    OFFLINE,
    answer,
    batch_folder,
    item_number,
    numbered_tasks,
    results,
    run_cli,
    write_jsonl,
)

from conductor.batch.report import render_markdown
from equipment.wire_server import Answer, Fault, WireServer


def mixed(body: dict[str, Any]) -> Answer:
    """Item 1 right, 2 wrong, 3 never answers (round limit), 4 a rejected request."""
    n = item_number(body)
    if n == 4:
        return Fault(400)
    if n == 3:
        return "Let me think about it some more."
    return answer("2" if n in (1, 2) else str(2 * n))


def test_the_report_counts_accuracy_tokens_rounds_and_failures_by_kind(
    tmp_path: Path,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 5)  # items 0..4; item 0 answers "0"
    wire.responder = mixed
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--max-rounds", "2", "--json"]
    code, out, _ = run_cli(args, capsys)
    report = json.loads(out)
    assert code == 0  # every item finished, failures included
    assert report["failures"] == {
        "error": 1,
        "declined": 0,
        "limit": 1,
        "no_answer": 0,
        "interrupted": 0,
        "scorer": 0,
    }
    (example,) = report["failure_examples"]
    assert example["item_id"] == "i04" and "ModelError" in example["message"]
    assert "400" in example["message"]
    # Scored: 0, 1 and 2 answered, 3 hit the limit (wrong); 4's system error is not a grade.
    assert report["accuracy"] == {
        "correct": 2,
        "scored": 4,
        "percent": 50.0,
        "paper_rule_correct": 2,
        "paper_rule_percent": 50.0,
        "answers_scored": 3,
    }
    assert report["errors_by_cause"] == {"model": 1}
    assert report["diagnosis"] is None  # no one way of failing covers most items
    assert report["rounds"]["max"] == 2 and report["tokens"]["input"] > 0
    assert report["tokens"]["model_calls"] == 5  # 3 answers + 2 turns of item 3 (4 failed)
    folder = batch_folder(isolated_home)
    assert json.loads((folder / "report.json").read_text()) == report
    markdown = (folder / "report.md").read_text()
    assert "| accuracy | 50.0% (2 of 4 scored; 0 unscored) |" in markdown
    assert "| error | 1 |" in markdown and "| limit | 1 |" in markdown
    assert markdown == render_markdown(report)
    transcripts = list((folder / "runs").glob("*.jsonl"))
    assert len(transcripts) == 5  # one per item


@pytest.mark.slow
def test_the_report_shows_the_notebook_before_and_after_the_batch(
    tmp_path: Path,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 3)
    notebook = tmp_path / "nb.db"
    args = [str(tasks), *BATCH_FLAGS, "--no-python", "--notebook", str(notebook), "--json"]
    code, out, _ = run_cli(args, capsys)
    assert code == 0
    report = json.loads(out)
    state = report["notebook"]
    assert state["path"] == str(notebook) and state["learn"] is True
    assert state["before"]["runs_learned"] == 0 and state["before"]["notes"] == 0
    # Each item's run was distilled (its answer matched the target: an example note).
    assert state["after"]["runs_learned"] == 3
    assert state["after"]["by_kind"].get("example") == 3
    markdown = (batch_folder(isolated_home) / "report.md").read_text()
    assert "- before: 0 notes," in markdown and "3 runs learned" in markdown
    # Learning's own calls, beside the runs': each run had a check (its target), so it
    # learned with the model, and never with more calls than the run made itself.
    learning = report["learning"]
    runs_calls = report["tokens"]["model_calls"] - learning["model_calls"]
    assert 1 <= learning["model_calls"] <= runs_calls and learning["tokens"] > 0
    assert report["runs_cost_usd"] + learning["cost_usd"] == pytest.approx(report["cost_usd"])
    assert f"learning ${learning['cost_usd']:.4f} in {learning['model_calls']} model calls" in (
        markdown
    )


@pytest.mark.slow
def test_a_failure_that_would_fail_every_item_stops_the_batch(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 6)
    wire.api_key = "right"
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--concurrency", "1", "--json"]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "batch stopped" in err and "authentication" in " ".join(err.split())
    assert len(wire.requests) == 1  # no second item was tried
    monkeypatch.setenv("OPENAI_API_KEY", "right")
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["items"]["finished"] == 6


def test_items_are_named_by_their_line_and_first_words_where_people_read_them(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    """An item whose id is a hash is named by its line and first words; one the task
    file named keeps its name, with its line."""
    from conductor.cli.progress import item_line
    from conductor.export.html.batch_page import write_batch_html

    rows: list[dict[str, Any] | str] = [
        {"input": f"Double item {n}.", "target": str(2 * n)} for n in range(2)
    ]
    rows.append({"id": "my-item", "input": "Double item 2.", "target": "4"})
    tasks = write_jsonl(tmp_path / "t.jsonl", rows)
    code, _, _ = run_cli([str(tasks), *BATCH_FLAGS, *OFFLINE], capsys)
    assert code == 0
    records = sorted(results(batch_folder(isolated_home)), key=lambda r: r["line"])
    expected = ["line 1: Double item 0.", "line 2: Double item 1.", "line 3: my-item"]
    assert [r["label"] for r in records] == expected
    assert all(item_line(r).startswith(r["label"]) for r in records)  # progress lines
    page = write_batch_html(batch_folder(isolated_home)).read_text()
    assert all(label in page for label in expected)
