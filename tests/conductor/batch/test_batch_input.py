"""`conductor batch` on bad input: malformed task lines (stop, or skip with a warning),
items without a target (run unscored), an unknown task or scorer (the known ones listed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_support import (
    BATCH_FLAGS,
    OFFLINE,
    batch_folder,
    numbered_tasks,
    results,
    run_cli,
    write_jsonl,
)

from equipment.wire_server import WireServer


def test_malformed_lines_stop_the_batch_with_their_line_number(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [{"input": "Double item 1.", "target": "2"}, "{not json", {"target": "4"}],
    )
    code, _, err = run_cli([str(tasks), *BATCH_FLAGS, *OFFLINE], capsys)
    assert code == 2
    assert f"{tasks}:2: not valid JSON" in " ".join(err.split())
    assert "skip" in err and not wire.requests  # nothing ran


def test_malformed_lines_can_be_skipped_with_a_warning_naming_each_line(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [{"input": "Double item 1.", "target": "2"}, "{not json", {"target": "4"}],
    )
    flags = [*BATCH_FLAGS, *OFFLINE, "--on-error", "skip", "--json"]
    code, out, err = run_cli([str(tasks), *flags], capsys)
    assert code == 0
    assert f"{tasks}:2: not valid JSON" in err and f"{tasks}:3: no `input` field" in err
    assert json.loads(out)["items"]["finished"] == 1


def test_items_without_a_target_run_unscored(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"id": "a", "input": "Double item 1.", "target": "2"},
            {"id": "b", "input": "Double item 2."},
            {"id": "c", "input": "Double item 3.", "target": "7"},
        ],
    )
    code, out, _ = run_cli([str(tasks), *BATCH_FLAGS, *OFFLINE, "--json"], capsys)
    report = json.loads(out)
    assert code == 0
    assert report["items"] == {
        "total": 3,
        "finished": 3,
        "remaining": 0,
        "scored": 2,
        "unscored": 1,
    }
    assert report["accuracy"]["correct"] == 1 and report["accuracy"]["percent"] == 50.0
    by_id = {r["item_id"]: r for r in results(batch_folder(isolated_home))}
    assert by_id["b"]["answer"] == "4" and by_id["b"]["score"]["scored"] is False
    assert by_id["c"]["score"]["correct"] is False


def test_an_unknown_task_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 1)
    code, _, err = run_cli([str(tasks), "--task", "GameOf25", "--model", "demo"], capsys)
    flat = " ".join(err.split())
    assert code == 2 and "unknown task 'GameOf25'" in flat
    assert "GameOf24" in flat and "word_sorting" in flat


def test_an_unknown_scorer_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 1)
    args = [str(tasks), "--scorer", "fuzzy", "--description", "x", "--model", "demo"]
    code, _, err = run_cli(args, capsys)
    flat = " ".join(err.split())
    assert code == 2 and "unknown scorer 'fuzzy'" in flat
    assert "game24" in flat and "numeric" in flat


@pytest.mark.parametrize("holds", [[], ["GameOf24.jsonl", "word_sorting.jsonl"]])
def test_a_folder_given_as_the_task_file_is_named_as_a_folder(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], holds: list[str]
) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in holds:
        numbered_tasks(folder / name, 1)
    code, _, err = run_cli([str(folder), *BATCH_FLAGS, *OFFLINE], capsys)
    said = " ".join(err.split())
    assert code == 2 and f"{folder} is a folder, not a task file" in said
    assert "Traceback" not in err and not wire.requests
    if holds:
        assert "GameOf24.jsonl" in said and "word_sorting.jsonl" in said
