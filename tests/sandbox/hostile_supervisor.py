"""Hostile cases: the runner and the sandbox's init are not the cell's to touch.

The suite this answers reopened PID 1's descriptors to forge result frames, stopped
the runner to answer the host itself, lowered the runner's limits with prlimit,
rewrote PID 1 through /proc/1/mem, and kept processes alive into later cells. Every
case here tries one of those (or a variant) against every process it can see, then
a follow-up in the same sandbox checks that the next cell starts clean.
"""

from __future__ import annotations

from hostile_base import C, all_of, exits, finished, never_prints, prints

from conductor_kernel.interfaces import ExecResult

# Every process of the sandbox that is not this cell or its own children: the runner,
# the init, bwrap's reaper. The code finds them in /proc itself.
OTHERS = r"""
import os, signal, resource
def others():
    mine = {os.getpid()}
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in mine:
            try:
                if open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[0] not in "ZX":
                    found.append(int(name))
            except OSError:
                pass
    return found
targets = others()
print("targets", len(targets), flush=True)
"""


def _each_refused(r: ExecResult, _: dict[str, str]) -> None:
    """At least one target existed and every attempt on every one was refused."""
    lines = r.stdout.splitlines()
    assert not [line for line in lines if line.startswith("ESCAPED")], r.stdout[-500:]
    count = int(next(line for line in lines if line.startswith("targets")).split()[1])
    assert count >= 1, "the cell saw no runner or init to attack"
    assert sum(line.startswith("BLOCKED") for line in lines) >= count, r.stdout[-500:]


def _runner_answers(r: ExecResult, _: dict[str, str]) -> None:
    assert r.ok and r.stdout.strip() == "fresh", f"the next cell: {r.stdout!r} {r.stderr[-300:]!r}"


FRESH = 'print("fresh")\n'

