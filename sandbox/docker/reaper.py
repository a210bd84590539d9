"""Removing a leaving process's sandbox containers from outside it.

A batch stopped by a signal must exit at once, but removing its containers one API call
at a time takes seconds (more under load). So it starts this reaper, a process of its
own session that outlives it: the reaper waits for its owner to end, then removes
every container whose owner is gone (`sweeper.sweep`), twice, because a container whose
creation was in flight when the owner died shows up a moment later. Whatever still
escapes is removed by the next Docker start's sweep.

    python -m sandbox.docker.reaper OWNER_PID OWNER_START [LABEL]
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

from sandbox.docker import sweeper

log = logging.getLogger("conductor.sandbox")

# How long the reaper waits for its owner to end, and its sweeps after that.
OWNER_WAIT_S = 600.0
SWEEP_AFTER_S = (0.0, 3.0)

_spawned: list[subprocess.Popen[bytes]] = []
_spawn_lock = threading.Lock()


def leaving() -> bool:
    """Whether this process handed its containers to a reaper (its exit skips the sweep)."""
    return bool(_spawned)


def spawn(label: str = sweeper.LABEL) -> subprocess.Popen[bytes] | None:
    """Start the reaper for this process (once); None when it cannot start."""
    with _spawn_lock:
        if _spawned:
            return _spawned[0]
        pid = os.getpid()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "sandbox.docker.reaper", str(pid),
                 sweeper.process_start_ticks(pid), label],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C does not reach it
                close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            log.warning("could not start the sandbox reaper: %s", exc)
            return None
        _spawned.append(proc)
        return proc


def leave_quickly() -> None:
    """Stop starting containers, give up the warm spares and hand everything to the
    reaper; nothing here waits on Docker."""
    from sandbox.docker.pool import abandon_all_pools

    abandon_all_pools()
    spawn()


def owner_alive(pid: int, start: str) -> bool:
    ticks = sweeper.process_start_ticks(pid)
    return bool(ticks) and (not start or ticks == start)


def main(argv: list[str]) -> int:
    pid, start = int(argv[0]), argv[1] if len(argv) > 1 else ""
    label = argv[2] if len(argv) > 2 else sweeper.LABEL
    give_up = time.monotonic() + OWNER_WAIT_S
    while owner_alive(pid, start) and time.monotonic() < give_up:
        time.sleep(0.05)
    from sandbox.docker.client import docker_client

    client = docker_client()
    for pause in SWEEP_AFTER_S:
        time.sleep(pause)
        try:
            sweeper.sweep(client, label=label)
        except Exception as exc:  # the daemon went away: the next start sweeps
            log.debug("reaper sweep failed: %s", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
