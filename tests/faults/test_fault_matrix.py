"""The fault-injection matrix: every stop a user or the system can cause, at every stage.

Each cell runs the real `conductor solve` in a subprocess (tests/faults/fault_driver.py
holds it at the stage), sends the fault, and checks what was left: the transcript ends
with `run_finished` (kill -9: it is readable, runs.db says `running`, and the next start
repairs it to `interrupted`), the status is right, the usage counts every model call
that returned, nothing recorded is lost, nothing is learned from an interrupted run, and
no traceback reaches the user.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import (
    EXIT,
    FAULTS,
    STAGES,
    apply_fault,
    ending,
    index_row,
    learned_runs,
    learning_usage,
    only_transcript,
    solve,
    transcripts,
)

pytestmark = pytest.mark.slow

# What must be in the transcript when the fault hits each stage.
RECORDED_BY_STAGE = {
    "before_model": {"run_started"},
    "mid_stream": {"run_started", "meta_turn_started"},
    "expert": {"meta_turn_finished", "expert_call_started"},
    "sandbox": {"expert_call_finished", "expert_call_started", "meta_turn_finished"},
    "learning": {"final_answer", "run_finished"},
}


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "KILL"])
def test_a_stopped_run_ends_recorded(tmp_path: Path, fault: str, stage: str) -> None:
    home = tmp_path / "home"
    driven = solve(home, tmp_path / "work", stage)
    driven.wait_for_stage()
    apply_fault(driven, fault)
    code = driven.finish()

    assert "Traceback" not in driven.stderr, driven.stderr
    assert code == EXIT[fault], (code, driven.stderr)
    transcript = only_transcript(home)
    assert transcript.problem is None, transcript.problem
    finished, after = ending(transcript)
    # The run's verdict and learning are all that comes after the end (learning only for
    # a run that ended itself).
    assert set(after) <= {"run_scored", "notes_written"}
    answered_first = stage == "learning"
    assert finished.status == ("answered" if answered_first else "interrupted")
    kinds = {e.kind for e in transcript.events}
    assert RECORDED_BY_STAGE[stage] <= kinds, kinds

    # Every call that returned is counted: the run's own in run_finished, learning's apart.
    calls = driven.calls()
    run_calls = [c for c in calls if c != "learning"]
    assert finished.usage.calls == len(run_calls), (finished.usage, calls)
    assert finished.usage.cost_usd == pytest.approx(0.001 * len(run_calls))
    learned = learning_usage(transcript)
    assert sum(u.calls for u in learned) == calls.count("learning")

    row = index_row(home, finished.run_id)
    assert row["status"] == finished.status
    assert row["cost_usd"] == pytest.approx(finished.usage.cost_usd)

    # Nothing is learned from an interrupted run, nor from one whose learning was stopped.
    if finished.status == "interrupted" or fault != "SIGPIPE":
        assert finished.run_id not in learned_runs(home)
        assert "notes_written" not in after
    # The user is told the truth: which run, and how it was saved.
    assert finished.run_id in driven.stderr, driven.stderr


@pytest.mark.parametrize("stage", STAGES)
def test_kill_9_leaves_a_readable_transcript_and_the_next_start_repairs_it(
    tmp_path: Path, stage: str
) -> None:
    home = tmp_path / "home"
    driven = solve(home, tmp_path / "work", stage)
    driven.wait_for_stage()
    apply_fault(driven, "KILL")
    driven.finish()

    killed = only_transcript(home)
    assert killed.problem is None, killed.problem  # every line whole: one write per event
    started = killed.started
    assert started is not None
    assert RECORDED_BY_STAGE[stage] <= {e.kind for e in killed.events}
    before = index_row(home, started.run_id)
    if stage == "learning":
        assert killed.finished is not None and killed.finished.status == "answered"
        assert before["status"] == "answered"
    else:
        assert killed.finished is None
        assert before["status"] == "running"

    # The next start (another solve) finds the dead process's run and repairs it.
    again = solve(home, tmp_path / "again")
    assert again.finish() == 0, again.stderr
    assert "Traceback" not in again.stderr
    repaired = next(t for t in transcripts(home) if t.started.run_id == started.run_id)
    assert repaired.problem is None
    finished, _ = ending(repaired)
    assert index_row(home, started.run_id)["status"] == finished.status
    if stage == "learning":
        assert finished.status == "answered"
    else:
        assert finished.status == "interrupted"
        # Nothing recorded is lost: the repair only appends.
        assert repaired.events[: len(killed.events)] == killed.events
        assert [e.kind for e in repaired.events[len(killed.events) :]] == [
            "error",
            "run_finished",
        ]


@pytest.mark.parametrize("stage", ["expert", "learning"])
def test_a_closed_terminal_ends_the_run_recorded(tmp_path: Path, stage: str) -> None:
    """The real thing, not just SIGHUP: the run's terminal (a pty) is closed under it."""
    import fcntl
    import os
    import pty
    import select
    import subprocess
    import sys
    import termios
    import time

    from faults_support import DRIVER, RUN_ARGS, env_for

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    master, slave = pty.openpty()

    def take_terminal() -> None:  # in the child: the pty becomes its controlling terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), "solve", "What is 6*7?", *RUN_ARGS],
        # Held far longer than any wait here: the stage cannot pass before the hang-up.
        env={**env_for(home, work, stage), "FAULT_HOLD_S": "600"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=take_terminal,
    )
    os.close(slave)
    deadline = time.monotonic() + 30
    while not (work / "mark").exists():  # drain the terminal so the child never blocks
        assert proc.poll() is None and time.monotonic() < deadline
        # Never a blocking read: a child quiet at the stage would hold this loop past it.
        if select.select([master], [], [], 0.02)[0]:
            try:
                os.read(master, 65536)
            except OSError:
                pass
    os.close(master)  # the terminal window closes: the kernel hangs the session up
    assert proc.wait(timeout=30) == EXIT["SIGHUP"]
    transcript = only_transcript(home)
    assert transcript.problem is None
    finished, after = ending(transcript)
    assert finished.status == ("answered" if stage == "learning" else "interrupted")
    assert set(after) <= {"run_scored"}  # the verdict (not judged) and nothing else
    assert index_row(home, finished.run_id)["status"] == finished.status
    assert finished.run_id not in learned_runs(home)


