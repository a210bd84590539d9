"""Both conditions of a published task import side by side (issue 24): the runs of
with-python and without-python GameOf24 keep their own ids, each is scored at import,
and `runs diff RUN` pairs a run with its question under the other condition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conductor.cli import main
from transcripts.index import RunIndex


@pytest.mark.slow
def test_both_gameof24_files_keep_200_scored_runs_and_pair_by_question(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [
        shared_dir / "transcripts" / c / "GameOf24.jsonl" for c in ("with-python", "without-python")
    ]
    assert main(["runs", "import", *map(str, files), "--json"]) == 0
    reports = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["imported"] for r in reports] == [100, 100]
    assert not set(reports[0]["run_ids"]) & set(reports[1]["run_ids"])
    assert all(r["scored"] == 100 for r in reports)
    # The paper reports 67% for meta-prompting with Python on Game of 24.
    assert reports[0]["correct"] == 67
    index = RunIndex()
    rows = index.list_runs(limit=None)
    assert len(rows) == 200 and all(r["correct"] is not None for r in rows)
    # Importing one again replaces its own runs only.
    assert main(["runs", "import", str(files[1]), "--json"]) == 0
    capsys.readouterr()
    assert len(index.list_runs(limit=None)) == 200

    left = reports[0]["run_ids"][7]
    [pair] = index.counterparts(left)
    assert pair["run_id"] in reports[1]["run_ids"]
    assert pair["question"] == index.get(left)["question"]  # type: ignore[index]
    assert main(["runs", "diff", left]) == 0
    out = capsys.readouterr().out
    assert pair["run_id"][:20] in out
    assert "[-" in out and "{+" in out  # piped: the changes are bracketed
