"""A cgroup per bubblewrap sandbox: one memory and process bound for all of it.

Per-process rlimits cannot bound a sandbox as a whole (memfds, shared memory and
socket buffers belong to no single process's address space). A memory cgroup can: it
charges every page the sandbox's processes cause, shmem and memfd included, and the
kernel OOM-kills inside it. It is also a handle to the whole sandbox that nothing
inside can shed: the host kills every process listed in it.

Where a cgroup can be had:
- cgroup v2 with delegation: a child of our own cgroup, if we may write there
  (memory.max, memory.swap.max, pids.max; cgroup.kill);
- cgroup v1 as root (this project's CI): children of our own memory and pids cgroups
  (memory.limit_in_bytes, memory.memsw.limit_in_bytes, pids.max).
Otherwise `SandboxCgroup.create` returns None and `why_none()` says why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


# Socket buffers a sandbox may hold (cgroup v1 only; see create).
TCP_BYTES = 64 * 1024 * 1024
PREFIX = "conductor-sandbox-"
# A sandbox cgroup this old and empty was left by a host that was killed (kill -9 ends
# the sandbox's processes, bwrap dies with its parent, but nobody removes the directory).
STALE_AFTER_S = 60.0


def _own_paths() -> dict[str, str]:
    """controller ("" for v2) -> our cgroup's path, from /proc/self/cgroup."""
    paths = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def version() -> int | None:
    """2 for a unified hierarchy, 1 for a v1 memory controller, None for neither."""
    if (ROOT / "cgroup.controllers").exists():
        return 2
    if (ROOT / "memory").is_dir():
        return 1
    return None


def _v2_parent() -> Path | None:
    own = _own_paths().get("")
    if own is None:
        return None
    parent = ROOT / own.lstrip("/")
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if not {"memory", "pids"} <= set(enabled) or not os.access(parent, os.W_OK):
        return None
    return parent


def _v1_parents() -> dict[str, Path] | None:
    if os.geteuid() != 0:
        return None
    own = _own_paths()
    parents: dict[str, Path] = {}
    for controller in ("memory", "pids"):
        base = ROOT / controller
        if controller not in own or not base.is_dir():
            return None
        parents[controller] = base / own[controller].lstrip("/")
    return parents


def why_none() -> str | None:
    """None when sandboxes get a cgroup here; otherwise why not."""
    found = version()
    if found is None:
        return "no cgroup file system at /sys/fs/cgroup"
    if found == 2 and _v2_parent() is None:
        return "cgroup v2 without delegation of memory and pids to us"
    if found == 1 and _v1_parents() is None:
        return "cgroup v1 needs root (or no memory/pids controller)"
    return None


