"""The runner's supervision of one cell: fork it ahead, feed it, watch it, clear up.

Imported by sandbox/runner/main.py and shipped beside it (standard library only). The
runner may run as root in the sandbox (it then drops each cell to the sandbox's own
unprivileged uid, so nothing the cell can signal, trace or open under /proc is the
runner) or, where it cannot, as the cell's uid itself.

The runner is the sandbox's child subreaper: whatever a cell leaves behind is killed
after it and, orphaned, becomes the runner's child, which it reaps before the next cell
(so no zombie of one cell takes a process slot from the next). While a cell runs, the
runner also watches the host's end of its request stream: when the host is gone (it
exited or was killed, and the pipe or attach stream closed), the cell is killed at once
and the runner ends, instead of letting the cell run to its timeout.
"""

from __future__ import annotations

import base64
import json
import os
import selectors
import signal
import struct
import time

# A script-path import (see runner.py); mypy checks the file as sandbox.runner.child.
from child import CellSetup, zygote_main  # type: ignore[import-not-found]

CHUNK = 65536
# Killed children may still be tearing down their memory: how long to wait for them.
REAP_WAIT_S = 5.0


class HostGone(Exception):
    """The host closed its end of the request stream: nobody will read a result."""


class HostLink:
    """The runner's end of the host's request stream, buffered.

    Read between cells for the next request, and watched during a cell: bytes that
    arrive then are kept for later, and end-of-stream means the host is gone.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = bytearray()
        self.closed = False

    def fill(self) -> bool:
        """One read of what is there; False once the host has closed its end."""
        if self.closed:
            return False
        try:
            chunk = os.read(self.fd, CHUNK)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.pending += chunk
        return True

    def read_exactly(self, size: int) -> bytes | None:
        """`size` bytes (blocking until they came), None when the stream ended first."""
        while len(self.pending) < size:
            if not self.fill():
                return None
        data = bytes(self.pending[:size])
        del self.pending[:size]
        return data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# --- output capture ----------------------------------------------------------------


class HeadTail:
    """Keeps the first and last `keep // 2` bytes of a stream and counts all of it."""

    def __init__(self, keep: int) -> None:
        self.half = keep // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def to_dict(self) -> dict:
        return {
            "head": base64.b64encode(bytes(self.head)).decode(),
            "tail": base64.b64encode(bytes(self.tail)).decode(),
            "bytes": self.total,
        }


# --- memory accounting -------------------------------------------------------------


def oom_kill_count() -> int | None:
    """The container's cgroup OOM-kill counter (v2 or v1), None when unreadable."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as handle:
                for line in handle:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


# --- the parent side ---------------------------------------------------------------


class Zygote:
    """A forked child waiting for its cell, and the parent's ends of its pipes."""

    def __init__(self, setup: CellSetup) -> None:
        control_r, self.control_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.done_r, done_w = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (control_r, out_w, err_w, done_w, self.control_w, self.out_r, self.err_r):
                os.close(fd)
            os.close(self.done_r)
            raise
        if self.pid == 0:
            zygote_main(control_r, out_w, err_w, done_w, setup)
        for fd in (control_r, out_w, err_w, done_w):
            os.close(fd)

    def close_fds(self) -> None:
        for fd in (self.control_w, self.out_r, self.err_r, self.done_r):
            if fd >= 0:
                os.close(fd)
        self.control_w = self.out_r = self.err_r = self.done_r = -1


