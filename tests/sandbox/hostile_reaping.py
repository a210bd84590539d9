"""Hostile cases: processes nobody reaps, by class; the next cell must start with none.

The round this answers made children of the runner with clone(CLONE_PARENT): the runner
waited only for the pids it forked, so their zombies held the pids cgroup and the cell
uid's process limit until the next cell could not fork (bubblewrap) or the runner died
and the container was replaced under the next cell (Docker). Every way a cell can leave
a process behind (a child for its parent, orphans, grandchildren, unwaited children,
nested subreapers) is tried here, and a follow-up in the same sandbox counts zombies
and forks as many children as a cell ever needs.
"""

from __future__ import annotations

from hostile_base import C, all_of, blocked, exits, finished

from conductor_kernel.interfaces import ExecResult

CLONE = r"""
import ctypes, os, signal
CLONE_PARENT, CLONE_FILES, CLONE_FS, CLONE_SIGHAND = 0x8000, 0x400, 0x200, 0x800
CLONE_NEWPID, CLONE_IO, CLONE_PTRACE = 0x20000000, 0x80000000, 0x2000
def raw_clone(flags):
    pid = libc("syscall", NR["clone"], ctypes.c_ulong(flags), 0, 0, 0, 0)
    if pid == 0:
        _os._exit(0)  # the child: leave at once (a zombie for whoever its parent is)
    return pid
"""

# The next cell: no zombie anywhere it can see, and forking many children works.
NEXT_CELL = r"""
import os
zombies = []
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            if open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                zombies.append(name)
        except OSError:
            pass
print("zombies", len(zombies), flush=True)
kids = []
for _ in range(30):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("forked", len(kids), flush=True)
"""


def clean_next_cell(r: ExecResult, _: dict[str, str]) -> None:
    assert r.exit_code == 0, (r.exit_code, r.signal, r.stderr[-300:])
    assert "zombies 0" in r.stdout, f"zombies left for the next cell: {r.stdout!r}"
    assert "forked 30" in r.stdout, r.stdout


REAPING = [
    C(
        "children_for_the_parent",
        "clone() with CLONE_PARENT alone and with every other flag combination a process "
        "can pass (files, fs, io, ptrace, a new pid namespace), then clone3 asking for it",
        CLONE
        + """
flags = [CLONE_PARENT | signal.SIGCHLD]
for extra in (CLONE_FILES, CLONE_FS, CLONE_IO, CLONE_PTRACE, CLONE_NEWPID, CLONE_FILES | CLONE_FS):
    flags.append(CLONE_PARENT | extra | signal.SIGCHLD)
for value in flags:
    attempt(hex(value), lambda value=value: raw_clone(value))
args = (ctypes.c_uint64 * 11)(CLONE_PARENT, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)
attempt("clone3", lambda: libc("syscall", 435, ctypes.byref(args), ctypes.sizeof(args)))
""",
        blocked(8),
        follow_up=NEXT_CELL,
        follow_expect=clean_next_cell,
    ),
    C(
        "orphans_and_unwaited_children",
        "leaves 15 children it never waits for, 10 orphaned grandchildren that exit at "
        "once, and 5 grandchildren of a child that made itself a subreaper",
        """
import ctypes, os, time
for _ in range(15):
    if os.fork() == 0:
        os._exit(0)  # never waited for by this cell
for _ in range(10):
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            time.sleep(0.2)
            os._exit(0)  # orphaned, then ends: its parent is whoever adopted it
        os._exit(0)
    os.waitpid(pid, 0)
if os.fork() == 0:
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    for _ in range(5):
        if os.fork() == 0:
            if os.fork() == 0:
                os._exit(0)
            os._exit(0)
    os._exit(0)
time.sleep(0.5)
print("left", flush=True)
""",
        all_of(exits(0), finished),
        timeout=20,  # forking a process holding numpy and sympy is slow on a busy host
        follow_up=NEXT_CELL,
        follow_expect=clean_next_cell,
    ),
    C(
        "zombie_flood_to_the_process_limit",
        "forks exiting children without waiting until fork is refused, holding every "
        "process slot as a zombie when it ends",
        """
import os
count = 0
try:
    while count < 2000:
        if os.fork() == 0:
            os._exit(0)
        count += 1
except OSError as exc:
    print("LIMIT zombies", count, flush=True)
""",
        finished,
        timeout=20,
        follow_up=NEXT_CELL,
        follow_expect=clean_next_cell,
    ),
]


# -- capabilities: none held, none to gain -------------------------------------------------

CAPABILITIES = [
    C(
        "capability_sets_and_bounding_set",
        "reads every capability set of its own and, for each capability the kernel knows, "
        "whether the bounding set still holds it (a setuid-root or file-capability binary "
        "could then gain it); raises it as ambient and inheritable",
        """
import ctypes
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    value = int(status[key].strip(), 16)
    print("ESCAPED" if value else "BLOCKED", key, hex(value), "none" if value else "EPERM")
print("BLOCKED" if status["NoNewPrivs"].strip() == "1" else "ESCAPED", "no_new_privs", "EPERM")
lib = ctypes.CDLL(None, use_errno=True)
held = [cap for cap in range(64) if lib.prctl(23, cap, 0, 0, 0) == 1]  # PR_CAPBSET_READ
print("bounding", held, flush=True)
for cap in (0, 7, 21):  # CAP_CHOWN, CAP_SETUID, CAP_SYS_ADMIN
    attempt(f"ambient{cap}", lambda cap=cap: libc("prctl", 47, 2, cap, 0, 0))  # CAP_AMBIENT_RAISE
""",
        blocked(9),
    ),
]
