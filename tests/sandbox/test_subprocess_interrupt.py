"""A Ctrl-C that lands while the subprocess backend waits for a program (as it can while
the notebook tests a tool after a run) ends the program too: it must not run on, with
nobody left to enforce its time limit."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from sandbox.subprocess_backend import SubprocessSandbox


def test_a_program_does_not_outlive_a_ctrl_c_during_its_run(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # The program and its time limit outlast any wait below, so the Ctrl-C always lands
    # while the run is going, however slowly a loaded machine starts the program.
    code = (
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
    )

    def interrupt_once_it_runs() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (pidfile.exists() and pidfile.read_text()):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    sandbox = SubprocessSandbox()
    # Python's own Ctrl-C handler, whatever an earlier test in this process left behind.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_once_it_runs, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sandbox.run(code, timeout=600)
    finally:
        signal.signal(signal.SIGINT, previous)
        sandbox.close()
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(pid, 0)
