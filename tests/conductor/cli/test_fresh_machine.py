"""A fresh machine: the README's `make run` in a clean clone with no Docker and no bwrap.

The machine is simulated: PATH holds every program of this one except `docker`,
`dockerd` and `bwrap`, and DOCKER_HOST points at no engine. `make run` must set up a
sandbox by itself (here: apt-get as root, else bubblewrap's package unpacked into the
virtualenv), open the TUI, and solve a demo puzzle whose code runs in that sandbox.
(On a real fresh machine the same was checked by hand in a Debian container.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tmux_driver import Terminal, cut_lines, has_traceback, network_env, tmux_missing

from support import REPO, skip_or_fail

pytestmark = pytest.mark.serial

HIDDEN = {"docker", "dockerd", "bwrap"}


def shim_path(where: Path) -> Path:
    """A PATH directory with every program on PATH except the hidden ones."""
    where.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for program in Path(folder).iterdir():
            target = where / program.name
            if program.name in HIDDEN or target.exists() or not os.access(program, os.X_OK):
                continue
            target.symlink_to(program)
    return where


def fresh_env(tmp: Path, shim: Path) -> dict[str, str]:
    return {
        "PATH": str(shim),
        "HOME": os.environ.get("HOME", str(tmp)),  # pip's cache, as a user would have
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "DOCKER_HOST": f"unix://{tmp}/no-engine.sock",
        "CONDUCTOR_HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **network_env(),
    }


def test_make_run_on_a_machine_without_docker_or_bwrap_solves_a_demo_puzzle(
    tmp_path: Path,
) -> None:
    missing = tmux_missing() or (None if shutil.which("git") else "git is not installed")
    if missing:
        skip_or_fail(missing, "CONDUCTOR_REQUIRE_TMUX")
    clone = tmp_path / "conductor"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = fresh_env(tmp_path, shim_path(tmp_path / "bin"))
    term = Terminal("make run", cwd=clone, env=env, size=(100, 30))
    try:
        term.wait_for(r"Ask a question", timeout=900)
        term.type("Use 4 5 6 10 to make 24")
        term.keys("Enter")
        screen = term.wait_for(r"answered", timeout=120)
        assert not has_traceback(screen), screen
        term.keys("C-q")
        assert term.wait_exit(30) == 0
    finally:
        term.close()
    from record.reader import read_transcript

    runs = sorted((tmp_path / "home" / "runs").glob("*.jsonl"))
    assert len(runs) == 1
    transcript = read_transcript(runs[0])
    assert transcript.started is not None and transcript.started.sandbox == "bwrap"
    execs = [e for e in transcript.events if e.kind == "sandbox_exec"]
    assert execs and execs[0].result.exit_code == 0 and execs[0].result.backend == "bwrap"
    assert transcript.finished is not None and transcript.finished.status == "answered"
    assert not cut_lines(screen)