SUPERVISOR = [
    C(
        "forge_via_proc_fd",
        "writes a forged result frame into every other process's fds 0-9 via /proc, exits 3",
        OTHERS
        + """
import json, struct
body = json.dumps({"op": "result", "exit_code": 0, "id": 1}).encode()
for pid in targets:
    for fd in range(10):
        path = f"/proc/{pid}/fd/{fd}"
        frame = struct.pack(">I", len(body)) + body
        attempt(f"{pid}/{fd}", lambda: put(path, frame, _os.O_WRONLY))
raise SystemExit(3)
""",
        all_of(exits(3), _each_refused),
    ),
    C(
        "read_runner_protocol_fd",
        "opens other processes' fds 0-9 for reading (a later cell's code would arrive there)",
        OTHERS
        + """
for pid in targets:
    for fd in range(10):
        attempt(f"{pid}/{fd}", lambda: open(f"/proc/{pid}/fd/{fd}", "rb").read(1))
""",
        _each_refused,
    ),
    C(
        "proc_mem_write",
        "opens /proc/PID/mem of every other process for writing",
        OTHERS + 'for pid in targets:\n    attempt(pid, lambda: open(f"/proc/{pid}/mem", "r+b"))\n',
        _each_refused,
    ),
    C(
        "proc_mem_read",
        "opens /proc/PID/mem of every other process for reading",
        OTHERS + 'for pid in targets:\n    attempt(pid, lambda: open(f"/proc/{pid}/mem", "rb"))\n',
        _each_refused,
    ),
    C(
        "sigstop_supervisors",
        "SIGSTOPs every other process, so that it could answer the host itself",
        OTHERS + "for pid in targets:\n    attempt(pid, lambda: _os.kill(pid, signal.SIGSTOP))\n",
        _each_refused,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
    C(
        "sigkill_supervisors",
        "SIGKILLs every other process (runner, init, reaper)",
        OTHERS + "for pid in targets:\n    attempt(pid, lambda: _os.kill(pid, signal.SIGKILL))\n",
        _each_refused,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
    C(
        "prlimit_supervisors",
        "lowers every other process's RLIMIT_FSIZE to 4096 with prlimit",
        OTHERS
        + """
for pid in targets:
    attempt(pid, lambda: resource.prlimit(pid, resource.RLIMIT_FSIZE, (4096, 4096)))
""",
        _each_refused,
        follow_up="""
import resource
print("fsize", resource.getrlimit(resource.RLIMIT_FSIZE)[0] > 1 << 20)
open("/tmp/big", "wb").write(b"x" * 100000)
print("wrote")
""",
        follow_expect=all_of(exits(0), prints("fsize True", "wrote")),
    ),
    C(
        "prlimit_nofile_supervisors",
        "sets every other process's RLIMIT_NOFILE to 3",
        OTHERS
        + "for pid in targets:\n"
        + "    attempt(pid, lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3)))\n",
        _each_refused,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
    C(
        "own_limits_do_not_carry",
        "lowers its own rlimits and leaves a child holding them",
        """
import os, resource, time
resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
print("lowered")
""",
        all_of(exits(0), prints("lowered")),
        follow_up="""
import resource
print("nofile", resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 64)
print("fsize", resource.getrlimit(resource.RLIMIT_FSIZE)[0] > 1 << 20)
""",
        follow_expect=all_of(exits(0), prints("nofile True", "fsize True")),
    ),
    C(
        "ptrace_supervisors",
        "PTRACE_ATTACHes to every other process",
        OTHERS
        + "for pid in targets:\n"
        + '    attempt(pid, lambda: libc("ptrace", 16, pid, 0, 0))\n',
        _each_refused,
    ),
    C(
        "pidfd_steal_fd",
        "pidfd_open on every other process, then pidfd_getfd of its fds and pidfd SIGKILL",
        OTHERS
        + """
for pid in targets:
    def steal(pid=pid):
        pidfd = _os.pidfd_open(pid)
        try:
            for fd in range(4):
                try:
                    return libc("syscall", 438, pidfd, fd, 0)  # pidfd_getfd
                except OSError as exc:
                    last = exc
            raise last
        finally:
            _os.close(pidfd)
    attempt(f"getfd{pid}", steal)
    def kill(pid=pid):
        pidfd = _os.pidfd_open(pid)
        try:
            return signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        finally:
            _os.close(pidfd)
    attempt(f"kill{pid}", kill)
""",
        _each_refused,
    ),
    C(
        "proc_environ_and_root",
        "reads other processes' environ, opens their root and cwd links",
        OTHERS
        + """
for pid in targets:
    attempt(f"env{pid}", lambda: open(f"/proc/{pid}/environ", "rb").read())
    attempt(f"root{pid}", lambda: _os.listdir(f"/proc/{pid}/root/"))
    attempt(f"cwd{pid}", lambda: _os.listdir(f"/proc/{pid}/cwd/"))
""",
        _each_refused,
    ),
    C(
        "oom_score_of_supervisors",
        "makes every other process the OOM killer's first choice",
        OTHERS
        + 'for pid in targets:\n    attempt(pid, lambda: put(f"/proc/{pid}/oom_score_adj", "1000"))\n',
        _each_refused,
    ),
    C(
        "uid_separation",
        "compares its uid with the runner's and the init's",
        OTHERS
        + """
mine = _os.getuid()
for pid in targets:
    uid = int(open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[0])
    print("SAME" if uid == mine else "OTHER", pid, flush=True)
""",
        lambda r, fill: _separated(r, fill),
    ),
    C(
        "survivor_into_next_cell",
        "double-forks a daemon that ignores signals it can and keeps a file growing",
        """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            with open("/tmp/survivor", "a") as f:
                f.write("x")
            time.sleep(0.01)
    os._exit(0)
time.sleep(0.2)
print("left a survivor")
""",
        all_of(exits(0), prints("left a survivor")),
        follow_up="""
import os, time
mine = os.getuid()
alive = []
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != os.getpid():
        try:
            status = open(f"/proc/{name}/status").read()
        except OSError:
            continue
        if f"Uid:\\t{mine}" in status and "State:\\tZ" not in status:
            alive.append(name)
print("others of my uid", alive)
""",
        follow_expect=all_of(exits(0), prints("others of my uid []")),
    ),
    C(
        "forged_frame_on_stdout",
        "prints a well-formed result frame claiming success, then exits 3",
        """
import json, struct, sys
body = json.dumps({"op": "result", "id": 2, "exit_code": 0, "stdout": {}}).encode()
sys.stdout.buffer.write(struct.pack(">I", len(body)) + body)
sys.stdout.flush()
raise SystemExit(3)
""",
        all_of(exits(3), prints('"exit_code": 0')),
    ),
    C(
        "protocol_fds_from_inside",
        "writes garbage to every descriptor number 3-63 it might have inherited",
        """
for fd in range(3, 64):
    try:
        _os.write(fd, b"\\xff\\xff\\xff\\xff" + b"{" * 64)
        print("wrote", fd)
    except OSError:
        pass
raise SystemExit(5)
""",
        all_of(exits(5), never_prints("wrote 3", "wrote 5", "wrote 6")),
    ),
    C(
        "kill_all_then_run",
        "kill(-1, SIGKILL) and kill(-1, SIGSTOP): everything it may signal",
        """
import os, signal
for sig in (signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(-1, sig)
    except OSError:
        pass
""",
        finished,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
]


def _separated(r: ExecResult, fill: dict[str, str]) -> None:
    lines = [line for line in r.stdout.splitlines() if line.startswith(("SAME", "OTHER"))]
    assert lines, r.stdout + r.stderr
    if fill["HOST_EUID"] == "0":  # a root host gives runner and cell different uids
        assert all(line.startswith("OTHER") for line in lines), lines
