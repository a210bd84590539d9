"""`conductor solve` in-process over the table of run endings (equipment/run_endings.py):
printed live, quiet and as JSON, each says the run's status and the reason its fold
holds, in the words of record/ending.py; the exit status is 0 for an answer alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conductor.session
from conductor.cli import main
from equipment.run_endings import CASES, EndingCase, newest_run_id, recorded_ending, session_for

ARGS = ["--model", "demo", "--method", "meta", "--no-recall", "--no-learn"]


def solve(case: EndingCase, *mode: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(conductor.session, "build_session", session_for(case))
    return main(["solve", case.question, *ARGS, *mode])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_solve_tells_each_ending(
    case: EndingCase,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = solve(case, "--json", monkeypatch=monkeypatch)
    shown = json.loads(capsys.readouterr().out)
    told = recorded_ending(shown["run_id"])
    assert (code == 0) == (case.status == "answered")
    assert shown["status"] == case.status and told.headline == case.headline
    assert shown["account"] == told.line() and case.said in told.line()
    assert shown["reason"] == (told.why or None)

    code = solve(case, "--quiet", monkeypatch=monkeypatch)
    out, err = capsys.readouterr()
    told = recorded_ending(newest_run_id())
    if told.answered:
        assert out.strip() == told.answer
    else:
        assert out == "" and told.line() in " ".join(err.split())

    solve(case, monkeypatch=monkeypatch)  # printed live, as a person reads it
    printed = " ".join(capsys.readouterr().out.split())
    told = recorded_ending(newest_run_id())
    assert " ".join(told.line().split()) in printed
