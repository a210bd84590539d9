"""`conductor notebook learn FILE...`: our transcripts and the published format, with
targets or without; the summary counts what was written at each trust level."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from nb_support import run_events, sort_run

from conductor.cli import main
from lessons.storage.store import Notebook


def _transcript(path: Path, runs: list[list]) -> Path:
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for events in runs for e in events))
    return path


def _learn(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["notebook", "learn", *argv, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    return json.loads(out)


def _levels(db: Path) -> list[tuple[str, str]]:
    book = Notebook(db)
    try:
        return [(r["verification"], r["outcome"]) for r in book.read(
            "select verification, outcome from notes")]  # fmt: skip
    finally:
        book.close()


@pytest.mark.slow
def test_our_transcripts_are_learned_with_and_without_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(5)
    words = [rng.sample(["pear", "fig", "kiwi", "plum", "lime", "date"], 3) for _ in range(6)]
    runs = [sort_run(f"s{i}", w, target=" ".join(sorted(w))) for i, w in enumerate(words)]
    runs.append(run_events("wp", "Janet has 16 eggs and eats 3. How many left?", "12",
                           target="13"))  # fmt: skip
    file = _transcript(tmp_path / "runs.jsonl", runs)
    told = _learn(capsys, str(file), "--notebook", str(tmp_path / "told.db"))
    assert told["runs"] == 7
    levels = _levels(tmp_path / "told.db")
    assert sum(told["notes"].values()) == len(levels)
    assert told["notes"]["rejected"] == sum(1 for _, outcome in levels if outcome == "wrong") > 0
    blind = _learn(capsys, str(file), "--without-targets", "--notebook", str(tmp_path / "b.db"))
    assert blind["runs"] == 7
    assert all(level != "target" for level, _ in _levels(tmp_path / "b.db"))


@pytest.mark.slow
def test_published_runs_are_learned(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"
    summary = _learn(capsys, str(file), "--limit", "5", "--without-targets",
                     "--notebook", str(tmp_path / "p.db"))  # fmt: skip
    assert summary["runs"] == 5
    assert sum(summary["notes"].values()) == len(_levels(tmp_path / "p.db")) > 0


def test_a_missing_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["notebook", "learn", str(tmp_path / "nope.jsonl"), "--notebook",
                 str(tmp_path / "x.db")])  # fmt: skip
    assert code != 0 and "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_a_baselines_runs_are_learned_as_its_harness_ran_them(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A multi-persona reply writes "Expert X:" lines the harness never dispatched: they
    are not expert calls, so they never corroborate. The same task's runs of two
    folders keep apart (one run id each)."""
    root = shared_dir / "transcripts"
    baseline = root / "baselines" / "MultiPersona" / "MGSM_ES.jsonl"
    meta = root / "with-python" / "MGSM_ES.jsonl"
    alone = tmp_path / "alone.db"
    _learn(capsys, str(baseline), "--limit", "6", "--without-targets", "--notebook", str(alone))
    book = Notebook(alone)
    try:
        rows = book.read("select run_id, verification from distilled_runs")
    finally:
        book.close()
    # Its harness dispatched nothing and each question ran once: nothing corroborates.
    assert len(rows) == 6 and all(r["verification"] != "independent" for r in rows)
    assert all(r["run_id"].startswith("published-multipersona-") for r in rows)
    both = tmp_path / "both.db"
    summary = _learn(capsys, str(baseline), str(meta), "--limit", "6", "--without-targets",
                     "--notebook", str(both))  # fmt: skip
    assert summary["runs"] == 12  # six of each file, none taken for another's
    book = Notebook(both)
    try:
        ids = book.read_column("select run_id from distilled_runs")
    finally:
        book.close()
    assert len(set(ids)) == 12