@pytest.mark.docker
@pytest.mark.parametrize("fault", ["SIGINT", "SIGTERM", "KILL"])
def test_a_stop_during_a_docker_sandbox_run(
    tmp_path: Path, fault: str, require_docker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same cell on the hardened Docker sandbox: the program is running in it."""
    import os

    cache = os.environ.get("CONDUCTOR_SANDBOX_CACHE", str(Path.home() / ".cache/conductor-sandbox"))
    monkeypatch.setenv("CONDUCTOR_SANDBOX_CACHE", cache)
    home = tmp_path / "home"
    driven = solve(home, tmp_path / "work", "sandbox", sandbox="docker")
    driven.wait_for_stage(timeout=120)
    apply_fault(driven, fault)
    code = driven.finish(timeout=60)
    transcript = only_transcript(home)
    assert transcript.problem is None
    if fault == "KILL":
        assert transcript.finished is None
        again = solve(home, tmp_path / "again", sandbox="docker")
        assert again.finish(timeout=120) == 0, again.stderr
        transcript = next(t for t in transcripts(home) if t.path == transcript.path)
    else:
        assert code == EXIT[fault] and "Traceback" not in driven.stderr, driven.stderr
    finished, _ = ending(transcript)
    assert finished.status == "interrupted"
    # The program was still running: its run is not in the record as if it had finished.
    assert "sandbox_exec" not in {e.kind for e in transcript.events}
    assert index_row(home, finished.run_id)["status"] == "interrupted"


@pytest.mark.parametrize("fault", ["SIGINT", "SIGTERM"])
def test_a_stop_during_parallel_expert_calls_ends_the_command_at_once(
    tmp_path: Path, fault: str
) -> None:
    """Two experts in flight, one held far longer than the test waits: the run ends
    recorded and the process exits (it used to wait for the held call at exit)."""
    home = tmp_path / "home"
    hold = {"FAULT_PARALLEL": "1", "FAULT_HOLD_S": "600"}
    driven = solve(home, tmp_path / "work", "expert", env=hold)
    driven.wait_for_stage()
    apply_fault(driven, fault)
    code = driven.finish(timeout=60)  # only a hang takes this long

    assert code == EXIT[fault] and "Traceback" not in driven.stderr, driven.stderr
    finished, after = ending(only_transcript(home))
    assert finished.status == "interrupted" and set(after) <= {"run_scored"}
    assert index_row(home, finished.run_id)["status"] == "interrupted"
    assert finished.usage.calls == len(driven.calls())  # the meta turn and the free expert
