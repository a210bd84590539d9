"""Starting `conductor` under the fault driver and checking what a fault left behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conductor_kernel.events import NotesWritten, RunFinished
from record.reader import Transcript, read_transcript

DRIVER = Path(__file__).with_name("fault_driver.py")
STAGES = ("before_model", "mid_stream", "expert", "sandbox", "learning")
FAULTS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", "KILL")
EXIT = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129, "SIGPIPE": 141}
RUN_ARGS = ("--model", "fault", "--sandbox", "subprocess")


@dataclass
class Driven:
    """One `conductor` process under the driver, held at a stage."""

    home: Path
    work: Path
    proc: subprocess.Popen
    stderr_path: Path
    stdout: bytes = b""
    returncode: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def mark(self) -> Path:
        return self.work / "mark"

    @property
    def release(self) -> Path:
        return self.work / "release"

    def calls(self) -> list[str]:
        path = self.work / "calls"
        return path.read_text().split() if path.exists() else []

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for_stage(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.mark.exists():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the process ended (code {self.proc.returncode}) before its stage: "
                    f"{self.stderr}"
                )
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"the stage was never reached: {self.stderr}")
            time.sleep(0.02)

    def finish(self, timeout: float = 30) -> int:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # the driver dumps every thread's stack
            time.sleep(0.5)
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError(
                f"the process did not end after the fault: {self.stderr}"
            ) from None
        except ValueError:  # our end of stdout was closed on purpose
            self.proc.wait(timeout=timeout)
            out = b""
        self.stdout = out or b""
        self.returncode = self.proc.returncode
        return self.returncode


def env_for(home: Path, work: Path, stage: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAULT_")}
    config = work / "config.toml"
    config.touch()
    env.update(
        CONDUCTOR_HOME=str(home),
        CONDUCTOR_CONFIG=str(config),
        FAULT_STAGE=stage,
        FAULT_MARK=str(work / "mark"),
        FAULT_RELEASE=str(work / "release"),
        FAULT_CALLS=str(work / "calls"),
        PYTHONUNBUFFERED="1",
        COLUMNS="100",
    )
    return env


def start(
    home: Path,
    work: Path,
    args: list[str],
    stage: str = "",
    sandbox: str = "subprocess",
    env: dict[str, str] | None = None,
) -> Driven:
    work.mkdir(parents=True, exist_ok=True)
    stderr_path = work / "stderr"
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), *args],
        env={**env_for(home, work, stage), "FAULT_SANDBOX": sandbox, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr_path.open("wb"),
    )
    return Driven(home, work, proc, stderr_path)


def solve(
    home: Path,
    work: Path,
    stage: str = "",
    question: str = "What is 6*7?",
    sandbox: str = "subprocess",
    env: dict[str, str] | None = None,
) -> Driven:
    return start(home, work, ["solve", question, *RUN_ARGS], stage, sandbox, env)


def apply_fault(driven: Driven, fault: str) -> None:
    """Send the fault; SIGPIPE is the reader going away, then the run going on."""
    if fault == "KILL":
        driven.proc.kill()
    elif fault == "SIGPIPE":
        assert driven.proc.stdout is not None
        driven.proc.stdout.close()  # what `| head` does once it has its lines
        driven.release.touch()
    else:
        driven.proc.send_signal(getattr(signal, fault))


def transcripts(home: Path) -> list[Transcript]:
    return [read_transcript(p) for p in sorted(home.rglob("runs/*.jsonl"))]


def only_transcript(home: Path) -> Transcript:
    found = transcripts(home)
    assert len(found) == 1, [t.path for t in found]
    return found[0]


def index_row(home: Path, run_id: str) -> dict:
    conn = sqlite3.connect(home / "runs.db")
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("select * from runs where run_id = ?", (run_id,)).fetchone()
        return dict(row) if row else {}
    finally:
        conn.close()


def learned_runs(home: Path) -> set[str]:
    return learned_runs_in(home / "notebook.db")


def learned_runs_in(path: Path) -> set[str]:
    """The runs a notebook file has learned from (none if there is no such file)."""
    if not path.exists():
        return set()
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("select run_id from distilled_runs")}
    finally:
        conn.close()


def ending(transcript: Transcript) -> tuple[RunFinished, list[str]]:
    """The run's `run_finished` and the kinds of the events after it."""
    finished = transcript.finished
    assert finished is not None, f"{transcript.path} has no run_finished"
    position = transcript.events.index(finished)
    return finished, [e.kind for e in transcript.events[position + 1 :]]


def learning_usage(transcript: Transcript):
    return [e.usage for e in transcript.events if isinstance(e, NotesWritten)]
