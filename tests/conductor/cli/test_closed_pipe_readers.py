"""A reader that stops reading (`conductor runs show X | head`) ends every command the
same way: exit 141 (SIGPIPE), nothing on stderr, as `conductor solve` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conductor.session import Session
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from transcripts.index import RunIndex


def _solve(home: Path, index: RunIndex, word: str) -> str:
    # far past a pipe's buffer (64 KiB), and different in every line from a run with
    # another word; few words a line, so that a word diff of two such runs stays cheap
    reply = "\n".join(f"line {i} {word} " + "x" * 200 for i in range(500))
    model = ScriptedModel(
        ['Expert Writer:\n"""\nWrite.\n"""', '>> FINAL ANSWER:\n"""\n42\n"""'],
        lambda name, instruction: reply,
    )
    session = Session(model, config=RunConfig(python=False), runs_path=home / "runs", index=index)
    events = list(session.solve("q"))  # the whole run, recorded
    return events[0].run_id


@pytest.fixture
def long_run(tmp_path: Path) -> tuple[Path, str, str]:
    home = tmp_path / "home"
    index = RunIndex(home / "runs.db")
    runs = _solve(home, index, "alpha"), _solve(home, index, "beta")
    index.close()
    return home, *runs


@pytest.mark.slow
@pytest.mark.parametrize("command", [["runs", "show"], ["runs", "diff"], ["runs", "audit"]])
def test_a_closed_pipe_ends_a_reader_with_141(long_run: tuple[Path, str, str], command) -> None:
    home, run, other = long_run
    # the diff of two runs that differ in every line: long whatever the diff leaves out
    argv = [*command, run] + ([other] if command[-1] == "diff" else [])
    child = subprocess.Popen(
        [sys.executable, "-m", "conductor.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "CONDUCTOR_HOME": str(home), "COLUMNS": "100"},
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(10)
    child.stdout.close()
    err = child.stderr.read().decode()
    code = child.wait(timeout=120)
    if command == ["runs", "audit"]:
        assert code in (0, 141)  # its output is short: it may be written whole first
    else:
        assert code == 141, err
    assert "Traceback" not in err and "Exception" not in err
