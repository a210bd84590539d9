"""The fault matrix's TUI row: leaving `conductor tui` while a run is in flight.

The real app in a real terminal (a pty), under the fault driver, held at a stage:
ctrl+q, SIGTERM, SIGINT from outside, and the terminal closed under it. The run ends
recorded (`interrupted` mid-run; its own status when it had answered and was learning),
runs.db agrees, nothing is learned, no traceback is drawn, and the process exits at
once. Before, it did not stop the run at all: the app went away and the process lived
on, unseen, until the run (model calls, learning) ended by itself.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from faults_support import DRIVER, EXIT, ending, env_for, index_row, learned_runs, only_transcript

pytestmark = pytest.mark.serial

# The stage is held far longer than the test waits: only a process that really stops
# the run and leaves ends in time.
HOLD = {"FAULT_HOLD_S": "600"}
HANG_S = 60  # only a hang takes this long
EXIT_CODES = {**EXIT, "quit": 0}


class Terminal:
    """`conductor tui` under the fault driver in a pty of 100x30, its output drained."""

    def __init__(self, home: Path, work: Path, stage: str) -> None:
        work.mkdir(parents=True)
        self.work = work
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = {**env_for(home, work, stage), **HOLD, "TERM": "xterm-256color"}
        self.proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "tui", "--model", "fault", "--sandbox", "subprocess"],
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.output = bytearray()
        self._closing = threading.Event()
        self._closed = False
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        # Never blocked in read(): a close() from another thread does not end a read in
        # progress, so the terminal would not hang up until the app next wrote something.
        while not self._closing.is_set():
            if not select.select([self.master], [], [], 0.02)[0]:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output.extend(data)

    @property
    def text(self) -> str:
        return bytes(self.output).decode(errors="replace")

    def wait_for(self, what: str) -> None:
        deadline = time.monotonic() + HANG_S
        while what not in self.text:
            assert self.proc.poll() is None, f"the app ended: {self.text[-2000:]}"
            assert time.monotonic() < deadline, f"never showed {what!r}: {self.text[-2000:]}"
            time.sleep(0.05)

    def ask(self, question: str) -> None:
        self.wait_for("Ask a question")
        os.write(self.master, question.encode())
        self.wait_for(question)
        os.write(self.master, b"\r")

    def wait_for_stage(self) -> None:
        deadline = time.monotonic() + HANG_S
        while not (self.work / "mark").exists():
            assert self.proc.poll() is None, f"the app ended: {self.text[-2000:]}"
            assert time.monotonic() < deadline, f"the stage was never reached: {self.text}"
            time.sleep(0.02)

    def apply(self, fault: str) -> None:
        if fault == "quit":
            os.write(self.master, b"\x11")  # ctrl+q
        elif fault == "SIGHUP":
            self._close()  # the terminal window closes: the session is hung up
        else:
            self.proc.send_signal(getattr(signal, fault))

    def finish(self) -> int:
        try:
            return self.proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # the driver dumps every thread's stack
            time.sleep(0.5)
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the app did not end: {self.text[-6000:]}") from None
        finally:
            self._reader.join(timeout=5)  # what the app wrote last, up to its end
            self._close()

    def _close(self) -> None:
        self._closing.set()
        self._reader.join(timeout=5)
        if not self._closed:
            self._closed = True
            os.close(self.master)


@pytest.mark.parametrize(
    ("stage", "fault"),
    [
        ("mid_stream", "quit"),
        ("mid_stream", "SIGTERM"),
        ("mid_stream", "SIGINT"),
        ("mid_stream", "SIGHUP"),
        ("learning", "quit"),
        ("learning", "SIGTERM"),
    ],
)
def test_leaving_the_tui_during_a_run_ends_it_recorded_at_once(
    tmp_path: Path, stage: str, fault: str
) -> None:
    home = tmp_path / "home"
    term = Terminal(home, tmp_path / "work", stage)
    term.ask("What is 6*7?")
    term.wait_for_stage()
    term.apply(fault)
    code = term.finish()

    assert code == EXIT_CODES[fault], (code, term.text[-3000:])
    assert "Traceback" not in term.text, term.text[-6000:]
    finished, after = ending(only_transcript(home))
    assert finished.status == ("answered" if stage == "learning" else "interrupted")
    # Learning was left, not finished after the user left; only the run's verdict follows.
    assert [kind for kind in after if kind != "run_scored"] == []
    assert index_row(home, finished.run_id)["status"] == finished.status
    assert finished.run_id not in learned_runs(home)
