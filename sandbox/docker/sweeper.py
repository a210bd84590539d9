"""Removing our sandbox containers that nobody will use again.

Every container we start carries labels: that it is ours, which process on which host
owns it (pid plus the process's start time, so a recycled pid is not mistaken for the
owner), when it was created and how long it may live. `sweep` removes those whose
owner is gone, whose lifetime has passed, or that stopped; it runs when the Docker
backend first starts in a process and again at exit. Containers of other hosts are
removed only once their lifetime is over: we cannot see their owners.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("conductor.sandbox")

LABEL = "conductor.sandbox"
OWNER_PID = "conductor.owner_pid"
OWNER_START = "conductor.owner_start"
OWNER_HOST = "conductor.owner_host"
CREATED = "conductor.created"
LIFETIME = "conductor.lifetime_s"


def process_start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" when unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()  # field 22 of stat; 2 fields precede the split
    except (OSError, IndexError):
        return ""


def owner_labels(lifetime_s: float, *, label: str = LABEL) -> dict[str, str]:
    """The labels that mark a new container as ours and say who owns it until when.

    `label` is the marker the sweeper looks for; tests pass one of their own, so that
    no other conductor process's sweeper touches their containers, nor theirs others'.
    """
    pid = os.getpid()
    return {
        label: "1",
        OWNER_PID: str(pid),
        OWNER_START: process_start_ticks(pid),
        OWNER_HOST: socket.gethostname(),
        CREATED: f"{time.time():.0f}",
        LIFETIME: f"{lifetime_s:.0f}",
    }


def owner_alive(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels.get(OWNER_PID, ""))
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    recorded = labels.get(OWNER_START, "")
    return not recorded or recorded == process_start_ticks(pid)


def stale_reason(
    labels: Mapping[str, str],
    state: str,
    *,
    now: float,
    host: str,
    exiting_pid: int | None = None,
) -> str | None:
    """Why a container of ours should go, or None to keep it."""
    if state in ("exited", "dead"):
        return "stopped"
    try:
        expires = float(labels.get(CREATED, "0")) + float(labels.get(LIFETIME, "0"))
    except ValueError:
        expires = 0.0
    if now > expires:
        return "lifetime passed"
    if labels.get(OWNER_HOST) != host:
        return None
    if exiting_pid is not None and labels.get(OWNER_PID) == str(exiting_pid):
        return "owner exiting"
    if not owner_alive(labels):
        return "owner gone"
    return None


def sweep(client: Any, *, exiting: bool = False, label: str = LABEL) -> list[tuple[str, str]]:
    """Remove stale containers marked `label`; return (short id, reason) for each removed."""
    import docker.errors

    removed = []
    host, now = socket.gethostname(), time.time()
    for summary in client.api.containers(all=True, filters={"label": f"{label}=1"}):
        labels = summary.get("Labels") or {}
        reason = stale_reason(
            labels,
            summary.get("State", ""),
            now=now,
            host=host,
            exiting_pid=os.getpid() if exiting else None,
        )
        if reason is None:
            continue
        try:
            client.api.remove_container(summary["Id"], force=True)
            removed.append((summary["Id"][:12], reason))
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            log.debug("sweeper could not remove %s: %s", summary["Id"][:12], exc)
    if removed:
        log.info("removed %d stale sandbox container(s): %s", len(removed), removed)
    return removed


_started = False
_started_lock = threading.Lock()


def sweep_once_per_process(client: Any) -> None:
    """Sweep now (first use in this process) and register the sweep at exit."""
    global _started
    with _started_lock:
        if _started:
            return
        _started = True
    try:
        sweep(client)
    except Exception as exc:  # cleanup must never stop a run
        log.warning("sandbox sweep at start-up failed: %s", exc)
    atexit.register(_sweep_at_exit, client)


def _sweep_at_exit(client: Any) -> None:
    from sandbox.docker import reaper
    from sandbox.docker.pool import close_all_pools

    if reaper.leaving():
        return  # left on a stop signal: the reaper removes our containers once we are gone

    close_all_pools()
    try:
        sweep(client, exiting=True)
    except Exception as exc:
        log.debug("sandbox sweep at exit failed: %s", exc)
