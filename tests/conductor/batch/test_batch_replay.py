"""A published transcript file run as a batch with `--replay`: the answers `conductor
replay` gives and the accuracy `conductor score` gives, in a real sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_support import batch_folder, real_sandbox, results, run_cli

from conductor.cli import main


@pytest.mark.slow
@pytest.mark.shared
def test_a_replayed_batch_gives_the_answers_of_replay_and_the_accuracy_of_score(
    shared_dir: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    from conductor.replay.runner import replay_file
    from record.published import read_published
    from sandbox.registry import open_sandbox

    path = shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"  # 100 records
    name = real_sandbox()
    code, out, _ = run_cli([str(path), "--replay", "--sandbox", name, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["items"]["finished"] == 100

    assert main(["score", str(path), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert report["accuracy"]["percent"] == scored["accuracy"] == 67.0
    assert report["accuracy"]["paper_rule_percent"] == scored["paper_accuracy"]

    replayed = replay_file(path, lambda: open_sandbox(name), jobs=2)
    differs = {m.line for m in replayed.mismatches if m.kind == "final_answer"}
    recorded = {r.line: r.final_answer for r in read_published(path).records}
    by_line = {r["line"]: r["answer"] for r in results(batch_folder(isolated_home))}
    assert sorted(by_line) == sorted(recorded)
    for line, ours in by_line.items():
        same = (ours or "").strip() == (recorded[line] or "").strip()
        assert same == (line not in differs), f"line {line}: batch {ours!r}"
