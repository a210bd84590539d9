"""Importing published runs: one indexed, readable transcript per record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from published_builder import CODE, retry_defect_record, sorting_record, write_file

from conductor.cli import main
from conductor_kernel.events import (
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    Observation,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from record.published import read_published, recorded_result, run_id_for
from record.reader import read_transcript
from transcripts.importer import import_file
from transcripts.index import RunIndex


def imported(tmp_path: Path, *records: dict, tail: str = ""):
    source = write_file(tmp_path / "word_sorting.jsonl", *records, tail=tail)
    index = RunIndex(tmp_path / "runs.db")
    report = import_file(source, runs_path=tmp_path / "runs", index=index)
    return report, index


def test_a_record_becomes_a_complete_transcript(tmp_path: Path) -> None:
    report, _ = imported(tmp_path, sorting_record())
    assert report.run_ids == ["published-word_sorting-0001"]
    transcript = read_transcript(tmp_path / "runs" / "published-word_sorting-0001.jsonl")
    assert transcript.complete
    events = transcript.events
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.tags["source"] == "published" and started.tags["line"] == 1
    assert started.question == "pear apple" and started.target == "apple pear"
    calls = [e for e in events if isinstance(e, ExpertCallStarted)]
    assert [(c.round, c.index, c.name) for c in calls] == [
        (1, 0, "Expert Python"),
        (2, 0, "Expert Reviewer"),
        (2, 1, "Expert Linguist"),
    ]
    turns = {e.id: e for e in events if e.kind == "meta_turn_started"}
    assert all(c.parent_id in turns for c in calls)
    [run] = [e for e in events if isinstance(e, SandboxExec)]
    assert run.code.strip() == CODE.strip() and run.parent_id == calls[0].id
    assert run.result.stdout == "['apple', 'pear']" and run.result.backend == "recorded"
    replies = [e.text for e in events if isinstance(e, ExpertCallFinished)]
    assert replies[1:] == ["Yes.", "apple pear"]
    assert "Here is the output" not in replies[0]
    assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["apple pear"]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.rounds, finished.expert_calls, finished.sandbox_runs) == (
        "answered",
        3,
        3,
        1,
    )
    assert finished.meta_usage.input_tokens > 0
    assert sum(isinstance(e, MetaTurnFinished) for e in events) == 3


def test_imported_runs_are_indexed_and_searchable(tmp_path: Path) -> None:
    _, index = imported(tmp_path, sorting_record(), retry_defect_record())
    row = index.get("published-word_sorting-0001")
    assert row is not None
    assert (row["source"], row["status"], row["final_answer"]) == (
        "published",
        "answered",
        "apple pear",
    )
    assert [r["run_id"] for r in index.search("kiwi")] == ["published-word_sorting-0002"]


def test_the_retry_defect_is_an_observation_and_a_lost_reply(tmp_path: Path) -> None:
    report, _ = imported(tmp_path, retry_defect_record())
    assert report.retry_defect_records == 1
    events = read_transcript(tmp_path / "runs" / f"{report.run_ids[0]}.jsonl").events
    assert [e.reason for e in events if isinstance(e, Observation)] == ["retry_defect"]
    [finished_call] = [e for e in events if isinstance(e, ExpertCallFinished)]
    assert finished_call.error and "lost" in finished_call.error
    assert events[0].tags["retry_defect"] is True


def test_importing_again_replaces_the_runs(tmp_path: Path) -> None:
    imported(tmp_path, sorting_record())
    first = (tmp_path / "runs" / "published-word_sorting-0001.jsonl").read_text()
    report, index = imported(tmp_path, sorting_record())
    again = (tmp_path / "runs" / "published-word_sorting-0001.jsonl").read_text()
    assert len(again.splitlines()) == len(first.splitlines())
    assert len(index.list(limit=10)) == 1 and report.imported == 1


def test_a_bad_line_stops_the_import_there_and_is_reported(tmp_path: Path) -> None:
    report, _ = imported(tmp_path, sorting_record(), tail='{"input": "cut')
    assert report.imported == 1
    assert report.problem is not None and "word_sorting.jsonl:2" in report.problem


@pytest.mark.parametrize(
    ("output", "fields"),
    [
        ("24", {"stdout": "24", "exit_code": 0}),
        ("Error in execution: ZeroDivisionError: x", {"stderr": "ZeroDivisionError: x"}),
        ("Execution took too long, aborting...", {"timed_out": True}),
        ("(No output was generated.)", {"stdout": "", "exit_code": 0}),
    ],
)
def test_recorded_outputs_become_exec_results(output: str, fields: dict) -> None:
    result = recorded_result(output)
    assert {k: getattr(result, k) for k in fields} == fields


def test_runs_import_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_file(tmp_path / "GameOf24.jsonl", sorting_record(), retry_defect_record())
    assert main(["runs", "import", str(source), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["imported"] == 2 and data["retry_defect_records"] == 1
    assert main(["runs", "list", "--json"]) == 0
    listed = [json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()]
    assert sorted(listed) == ["published-GameOf24-0001", "published-GameOf24-0002"]


def test_published_runs_import_faithfully(shared_dir: Path, tmp_path: Path) -> None:
    path = shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"
    index = RunIndex(tmp_path / "runs.db")
    report = import_file(path, limit=25, runs_path=tmp_path / "runs", index=index)
    assert report.imported == 25 and report.problem is None
    for record in read_published(path, limit=25).records:
        transcript = read_transcript(tmp_path / "runs" / f"{run_id_for(record)}.jsonl")
        assert transcript.complete
        finished = transcript.finished
        assert finished is not None
        assert finished.final_answer == record.final_answer
        assert finished.expert_calls == len(record.calls)
        assert finished.rounds == record.rounds
        row = index.get(run_id_for(record))
        assert row is not None and row["final_answer"] == record.final_answer
