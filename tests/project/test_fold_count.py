"""A finished run is folded once, by its session, and its transcript is not read back:
the runs index, the scorer and the notebook take the session's fold.

The fold (`record.fold.outline`) is wrapped wherever a module has bound it, and the
reader is wrapped where every reader of a transcript opens the file (`record.reader`'s
`_open`), so a fold or a read by any path counts.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import record.fold
import record.reader
from conductor.cli import main
from transcripts.index import RunIndex

QUESTION = "Sort these words: pear apple fig"


def _count_calls(monkeypatch: pytest.MonkeyPatch, counts: Counter[str]) -> None:
    fold, opener = record.fold.outline, record.reader._open

    def counted_fold(*args: Any, **kwargs: Any) -> Any:
        counts["fold"] += 1
        return fold(*args, **kwargs)

    def counted_open(path: Path) -> Any:
        counts["read"] += 1
        return opener(path)

    monkeypatch.setattr(record.reader, "_open", counted_open)
    # Every module that imported the fold by name holds its own reference to it.
    for module in list(sys.modules.values()):
        if getattr(module, "outline", None) is fold:
            monkeypatch.setattr(module, "outline", counted_fold)


@pytest.mark.slow
def test_one_solve_folds_its_run_once_and_reads_no_transcript_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import conductor.scoring.runs
    import lessons.write.prepare
    import transcripts.index  # noqa: F401  # the readers that folded the run themselves

    counts: Counter[str] = Counter()
    _count_calls(monkeypatch, counts)
    # Learning on (the notebook reads the run), the answer scored, runs.db fed.
    assert main(["solve", QUESTION, "--model", "demo", "--sandbox", "subprocess"]) == 0
    assert counts == Counter(fold=1), counts
    (row,) = RunIndex().list_runs(limit=5)
    assert row["status"] == "answered" and row["findings"] is not None  # the index audited it
    assert conductor.scoring.runs and lessons.write.prepare
    assert "apple fig pear" in capsys.readouterr().out