class Runner:
    def __init__(self, setup: CellSetup, kill_strays: bool, link: HostLink | None = None) -> None:
        self.setup = setup
        self.link = link  # watched during a cell: the host gone means the cell dies now
        # Killing every process we may signal but us (and init) is only safe when we
        # are the sandbox's sole process under its init, never on a host.
        self.kill_strays = kill_strays and os.getppid() == 1
        self.zygote: Zygote | None = None
        self.finished: Zygote | None = None
        self.unreaped: set[int] = set()  # killed children, maybe still tearing down

    def prepare(self) -> None:
        """Between executions: clear leftovers, fork the next child, reap what ended.

        Runs after the reply went out. The killed child is reaped last: tearing down
        an address space of this size takes milliseconds, which the fork overlaps.
        Every other child is reaped too: as the subreaper the runner inherits whatever
        a cell orphaned (or made its child by any means), and their zombies would
        otherwise hold process slots for the sandbox's life.
        """
        if self.finished is not None:
            self.unreaped.add(self.finished.pid)
            self.finished = None
            self._kill_leftovers()
        if self.zygote is None:
            self.zygote = self._fork_zygote()
        self.reap_all()
        if self.zygote is None:  # the waiting child died meanwhile: another one
            self.zygote = self._fork_zygote()

    def _fork_zygote(self) -> Zygote:
        """The next child. A cell may have filled the sandbox's process limit with
        processes that are now zombies of ours (we adopted them): their slots come back
        only once they are reaped, so a refused fork waits for that and tries again."""
        deadline = time.monotonic() + REAP_WAIT_S
        while True:
            try:
                return Zygote(self.setup)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise
                self.reap_all(wait=False)
                time.sleep(0.005)

    def reap_all(self, *, wait: bool = True) -> None:
        """Reap every child that ended and (`wait`) wait for those we killed to end.

        The waiting child (the zygote) is left alone; if it died instead, it is reaped
        like the rest (and `prepare` forks another).
        """
        deadline = time.monotonic() + (REAP_WAIT_S if wait else 0.0)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
            if pid > 0:
                self.unreaped.discard(pid)
                if self.zygote is not None and pid == self.zygote.pid:
                    self.zygote.close_fds()
                    self.zygote = None
                continue
            if pid < 0 or not self.unreaped:
                break
            self.unreaped &= _children_of(os.getpid())
            if not self.unreaped or time.monotonic() > deadline:
                break
            time.sleep(0.001)

    def abandon(self) -> None:
        """The host is gone: kill everything of the sandbox we can, reap, and return."""
        if self.zygote is not None:
            with _suppressed():
                os.kill(self.zygote.pid, signal.SIGKILL)
            self.unreaped.add(self.zygote.pid)
            self.zygote.close_fds()
            self.zygote = None
        self._kill_leftovers()
        self.reap_all()

    def execute(self, request: dict) -> dict:
        self.prepare()
        child, self.zygote = self.zygote, None
        assert child is not None
        self.finished = child
        timeout = float(request.get("timeout", 10.0))
        keep = int(request.get("keep_bytes", 65536))
        hard_cap = int(request.get("hard_cap_bytes", 16 * 1024 * 1024))
        oom_before = oom_kill_count()
        started = time.monotonic()
        try:
            write_all(child.control_w, json.dumps(request).encode())
        except OSError:
            pass  # the child is gone; supervision reports how it ended
        os.close(child.control_w)
        child.control_w = -1
        stdout, stderr = HeadTail(keep), HeadTail(keep)
        streams = {child.out_r: stdout, child.err_r: stderr}
        outcome = self._supervise(child, streams, started + timeout, hard_cap)
        duration = time.monotonic() - started
        status = outcome["status"]
        killed_by_us = outcome["timed_out"] or outcome["output_limit_hit"]
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        oom_after = oom_kill_count()
        if oom_before is not None and oom_after is not None:
            oom = oom_after > oom_before
        else:
            oom = signum == signal.SIGKILL and not killed_by_us
        return {
            "op": "result",
            "stdout": stdout.to_dict(),
            "stderr": stderr.to_dict(),
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": signum,
            "timed_out": outcome["timed_out"],
            "oom_killed": oom and not outcome["timed_out"],
            "output_limit_hit": outcome["output_limit_hit"],
            "duration_s": duration,
        }

    def _supervise(self, child: Zygote, streams: dict, deadline: float, hard_cap: int) -> dict:
        selector = selectors.DefaultSelector()
        for fd in (*streams, child.done_r):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        pidfd = _pidfd(child.pid)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ)
        link = self.link
        if link is not None and not link.closed:
            selector.register(link.fd, selectors.EVENT_READ)
        status: int | None = None
        timed_out = flooded = host_gone = False
        drain_until: float | None = None
        while True:
            if status is not None and not any(fd in selector.get_map() for fd in streams):
                break
            now = time.monotonic()
            if status is None and now >= deadline:
                timed_out = True
                break
            if drain_until is not None and now >= drain_until:
                break
            wait = (drain_until or deadline) - now
            if pidfd is None and status is None:
                wait = min(wait, 0.005)
            for key, _ in selector.select(timeout=max(wait, 0)):
                if key.fd == pidfd:
                    selector.unregister(pidfd)
                    continue
                if link is not None and key.fd == link.fd:
                    if not link.fill():
                        selector.unregister(link.fd)
                        host_gone = True
                    continue
                if key.fd == child.done_r:
                    selector.unregister(child.done_r)
                    reported = _read_some(child.done_r)
                    if reported and len(reported) == 4 and status is None:
                        # The child's own report: exit status in wait() encoding.
                        status = (struct.unpack(">i", reported)[0] & 0xFF) << 8
                    continue
                chunk = _read_some(key.fd)
                if chunk is None:
                    continue
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                streams[key.fd].feed(chunk)
                if sum(s.total for s in streams.values()) > hard_cap:
                    flooded = True
            if flooded or host_gone:
                break
            if status is None:
                reaped, raw = os.waitpid(child.pid, os.WNOHANG)
                if reaped:
                    status = raw
                    self.finished = None
            if status is not None and drain_until is None:
                # The cell is done: its leftovers die now, so the pipes reach EOF.
                self._kill_leftovers(child.pid)
                drain_until = time.monotonic() + 1.0
        self._kill_leftovers(child.pid)
        if host_gone:
            selector.close()
            if pidfd is not None:
                os.close(pidfd)
            raise HostGone("the host closed the request stream during a cell")
        if status is None:
            _, status = os.waitpid(child.pid, 0)
            self.finished = None
        for fd, stream in streams.items():
            if not flooded:
                _drain(fd, stream)
        child.close_fds()
        selector.close()
        if pidfd is not None:
            os.close(pidfd)
        return {"status": status, "timed_out": timed_out, "output_limit_hit": flooded}

    def _kill_leftovers(self, group: int | None = None) -> None:
        """Kill the child's process group and every stray process of the sandbox."""
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not self.kill_strays:
            return
        # kill(-1) reaches every process we may signal except ourselves and init (as
        # root in the sandbox: every other process; as the cell's uid: the cell's);
        # repeat until none is left alive, since a fork bomb races the first pass.
        # Children already killed may still be tearing down their memory: we do not
        # wait for that.
        ignore = self.unreaped | ({group} if group is not None else set())
        for _ in range(500):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if not _live_others(ignore):
                return
            time.sleep(0.001)


class _suppressed:
    """Ignore a process that is gone or not ours (a context manager, stdlib only)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, *_rest: object) -> bool:
        return kind in (ProcessLookupError, PermissionError, ChildProcessError)


def _children_of(parent: int) -> set[int]:
    """Pids whose parent is `parent` (any state, zombies included)."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                ppid = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent:
            found.add(int(name))
    return found


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _read_some(fd: int) -> bytes | None:
    """A chunk, b"" at end of stream, or None when nothing is ready yet."""
    try:
        return os.read(fd, CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _drain(fd: int, stream: HeadTail) -> None:
    """Whatever is still buffered in a pipe (at most a few pipes' worth, so a writer
    that escaped the kill cannot keep us here)."""
    for _ in range(64):
        try:
            chunk = os.read(fd, CHUNK)
        except (BlockingIOError, OSError):
            return
        if not chunk:
            return
        stream.feed(chunk)


def _live_others(ignore: set[int]) -> bool:
    skip = {1, os.getpid(), *ignore}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            return True
    return False
