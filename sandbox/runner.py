"""The in-sandbox runner: preload once, then fork a fresh child per execution.

Runs inside the sandbox container as its only process (under the init). It speaks
length-prefixed JSON frames on its stdin/stdout (a 4-byte big-endian length, then
UTF-8 JSON), which the host reaches through the container's attach stream, so no host
directory is ever shared with the code. Standard library only: it is copied into the
image with its one companion, runner_child.py (the forked child's side).

Per execution the child starts from the preloaded interpreter (clean globals, modules
as imported), in its own session, with its own pipes for stdout and stderr. The runner
enforces the deadline by killing the child's process group, caps the output (head and
tail kept, every byte counted, the run killed past a hard cap), and afterwards kills
every other process of the sandbox user (daemons, strays) so the next execution
starts clean.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import selectors
import signal
import struct
import sys
import time

# The child side lives beside this file (also in the image); -I leaves the script's
# directory off sys.path, so add it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner_child import set_dumpable, zygote_main

PRELOAD = (
    "math",
    "cmath",
    "itertools",
    "functools",
    "fractions",
    "decimal",
    "collections",
    "statistics",
    "random",
    "re",
    "json",
    "string",
    "heapq",
    "bisect",
    "datetime",
    "typing",
    "dataclasses",
    "numpy",
    "sympy",
)
MAX_FRAME_BYTES = 64 * 1024 * 1024
CHUNK = 65536


# --- framing ---------------------------------------------------------------------


def read_exactly(fd: int, size: int) -> bytes | None:
    parts, need = [], size
    while need:
        chunk = os.read(fd, need)
        if not chunk:
            return None
        parts.append(chunk)
        need -= len(chunk)
    return b"".join(parts)


def read_frame(fd: int) -> dict | None:
    header = read_exactly(fd, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    body = read_exactly(fd, size)
    return None if body is None else json.loads(body)


def write_frame(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    _write_all(fd, struct.pack(">I", len(body)) + body)


def _write_all(fd: int, data: bytes) -> None:
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

    def __init__(self, workdir: str) -> None:
        control_r, self.control_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.done_r, done_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            zygote_main(control_r, out_w, err_w, done_w, workdir)
        for fd in (control_r, out_w, err_w, done_w):
            os.close(fd)

    def close_fds(self) -> None:
        for fd in (self.control_w, self.out_r, self.err_r, self.done_r):
            if fd >= 0:
                os.close(fd)
        self.control_w = self.out_r = self.err_r = self.done_r = -1


class Runner:
    def __init__(self, workdir: str, kill_strays: bool) -> None:
        self.workdir = workdir
        # Killing "every process of our user but us" is only safe when we are the
        # sandbox's sole process under its init, never on a host.
        self.kill_strays = kill_strays and os.getppid() == 1
        self.zygote: Zygote | None = None
        self.finished: Zygote | None = None
        self.unreaped: set[int] = set()  # killed children, maybe still tearing down

    def prepare(self) -> None:
        """Between executions: clear leftovers, fork the next child, reap what ended.

        Runs after the reply went out. The killed child is reaped last: tearing down
        an address space of this size takes milliseconds, which the fork overlaps.
        """
        if self.finished is not None:
            self.unreaped.add(self.finished.pid)
            self.finished = None
            self._kill_leftovers()
        if self.zygote is None:
            self.zygote = Zygote(self.workdir)
        for pid in list(self.unreaped):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            self.unreaped.discard(pid)

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
            _write_all(child.control_w, json.dumps(request).encode())
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
        status: int | None = None
        timed_out = flooded = False
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
            if flooded:
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
        # kill(-1) reaches every process we may signal except ourselves and init;
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


# --- start-up ------------------------------------------------------------------------


def preload(names: tuple[str, ...]) -> list[str]:
    loaded = []
    for name in names:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:
            continue
    if "sympy" in loaded:
        _warm_sympy()
    return loaded


def _warm_sympy() -> None:
    # The first solve/simplify imports a long tail of submodules lazily; pay it here,
    # once, instead of in every cell. What this leaves in sympy's cache is pure
    # memoisation (same inputs, same results), identical for every cell.
    import sympy

    x, y = sympy.symbols("x y")
    sympy.solve(x**2 - 3 * x + 1, x)
    sympy.solve([x + y - 3, x - y - 1], [x, y])
    sympy.simplify(sympy.sin(x) ** 2 + sympy.cos(x) ** 2)
    sympy.factor(x**3 - y**3)
    sympy.integrate(x * sympy.exp(x), x)
    sympy.Rational(3, 7) + sympy.sqrt(8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lifetime", type=float, default=0, help="exit after S seconds")
    parser.add_argument("--workdir", default=os.getcwd())
    parser.add_argument("--kill-strays", action="store_true")
    parser.add_argument("--no-preload", action="store_true")
    args = parser.parse_args(argv)

    # The protocol keeps private copies of stdin/stdout; fds 0 and 1 become /dev/null
    # so nothing printed by a preloaded library can corrupt a frame.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    set_dumpable(0)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    if args.lifetime > 0:
        signal.alarm(int(args.lifetime) + 1)  # default action: the runner ends

    started = time.monotonic()
    loaded = [] if args.no_preload else preload(PRELOAD)
    gc.collect()
    gc.freeze()  # children then leave the preloaded objects' pages shared
    preload_s = time.monotonic() - started
    runner = Runner(args.workdir, args.kill_strays)
    runner.prepare()
    while True:
        try:
            request = read_frame(proto_in)
        except (ValueError, OSError) as exc:
            write_frame(proto_out, {"op": "error", "message": str(exc)})
            return 2
        if request is None:
            return 0
        reply: dict
        if request.get("op") == "ping":
            reply = {"op": "pong", "preload_s": preload_s, "modules": loaded}
        elif request.get("op") == "run":
            reply = runner.execute(request)
        else:
            reply = {"op": "error", "message": f"unknown op {request.get('op')!r}"}
        reply["id"] = request.get("id")
        write_frame(proto_out, reply)
        runner.prepare()  # reap and pre-fork now, while the host reads the reply


if __name__ == "__main__":
    sys.exit(main())
