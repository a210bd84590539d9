"""The child side of the sandbox runner: one fresh `__main__` per execution.

Imported by sandbox/runner/main.py and shipped beside it in the image (standard library
only). A child is forked from the preloaded runner ahead of time (a "zygote"): it
makes itself a clean, bounded process, waits for its one cell on a control pipe, runs
it as `python cell.py` would, and reports its exit status on a completion pipe.
"""

from __future__ import annotations

import builtins
import io
import json
import linecache
import os
import resource
import select
import signal
import struct
import sys
import traceback
import types
from dataclasses import dataclass, field

PR_SET_DUMPABLE = 4
PR_CAPBSET_READ, PR_CAPBSET_DROP = 23, 24
PR_SET_NO_NEW_PRIVS = 38
RLIMITS = {
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
    "as": resource.RLIMIT_AS,
    "core": resource.RLIMIT_CORE,
    "memlock": resource.RLIMIT_MEMLOCK,
    "msgqueue": resource.RLIMIT_MSGQUEUE,
    # Queued signals, and every POSIX timer (each holds one queued signal in advance):
    # the kernel memory they take is counted against this, per uid.
    "sigpending": resource.RLIMIT_SIGPENDING,
}


@dataclass(frozen=True)
class CellSetup:
    """What every cell gets: its work dir, its uid (None: the runner's), its rlimits."""

    workdir: str
    uid: int | None = None
    limits: dict[str, int] = field(default_factory=dict)


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


LIBC = _libc()


def set_dumpable(flag: int) -> None:
    # Non-dumpable: other processes of the same user cannot open /proc/<runner>/fd/*,
    # so code cannot reach the protocol pipes by reopening them.
    if LIBC is not None:
        LIBC.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0)


def _prctl(option: int, arg: int) -> int:
    """prctl(option, arg): its result, or -errno."""
    if LIBC is None:
        return -1
    import ctypes

    result = int(LIBC.prctl(option, arg, 0, 0, 0))
    return result if result >= 0 else -ctypes.get_errno()


def drop_bounding_set(keep: frozenset[int] = frozenset()) -> list[int]:
    """Drop every capability but `keep` from the bounding set; the ones left in it.

    The bounding set caps what any later exec can gain (a setuid-root or file-capability
    binary), whatever uid the process has then. Dropping needs CAP_SETPCAP; without it
    nothing changes and the caller sees what is left.
    """
    if LIBC is None:
        return [-1]  # cannot even read it: nothing is known to be dropped
    left = []
    for cap in range(64):
        held = _prctl(PR_CAPBSET_READ, cap)
        if held < 0:  # past the kernel's last capability
            break
        if held == 0:
            continue
        if cap in keep or _prctl(PR_CAPBSET_DROP, cap) < 0:
            left.append(cap)
    return left


