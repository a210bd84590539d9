"""The in-sandbox runner: preload once, then fork a fresh child per execution.

Runs inside the sandbox as its only process (under the init). It speaks
length-prefixed JSON frames on its stdin/stdout (a 4-byte big-endian length, then
UTF-8 JSON), which the host reaches through the container's attach stream, so no host
directory is ever shared with the code. Standard library only: it is copied into the
image with its one companion, child.py (the forked child's side).

Per execution the child starts from the preloaded interpreter (clean globals, modules
as imported), in its own session, with its own pipes for stdout and stderr, its rlimits
set afresh and, when the runner is root in the sandbox (`--cell-uid`), as the sandbox's
unprivileged uid: the runner and the sandbox's init are then out of the cell's reach
(no signal, ptrace, prlimit or /proc/PID/fd). The runner enforces the deadline by
killing the child's process group, caps the output (head and tail kept, every byte
counted, the run killed past a hard cap), and afterwards kills every other process
(daemons, strays) so the next execution starts clean (sandbox/runner/supervise.py).

Used by both backends: Docker attaches to its stdin/stdout; bubblewrap's are pipes.

At start, inside a sandbox, the runner makes itself the child subreaper (everything a
cell orphans becomes its child, to be killed and reaped between cells), keeps in its
capability bounding set only what it uses (each cell's is emptied), and, given
`--seccomp-bpf`, loads the sandbox's seccomp filter itself (Docker: the engine's
profile stays underneath; see sandbox/policy/seccomp.py for why).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import select
import signal
import struct
import sys
import threading
import time

# The child side lives beside this file (also in the image); -I leaves the script's
# directory off sys.path, so add it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# mypy checks these two files as sandbox.runner.child / sandbox.runner.supervise.
from child import LIBC, CellSetup, drop_bounding_set, set_dumpable  # type: ignore[import-not-found]
from supervise import HostGone, HostLink, Runner, write_all  # type: ignore[import-not-found]

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
# The libraries whose preload the host chooses (sandbox/preload.py keeps the same list).
HEAVY = ("numpy", "sympy")
MAX_FRAME_BYTES = 64 * 1024 * 1024
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
# What the runner itself uses (setuid/setgid to drop cells, kill to clear leftovers,
# setpcap to empty each cell's bounding set): CAP_KILL, SETGID, SETUID, SETPCAP.
RUNNER_CAPABILITIES = frozenset({5, 6, 7, 8})


# --- framing ---------------------------------------------------------------------


def read_frame(link: HostLink) -> dict | None:
    header = link.read_exactly(4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    body = link.read_exactly(size)
    return None if body is None else json.loads(body)


def write_frame(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    write_all(fd, struct.pack(">I", len(body)) + body)


# --- start-up ------------------------------------------------------------------------


def load_seccomp(program: bytes) -> None:
    """Load a classic-BPF seccomp filter (raw sock_filter bytes) on this process; every
    process forked afterwards inherits it. Raises OSError when the kernel refuses."""
    if LIBC is None or len(program) % 8:
        raise OSError("no libc, or the filter is not whole instructions")
    import ctypes  # only here: a root file system without libffi still runs cells

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"loading the seccomp filter: {os.strerror(err)}")


def watch_host(fd: int) -> None:
    """End the whole sandbox the moment the host is gone, whatever the runner is doing
    (preloading, waiting for a request, supervising a cell): a thread polls the request
    stream for hang-up only (no data is consumed), then kills every process it may and
    exits. Only inside a sandbox, where kill(-1) reaches the sandbox alone."""

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked: only hang-up and errors wake it
        while True:
            if any(
                mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                for _, mask in poller.poll()
            ):
                break
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)

    threading.Thread(target=watch, name="host-watch", daemon=True).start()


def harden_runner(seccomp_bpf: str | None) -> None:
    """Inside a sandbox: be the subreaper, keep only our capabilities, load the filter."""
    if LIBC is not None:
        LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.getuid() == 0:
        drop_bounding_set(keep=RUNNER_CAPABILITIES)
    if seccomp_bpf:
        load_seccomp(base64.b64decode(seccomp_bpf))


def chosen_preload(heavy: str | None) -> tuple[str, ...]:
    """PRELOAD, keeping of its heavy libraries only those named (all when None). The
    host decides from the cells it has sent (sandbox/preload.py)."""
    if heavy is None:
        return PRELOAD
    keep = {name.strip() for name in heavy.split(",")}
    return tuple(name for name in PRELOAD if name not in HEAVY or name in keep)


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
    parser.add_argument(
        "--preload",
        metavar="A,B",
        help="of the heavy libraries (numpy, sympy), preload only these (empty: none)",
    )
    parser.add_argument("--cell-uid", type=int, help="run each cell as this uid (needs root)")
    parser.add_argument("--seccomp-bpf", help="a seccomp filter to load (base64 sock_filter)")
    parser.add_argument(
        "--limit", action="append", default=[], metavar="NAME=N", help="an rlimit per cell"
    )
    args = parser.parse_args(argv)
    setup = CellSetup(
        workdir=args.workdir,
        uid=args.cell_uid,
        limits={k: int(v) for k, _, v in (item.partition("=") for item in args.limit)},
    )

    # The protocol keeps private copies of stdin/stdout; fds 0 and 1 become /dev/null
    # so nothing printed by a preloaded library can corrupt a frame.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    set_dumpable(0)
    if args.kill_strays or args.seccomp_bpf:  # inside a sandbox, not a host test
        harden_runner(args.seccomp_bpf)
    if args.kill_strays and os.getppid() == 1:  # the sandbox's only process under its init
        watch_host(proto_in)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    if args.lifetime > 0:
        signal.alarm(int(args.lifetime) + 1)  # default action: the runner ends

    started = time.monotonic()
    loaded = [] if args.no_preload else preload(chosen_preload(args.preload))
    gc.collect()
    gc.freeze()  # children then leave the preloaded objects' pages shared
    preload_s = time.monotonic() - started
    link = HostLink(proto_in)
    runner = Runner(setup, args.kill_strays, link)
    runner.prepare()
    while True:
        try:
            request = read_frame(link)
        except (ValueError, OSError) as exc:
            write_frame(proto_out, {"op": "error", "message": str(exc)})
            return 2
        if request is None:
            return 0
        reply: dict
        if request.get("op") == "ping":
            reply = {
                "op": "pong",
                "preload_s": preload_s,
                "modules": loaded,
                "runner_uid": os.getuid(),
                "cell_uid": setup.uid if setup.uid is not None else os.getuid(),
            }
        elif request.get("op") == "run":
            try:
                reply = runner.execute(request)
            except HostGone:
                runner.abandon()  # the cell is dead; nobody is left to answer
                return 0
        else:
            reply = {"op": "error", "message": f"unknown op {request.get('op')!r}"}
        reply["id"] = request.get("id")
        write_frame(proto_out, reply)
        runner.prepare()  # reap and pre-fork now, while the host reads the reply


if __name__ == "__main__":
    sys.exit(main())
