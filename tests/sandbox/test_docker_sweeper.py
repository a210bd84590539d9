"""Which of our containers the sweeper removes, decided from their labels alone."""

from __future__ import annotations

import os
import socket
import subprocess
import time

from sandbox.docker import sweeper

HOST = socket.gethostname()


def labels(**changes: str) -> dict[str, str]:
    return {**sweeper.owner_labels(3600), **changes}


def reason(found: dict[str, str], state: str = "running", **kwargs: object) -> str | None:
    return sweeper.stale_reason(found, state, now=time.time(), host=HOST, **kwargs)  # type: ignore[arg-type]


def test_a_live_owner_keeps_its_container() -> None:
    assert reason(labels()) is None


def test_a_dead_owner_loses_it() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    found = labels(**{sweeper.OWNER_PID: str(gone.pid)})
    found[sweeper.OWNER_START] = "1"  # a recycled pid cannot match this start time
    assert reason(found) == "owner gone"


def test_a_recycled_pid_is_not_mistaken_for_the_owner() -> None:
    found = labels(**{sweeper.OWNER_START: "12345"})  # our pid, another process's start
    assert sweeper.owner_alive(labels())
    assert reason(found) == "owner gone"


def test_lifetime_over_or_stopped_goes_whoever_owns_it() -> None:
    old = labels(**{sweeper.CREATED: f"{time.time() - 7200:.0f}"})
    assert reason(old) == "lifetime passed"
    assert reason(labels(), state="exited") == "stopped"
    assert reason(labels(**{sweeper.CREATED: "garbage"})) == "lifetime passed"


def test_another_hosts_container_is_left_until_its_lifetime_passes() -> None:
    elsewhere = labels(**{sweeper.OWNER_HOST: "other-host", sweeper.OWNER_PID: "999999"})
    assert reason(elsewhere) is None


def test_at_exit_the_owner_removes_its_own() -> None:
    assert reason(labels(), exiting_pid=os.getpid()) == "owner exiting"
    assert reason(labels(), exiting_pid=os.getpid() + 1) is None


def test_start_ticks_identify_a_running_process() -> None:
    ticks = sweeper.process_start_ticks(os.getpid())
    assert ticks.isdigit()
    assert sweeper.process_start_ticks(2**22 + 17) == ""
