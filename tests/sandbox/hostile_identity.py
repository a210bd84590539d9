"""Hostile cases: a sandbox's identity on the host is its own.

The suite this answers found every Docker sandbox running as host uid 10001, so one
run's use of per-user kernel limits (inotify instances) starved a concurrent run.
These cases take such per-user resources and check the sandbox's uid; the concurrent
check itself is tests/sandbox/test_isolation.py.
"""

from __future__ import annotations

from hostile_base import C, all_of, blocked, exits, limit_reached, prints

from conductor_kernel.interfaces import ExecResult


def _own_uid(r: ExecResult, fill: dict[str, str]) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    uid = int(r.stdout.split("uid", 1)[1].split()[0])
    assert uid != 0 and str(uid) != fill["HOST_EUID"], f"runs as uid {uid}"
    if fill["HOST_EUID"] == "0":
        assert uid >= 2_000_000_000, f"uid {uid} is not one of a sandbox's own"


IDENTITY = [
    C(
        "sandbox_uid",
        "reports its uid: a host uid of this sandbox alone (root hosts)",
        'import os\nprint("uid", os.getuid(), "gid", os.getgid(), "groups", os.getgroups())\n',
        _own_uid,
    ),
    C(
        "inotify_exhaustion",
        "creates inotify instances until refused and keeps them",
        """
import ctypes
n = 0
try:
    while n < 100000:
        libc("inotify_init1", 0)
        n += 1
except OSError as exc:
    print("LIMIT inotify", n, exc.errno, flush=True)
""",
        limit_reached("inotify", 100000),
        follow_up="""
import ctypes
print("fd", ctypes.CDLL(None, use_errno=True).inotify_init1(0) >= 0)
""",
        follow_expect=all_of(exits(0), prints("fd True")),
    ),
    C(
        "inotify_daemon",
        "leaves a daemon holding every inotify instance it can get",
        """
import ctypes, os, time
if os.fork() == 0:
    os.setsid()
    lib = ctypes.CDLL(None)
    while lib.inotify_init1(0) >= 0:
        pass
    time.sleep(60)
time.sleep(0.3)
print("daemon holds them")
""",
        all_of(exits(0), prints("daemon holds them")),
        follow_up="""
import ctypes
print("fd", ctypes.CDLL(None, use_errno=True).inotify_init1(0) >= 0)
""",
        follow_expect=all_of(exits(0), prints("fd True")),
    ),
    C(
        "setuid_elsewhere",
        "tries to become root, uid 10001, and the uid next to its own",
        """
import os
me = os.getuid()
for uid in (0, 10001, me + 1, me - 1):
    attempt(f"setuid{uid}", lambda: os.setresuid(uid, uid, uid))
""",
        blocked(4),
    ),
    C(
        "user_namespace",
        "creates a user namespace (which would map it to root inside)",
        """
attempt("unshare", lambda: libc("unshare", 0x10000000))
attempt("clone", lambda: syscall("clone", 0x10000000 | 17, 0, 0, 0, 0))
""",
        blocked(2),
    ),
    C(
        "nproc_per_sandbox",
        "forks sleeping children until refused",
        """
import os, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print("LIMIT procs", n, exc.errno, flush=True)
""",
        limit_reached("procs", 200),
        timeout=10,
    ),
]