def clear_capabilities() -> bool:
    """Empty this process's effective, permitted and inheritable capability sets."""
    if LIBC is None:
        return False
    import ctypes

    version_3 = 0x20080522
    header = (ctypes.c_uint32 * 2)(version_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two (effective, permitted, inheritable) triples
    return int(LIBC.capset(ctypes.byref(header), ctypes.byref(data))) == 0


# A child is forked ahead of time (a "zygote") and waits for its cell on a control
# pipe, so the fork, which costs milliseconds for a process holding numpy and sympy,
# is paid between executions instead of inside one.

CONTROL_FD, DONE_FD = 3, 4


def exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def zygote_main(control_r: int, out_w: int, err_w: int, done_w: int, setup: CellSetup) -> None:
    """In the forked child: prepare, wait for one cell, run it as `__main__`. Never returns."""
    status = 1
    try:
        os.setsid()
        _limit_and_drop(setup)
        set_dumpable(1)  # the cell's /proc entries are its own (and its OOM score below)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the kernel's OOM killer takes the cell, not us
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        for source, target in ((devnull, 0), (out_w, 1), (err_w, 2)):
            os.dup2(source, target)
        os.dup2(control_r, CONTROL_FD)
        os.dup2(done_w, DONE_FD)
        os.closerange(DONE_FD + 1, 65536)  # the protocol pipes never reach the cell
        os.chdir(setup.workdir)
        _fresh_interpreter_state()
        _touch_hot_pages(CONTROL_FD)
        request = _read_request(CONTROL_FD)
        os.close(CONTROL_FD)
        if request is None:
            os._exit(0)
        if request.get("stdin"):
            os.dup2(_memfd_with(request["stdin"]), 0)
        cpu = int(request["timeout"]) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        code = request["code"]
        linecache.cache["<cell>"] = (len(code), None, code.splitlines(True), "<cell>")
        status = _run_main(code, sys.modules["__main__"].__dict__)
        _finish_interpreter()
    except BaseException:
        try:
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        # Close our ends first so the runner sees EOF without waiting for the
        # (slow) teardown of this large address space, then report the status.
        for fd in (0, 1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.write(DONE_FD, struct.pack(">i", status))
        except OSError:
            pass
        os._exit(status)


def _limit_and_drop(setup: CellSetup) -> None:
    """Fresh rlimits for this cell, then (when the runner is root) the cell's own uid.

    Limits are set here on every fork, from the runner's arguments, so nothing an
    earlier cell did to its own limits carries over. Dropping from root to another uid
    clears every capability (and the bounding set is emptied first), and a process of
    another uid cannot signal, trace, prlimit or open /proc/PID/* of the runner or the
    init.
    """
    for name, value in setup.limits.items():
        resource.setrlimit(RLIMITS[name], (value, value))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)  # no exec may gain privileges (setuid bits, file caps)
    if setup.uid is not None and os.getuid() != setup.uid:
        # Before the uid changes, while CAP_SETPCAP is still effective: an empty bounding
        # set, so nothing the cell runs can ever hold a capability.
        if drop_bounding_set():
            raise SystemExit("could not empty the cell's capability bounding set")
        os.setgroups([])
        os.setresgid(setup.uid, setup.uid, setup.uid)
        os.setresuid(setup.uid, setup.uid, setup.uid)
        if os.getresuid() != (setup.uid,) * 3:
            raise SystemExit("could not drop to the cell's uid")
        # The uid change cleared the permitted, effective and ambient sets; the
        # inheritable set survives it, so it is emptied too.
        if not clear_capabilities():
            raise SystemExit("could not clear the cell's capability sets")


def _fresh_interpreter_state() -> None:
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8"
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        write_through=True,
    )
    # typeshed marks the dunder streams Final; the cell must see its own streams there too.
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    sys.argv = ["<cell>"]
    numpy_random = getattr(sys.modules.get("numpy"), "random", None)
    if numpy_random is not None:
        numpy_random.seed()  # a forked child would otherwise repeat the parent's draws
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main


def _touch_hot_pages(control_fd: int) -> None:
    """While idle, do a little symbolic work so the pages it writes (reference counts,
    caches) are copied now rather than during the cell: every write to a page shared
    with the runner costs a copy-on-write fault, and a first solve takes dozens.
    Stops as soon as a cell is waiting, so a cell never queues behind it for long."""
    sympy = sys.modules.get("sympy")
    if sympy is None:
        return
    t = sympy.Symbol("t")
    steps = (
        lambda: sympy.solve(t**2 - 5 * t + 3, t),
        lambda: sympy.simplify((t**2 - 1) / (t - 1)),
    )
    for step in steps:
        if select.select([control_fd], [], [], 0)[0]:
            return
        try:
            step()
        except Exception:
            pass


def _memfd_with(text: str) -> int:
    # A memfd holds all of stdin at once: the cell reads at its pace, nobody blocks.
    fd = os.memfd_create("stdin")
    data = memoryview(text.encode())
    while data:
        data = data[os.write(fd, data) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _run_main(code: str, namespace: dict) -> int:
    """Run the cell as `python cell.py` would; report errors the way it does."""
    try:
        compiled = compile(code, "<cell>", "exec")
    except SyntaxError as exc:
        traceback.print_exception(type(exc), exc, None)
        return 1
    try:
        exec(compiled, namespace)
    except SystemExit as exc:
        return exit_status(exc)
    except BaseException as exc:
        # Skip our own frame so the traceback starts in the cell, as in a script.
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        traceback.print_exception(type(exc), exc, tb)
        return 1
    return 0


def _finish_interpreter() -> None:
    # What a normal interpreter exit does: wait for threads, run atexit handlers.
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()


def _read_request(fd: int) -> dict | None:
    """The runner writes one JSON request and closes the pipe; None if it never did."""
    parts = []
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return json.loads(b"".join(parts)) if parts else None
