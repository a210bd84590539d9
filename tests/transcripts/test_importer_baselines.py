"""Importing the paper's baseline runs: one conversation each, recorded under its method,
with run ids of their own (a task's line is in every method's file)."""

from __future__ import annotations

import json
from pathlib import Path

from conductor.cli import main
from record.reader import read_transcript
from transcripts.importer import import_file
from transcripts.index import RunIndex

ANSWER = '>> FINAL ANSWER:\n"""\n{}\n"""'


def baseline_file(folder: Path) -> Path:
    def record(turns: list[str], capped: bool) -> dict:
        log = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "ROUND 1:\n\nQuestion: x"},
        ]
        for n, turn in enumerate(turns, start=2):
            log.append({"role": "assistant", "content": turn})
            if n <= len(turns) or capped:
                log.append({"role": "user", "content": f"ROUND {n}:\n\nGive the answer."})
        return {"input": "x", "target": "5", "message_log": log, "output": log[-1]["content"]}

    # A persona's line that looks like a call: a baseline dispatched nothing.
    persona = 'Expert Mathematician:\n"""\nCheck 2 + 3.\n"""\nIt is 5.'
    rows = [record([persona, ANSWER.format("5")], False), record(["hmm", "still"], True)]
    folder.mkdir(parents=True)
    path = folder / "GameOf24.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_baseline_file_imports_as_its_method(tmp_path: Path) -> None:
    path = baseline_file(tmp_path / "MultiPersona")
    index = RunIndex(tmp_path / "runs.db")
    report = import_file(
        path, runs_path=tmp_path / "runs", index=index, method="multipersona", expert_calls=False
    )
    assert report.run_ids == ["published-multipersona-GameOf24-0001",
                              "published-multipersona-GameOf24-0002"]  # fmt: skip
    answered = read_transcript(tmp_path / "runs" / f"{report.run_ids[0]}.jsonl")
    assert answered.started is not None and answered.started.method == "multipersona"
    assert not [e for e in answered.events if e.kind == "expert_call_started"]
    assert [e.reason for e in answered.events if e.kind == "observation"] == ["no_call_or_answer"]
    assert answered.finished is not None and answered.finished.final_answer == "5"
    capped = read_transcript(tmp_path / "runs" / f"{report.run_ids[1]}.jsonl")
    assert capped.finished is not None and capped.finished.status == "limit"
    assert [e.limit for e in capped.events if e.kind == "limit_hit"] == ["rounds"]
    rows = index.list(method="multipersona")
    assert sorted(r["status"] for r in rows) == ["answered", "limit"]


def test_the_cli_takes_the_method_from_the_folder(tmp_path: Path, capsys) -> None:
    path = baseline_file(tmp_path / "ExpertStatic")
    assert main(["runs", "import", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["run_ids"][0] == "published-expert-static-GameOf24-0001"
    assert [r["method"] for r in RunIndex().list(method="expert-static")] == ["expert-static"] * 2
