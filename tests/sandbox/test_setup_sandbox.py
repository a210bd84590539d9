"""`make run`'s sandbox set-up never looks hung (sandbox/setup.py): the image
build's lines are shown as they come, with a line of its own while it prints nothing;
and where bubblewrap already works, the build goes to the background and the TUI opens
at once on bubblewrap."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox import setup as setup_sandbox


def test_the_builds_lines_are_shown_as_they_come_and_silence_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(setup_sandbox, "HEARTBEAT_S", 0.3)
    said: list[str] = []
    child = "import time; print('stage one', flush=True); time.sleep(2.5); print('stage two')"
    assert setup_sandbox._stream([sys.executable, "-c", child], said.append)
    lines = [s.strip() for s in said]
    assert "stage one" in lines and "stage two" in lines
    between = lines[lines.index("stage one") + 1 : lines.index("stage two")]
    assert between and all(s.startswith("… still building") for s in between)
    assert not setup_sandbox._stream([sys.executable, "-c", "raise SystemExit(3)"], said.append)


class _Started:
    def __init__(self, cmd: list[str], **options: Any) -> None:
        self.cmd, self.options, self.pid = cmd, options, os.getpid()  # alive: this process


def test_with_bubblewrap_working_a_missing_image_builds_in_the_background(
    monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    import sandbox.docker.backend
    import sandbox.registry

    started: list[_Started] = []
    monkeypatch.setattr(sandbox.docker.backend, "daemon_problem", lambda: None)
    monkeypatch.setattr(
        sandbox.registry, "probe", lambda name: None if name == "bwrap" else "no image yet"
    )

    def popen(cmd: list[str], **options: Any) -> _Started:
        started.append(_Started(cmd, **options))
        return started[-1]

    monkeypatch.setattr(setup_sandbox.subprocess, "Popen", popen)
    said: list[str] = []
    assert setup_sandbox.set_up(said.append) == "bwrap"
    [build] = started
    assert build.cmd[-2:] == ["sandbox", "build"] and build.options["start_new_session"]
    assert "building in the background" in " ".join(said)
    log = isolated_home / "logs" / "sandbox-build.log"
    assert log.with_suffix(".pid").read_text() == str(os.getpid())
    # A second `make run` while it builds starts no second build.
    said.clear()
    assert setup_sandbox.set_up(said.append) == "bwrap"
    assert len(started) == 1 and "still building in the background" in " ".join(said)
