"""`conductor solve` on a terminal says at once that the sandbox is starting."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _solve(stderr_is_terminal: bool, tmp_path: Path) -> str:
    env = {**os.environ, "CONDUCTOR_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "conductor.cli", "solve", "Use 4 5 6 10 to make 24"]
    command += ["--sandbox", "subprocess", "--quiet"]
    if not stderr_is_terminal:
        done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, timeout=120)
        return done.stderr.decode()
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=follower, timeout=120
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the pty is drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stdout
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_a_terminal_is_told_the_sandbox_is_starting(tmp_path: Path) -> None:
    assert "starting the subprocess sandbox" in _solve(True, tmp_path)


@pytest.mark.slow
def test_a_pipe_gets_no_progress_line(tmp_path: Path) -> None:
    assert "starting the" not in _solve(False, tmp_path)
