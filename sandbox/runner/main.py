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
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import struct
import sys
import time

# The child side lives beside this file (also in the image); -I leaves the script's
# directory off sys.path, so add it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# mypy checks these two files as sandbox.runner.child / sandbox.runner.supervise.
from child import CellSetup, set_dumpable  # type: ignore[import-not-found]
from supervise import Runner, write_all  # type: ignore[import-not-found]

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
    write_all(fd, struct.pack(">I", len(body)) + body)


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
    parser.add_argument("--cell-uid", type=int, help="run each cell as this uid (needs root)")
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
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    if args.lifetime > 0:
        signal.alarm(int(args.lifetime) + 1)  # default action: the runner ends

    started = time.monotonic()
    loaded = [] if args.no_preload else preload(PRELOAD)
    gc.collect()
    gc.freeze()  # children then leave the preloaded objects' pages shared
    preload_s = time.monotonic() - started
    runner = Runner(setup, args.kill_strays)
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
            reply = {
                "op": "pong",
                "preload_s": preload_s,
                "modules": loaded,
                "runner_uid": os.getuid(),
                "cell_uid": setup.uid if setup.uid is not None else os.getuid(),
            }
        elif request.get("op") == "run":
            reply = runner.execute(request)
        else:
            reply = {"op": "error", "message": f"unknown op {request.get('op')!r}"}
        reply["id"] = request.get("id")
        write_frame(proto_out, reply)
        runner.prepare()  # reap and pre-fork now, while the host reads the reply


if __name__ == "__main__":
    sys.exit(main())
