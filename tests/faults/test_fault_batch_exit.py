"""A batch leaves at once after SIGINT or SIGTERM, whatever its sandboxes are doing
(issue 27): real signals, a real `conductor batch`, real Docker and bubblewrap.

No test here times the exit (that is bench/batch_load.py's job). Each shows the
structure instead: the backend is slowed (batch_exit_driver.py) so that a sandbox's
close, or a sandbox's start during warm-up, hangs for ten minutes, and the process
still ends with the signal's exit code while that hang is pending; every item in flight
is recorded as interrupted (resume runs it again); the sandboxes it left behind are
gone afterwards (Docker: removed by the reaper it started; bubblewrap: dead with it);
and the next start completes the batch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import skip_or_fail

DRIVER = Path(__file__).with_name("batch_exit_driver.py")
PUZZLES = ["1 2 3 4", "4 4 6 8", "2 3 5 12", "1 1 4 6", "3 3 8 8", "1 5 5 5"]
EXIT = {"SIGINT": 130, "SIGTERM": 143}
# Generous: a process that waited on any hang would need ten minutes.
ENDS_WITHIN_S = 120


def backend_ready(backend: str) -> None:
    if backend == "docker":
        from sandbox.docker.backend import DockerSandbox

        reason = DockerSandbox.probe()
    else:
        from sandbox.bwrap.backend import BwrapSandbox

        reason = BwrapSandbox.probe()
    if reason is not None:
        skip_or_fail(f"{backend} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")


def batch(tmp_path: Path, backend: str, fault: str, tag: str) -> tuple[subprocess.Popen, Path]:
    task_file = tmp_path / "GameOf24.jsonl"
    task_file.write_text(
        "".join(json.dumps({"id": f"p{n}", "input": p}) + "\n" for n, p in enumerate(PUZZLES))
    )
    config = tmp_path / "config.toml"
    config.touch()
    marks = tmp_path / f"marks-{tag}"
    env = {
        **os.environ,
        "CONDUCTOR_HOME": str(tmp_path / "home"),
        "CONDUCTOR_CONFIG": str(config),
        "EXIT_FAULT": fault,
        "EXIT_MARKS": str(marks),
    }
    args = [
        sys.executable, str(DRIVER), "batch", str(task_file), "--model", "demo",
        "--python", "--sandbox", backend, "--concurrency", "4", "--sandbox-cells", "2",
        "--no-learn", "--no-recall", "--json",
    ]  # fmt: skip
    stderr = (tmp_path / f"stderr-{tag}").open("wb")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=stderr)
    return proc, marks


def wait_for_mark(proc: subprocess.Popen, marks: Path, word: str) -> list[str]:
    deadline = time.monotonic() + ENDS_WITHIN_S
    while time.monotonic() < deadline:
        lines = marks.read_text().split("\n") if marks.exists() else []
        found = [line for line in lines if line.startswith(word)]
        if found:
            return found
        assert proc.poll() is None, f"the batch ended before its fault ({proc.returncode})"
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"the fault {word!r} was never reached")


def records(home: Path) -> list[dict]:
    found = list(home.rglob("results.jsonl"))
    if not found:
        return []
    return [json.loads(line) for line in found[0].read_text().splitlines() if line.strip()]


def gone(check, within_s: float = 60.0) -> bool:
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True


def containers_of(pid: int) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=conductor.owner_pid={pid}"],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    return out.split()


@pytest.mark.parametrize(
    ("backend", "fault", "stop"),
    [
        ("docker", "close", "SIGINT"),
        ("docker", "start", "SIGTERM"),
        ("bwrap", "close", "SIGTERM"),
        ("bwrap", "start", "SIGINT"),
    ],
)
def test_a_stop_leaves_while_sandboxes_hang_and_nothing_is_lost(
    tmp_path: Path, backend: str, fault: str, stop: str
) -> None:
    backend_ready(backend)
    proc, marks = batch(tmp_path, backend, fault, "first")
    hung = wait_for_mark(proc, marks, fault)
    proc.send_signal(getattr(signal, stop))
    try:
        proc.communicate(timeout=ENDS_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # the driver prints every thread's stack
        time.sleep(1)
        proc.kill()
        proc.communicate()
        stacks = (tmp_path / "stderr-first").read_text(errors="replace")
        raise AssertionError(f"the batch waited after the signal: {stacks[-6000:]}") from None
    stderr = (tmp_path / "stderr-first").read_text(errors="replace")
    assert proc.returncode == EXIT[stop], stderr
    assert "Traceback" not in stderr, stderr
    # The process ended while the hang it met was still pending.
    assert "done" not in marks.read_text().split("\n")

    # Every item that began has a record; none claims a result it does not have.
    home = tmp_path / "home"
    written = records(home)
    assert written, stderr
    latest = {r["item_id"]: r for r in written}
    unfinished = [r for r in latest.values() if not r["final"]]
    assert unfinished, latest  # something was in flight when the signal came
    assert all(r["status"] == "interrupted" for r in unfinished), unfinished
    for record in unfinished:
        if record["transcript"]:  # its run began: the transcript is there to resume from
            assert (next(home.rglob("results.jsonl")).parent / record["transcript"]).exists()

    # What it left behind is removed without it.
    if backend == "docker":
        assert gone(lambda: not containers_of(proc.pid)), containers_of(proc.pid)
    elif fault == "start":
        pids = [int(line.split()[1]) for line in hung if len(line.split()) > 1]
        assert pids and gone(lambda: not any(Path(f"/proc/{p}").exists() for p in pids))

    # The next start runs what was interrupted, and the batch completes.
    again, _ = batch(tmp_path, backend, "", "again")
    again.communicate(timeout=600)
    stderr = (tmp_path / "stderr-again").read_text(errors="replace")
    assert again.returncode in (0, 3), stderr  # 3: no answer scored (the demo may miss)
    final = {r["item_id"] for r in records(home) if r["final"]}
    assert final == {f"p{n}" for n in range(len(PUZZLES))}