@dataclass
class SandboxCgroup:
    """The cgroup directories of one sandbox (one per controller on v1)."""

    dirs: dict[str, Path]
    unified: bool

    @classmethod
    def create(cls, memory_bytes: int, max_pids: int) -> SandboxCgroup | None:
        name = f"{PREFIX}{secrets.token_hex(6)}"
        found = version()
        try:
            if found == 2 and (parent := _v2_parent()) is not None:
                remove_stale([parent])
                group = cls({"": parent / name}, unified=True)
                group.dirs[""].mkdir()
                group._write("", "memory.max", memory_bytes)
                group._write("", "memory.swap.max", 0, optional=True)
                group._write("", "pids.max", max_pids)
                return group
            if found == 1 and (parents := _v1_parents()) is not None:
                remove_stale(list(parents.values()))
                group = cls({c: p / name for c, p in parents.items()}, unified=False)
                for path in group.dirs.values():
                    path.mkdir()
                group._write("memory", "memory.limit_in_bytes", memory_bytes)
                group._write("memory", "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
                group._write("pids", "pids.max", max_pids)
                # v1 charges TCP buffers to no memory limit unless this is set (before
                # any socket exists): without it a sandbox held 1.3 GB of the host's
                # global tcp_mem. v2 charges them to memory.max by itself.
                group._write("memory", "memory.kmem.tcp.limit_in_bytes", TCP_BYTES, optional=True)
                return group
        except OSError:
            return None
        return None

    def _write(self, controller: str, key: str, value: int, *, optional: bool = False) -> None:
        try:
            (self.dirs[controller] / key).write_text(str(value))
        except OSError:
            if not optional:
                self.remove()
                raise

    def join_paths(self) -> list[str]:
        """The cgroup.procs files a starting process writes itself into (pre-exec)."""
        return [str(path / "cgroup.procs") for path in self.dirs.values()]

    def pids(self) -> list[int]:
        path = self.dirs["" if self.unified else "pids"] / "cgroup.procs"
        try:
            return [int(line) for line in path.read_text().split()]
        except (OSError, ValueError):
            return []

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed in this sandbox so far."""
        events = "memory.events" if self.unified else "memory.oom_control"
        path = self.dirs["" if self.unified else "memory"] / events
        try:
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until none is left; False if some stayed."""
        if self.unified:
            with contextlib.suppress(OSError):
                (self.dirs[""] / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        while pids := self.pids():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def remove(self) -> None:
        for path in self.dirs.values():
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last processes are still exiting


def remove_stale(parents: list[Path], *, older_than: float = STALE_AFTER_S) -> list[Path]:
    """Remove empty sandbox cgroups older than `older_than` under `parents` (what a
    killed host left); a cgroup with a process in it cannot be removed, and a young one
    may be another host's sandbox just starting, so both stay."""
    removed = []
    now = time.time()
    for parent in parents:
        try:
            candidates = [d for d in parent.iterdir() if d.name.startswith(PREFIX)]
        except OSError:
            continue
        for directory in candidates:
            try:
                if now - directory.stat().st_mtime < older_than:
                    continue
                directory.rmdir()  # fails (EBUSY) while any process is in it
                removed.append(directory)
            except OSError:
                continue
    return removed


def limit_tcp_of(pid: int, limit: int = TCP_BYTES) -> bool:
    """Cap the TCP buffers of `pid`'s v1 memory cgroup (a Docker container's, whose
    engine ignores KernelMemoryTCP under runc 1.1). Call before anything in it opened
    a TCP socket: v1 accounts only sockets created after the cap is set. False when it
    could not be done (v2 needs nothing; without root the host cannot write it)."""
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            for line in handle:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "memory" in controllers.split(","):
                    target = ROOT / "memory" / path.lstrip("/")
                    (target / "memory.kmem.tcp.limit_in_bytes").write_text(str(limit))
                    return True
    except (OSError, ValueError):
        return False
    return False


def memory_counters_of(pid: int) -> dict[str, int]:
    """The memory counters of `pid`'s cgroup, in bytes: "memory" (everything charged to
    its memory limit, kernel memory included), "kernel" (the kernel's part of it) and,
    on cgroup v1, "tcp" (socket buffers, which v1 counts apart, against their own
    limit). Empty when they cannot be read (no cgroup, not root)."""
    counters: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return counters
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            base = ROOT / path.lstrip("/")
            _read_into(counters, "memory", base / "memory.current")
            stat = _stat(base / "memory.stat")
            if "kernel" in stat:
                counters["kernel"] = stat["kernel"]
        elif "memory" in controllers.split(","):
            base = ROOT / "memory" / path.lstrip("/")
            _read_into(counters, "memory", base / "memory.usage_in_bytes")
            _read_into(counters, "kernel", base / "memory.kmem.usage_in_bytes")
            _read_into(counters, "tcp", base / "memory.kmem.tcp.usage_in_bytes")
    return counters


def _read_into(counters: dict[str, int], key: str, file: Path) -> None:
    try:
        counters[key] = int(file.read_text())
    except (OSError, ValueError):
        pass


def _stat(file: Path) -> dict[str, int]:
    try:
        pairs = (line.split() for line in file.read_text().splitlines())
        return {key: int(value) for key, value in pairs}
    except (OSError, ValueError):
        return {}
