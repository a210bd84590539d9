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


@pytest.fixture
def long_run(tmp_path: Path) -> tuple[Path, str]:
    home = tmp_path / "home"
    reply = "\n".join(f"line {i} " + "x" * 60 for i in range(4000))  # far past a pipe's buffer
    model = ScriptedModel(
        ['Expert Writer:\n"""\nWrite.\n"""', '>> FINAL ANSWER:\n"""\n42\n"""'],
        lambda name, instruction: reply,
    )
    index = RunIndex(home / "runs.db")
    session = Session(model, config=RunConfig(python=False), runs_path=home / "runs", index=index)
    events = list(session.solve("q"))
    index.close()
    return home, events[0].run_id


@pytest.mark.slow
@pytest.mark.parametrize("command", [["runs", "show"], ["runs", "diff"], ["runs", "audit"]])
def test_a_closed_pipe_ends_a_reader_with_141(long_run: tuple[Path, str], command) -> None:
    home, run = long_run
    argv = [*command, run] + ([run] if command[-1] == "diff" else [])
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
