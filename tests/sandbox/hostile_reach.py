"""Hostile cases, second round: reaching the runner and init by paths the first round
did not try, allowlisted syscalls used in dangerous ways, and surviving into the next
cell. Written with sandbox/'s source in hand (runner_supervise.py, runner_child.py,
seccomp_policy.py), as the next independent suite will be.
"""

from __future__ import annotations

from hostile_base import REFUSED, C, blocked, exits
from hostile_supervisor import FRESH, OTHERS, _each_refused, _runner_answers

from conductor_kernel.interfaces import ExecResult


def _alone(r: ExecResult, _: dict[str, str]) -> None:
    """The follow-up saw no process of its own uid but itself and its held lock free."""
    assert r.exit_code == 0, r.stderr[-300:]
    assert "others 0" in r.stdout, f"something of the last cell lived on: {r.stdout!r}"
    assert "lock free" in r.stdout, r.stdout


def _own_status(r: ExecResult, _: dict[str, str]) -> None:
    """The status pipe is the cell's own (it could as well call os._exit(0)): a forged
    report may only end the cell early, never outlive it or come back as anything but
    this cell's result."""
    assert not r.timed_out and r.exit_code in (0, 7), (r.exit_code, r.signal)


ALONE = r"""
import fcntl, os
mine = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
        and os.stat(f"/proc/{p}").st_uid == os.getuid()
        and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] not in "ZX"]
print("others", len(mine), mine[:5])
try:
    fd = os.open("/tmp/.hx-lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("lock free")
except FileNotFoundError:
    print("lock free")
"""

REACH = [
    C(
        "ns_files_of_supervisors",
        "opens every other process's /proc/PID/ns/* (setns into the runner's namespaces)",
        OTHERS
        + """
for pid in targets:
    for ns in ("mnt", "pid", "net", "user", "uts", "ipc", "cgroup"):
        attempt(f"{pid}/{ns}", lambda: _os.open(f"/proc/{pid}/ns/{ns}", _os.O_RDONLY))
""",
        _each_refused,
    ),
    C(
        "task_dirs_of_supervisors",
        "reaches every other thread through /proc/PID/task/TID/{mem,fd/1,environ}",
        OTHERS
        + """
for pid in targets:
    for tid in _os.listdir(f"/proc/{pid}/task"):
        for leaf in ("mem", "fd/1", "environ"):
            path = f"/proc/{pid}/task/{tid}/{leaf}"
            attempt(path, lambda: open(path, "rb").read(1))
""",
        _each_refused,
    ),
    C(
        "pidfd_signal_supervisors",
        "pidfd_open on every other process, then pidfd_send_signal SIGSTOP and SIGKILL",
        OTHERS
        + """
for pid in targets:
    def stop_and_kill():
        fd = _os.pidfd_open(pid)
        signal.pidfd_send_signal(fd, signal.SIGSTOP)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    attempt(pid, stop_and_kill)
""",
        _each_refused,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
    C(
        "process_vm_writev_supervisors",
        "writes into every other process's memory with process_vm_writev",
        OTHERS
        + """
buf = _ctypes.create_string_buffer(b"x" * 16)
iov = (_ctypes.c_void_p * 2)(_ctypes.addressof(buf), 16)
remote = (_ctypes.c_void_p * 2)(0x400000, 16)
for pid in targets:
    attempt(pid, lambda: libc("syscall", 311, pid, iov, 1, remote, 1, 0))
""",
        _each_refused,
    ),
    C(
        "join_supervisor_group",
        "moves into the runner's process group (setpgid) and signals groups and sessions",
        OTHERS
        + """
for pid in targets:
    attempt(f"setpgid {pid}", lambda: _os.setpgid(0, _os.getpgid(pid)))
    if _os.getpgid(pid) > 1:  # killpg(1) is kill(-1): kill_all_then_run's business
        attempt(f"killpg {pid}", lambda: _os.killpg(_os.getpgid(pid), signal.SIGSTOP))
""",
        _each_refused,
        follow_up=FRESH,
        follow_expect=_runner_answers,
    ),
    C(
        "kcmp_and_traceme",
        "kcmp against the runner's files; a child that asks to be traced then execs",
        OTHERS
        + """
for pid in targets:
    attempt(f"kcmp {pid}", lambda: libc("syscall", 312, _os.getpid(), pid, 0, 1, 1))
attempt("traceme", lambda: libc("ptrace", 0, 0, 0, 0))
""",
        _each_refused,
    ),
    C(
        "clone3_namespaces",
        "clone3 asking for new user, pid, mount and net namespaces (clone3 flags escape "
        "clone's argument rule)",
        """
import struct
for flags in (0x10000000, 0x20000000, 0x00020000, 0x40000000, 0x00000080):
    args = _ctypes.create_string_buffer(struct.pack("<11Q", flags, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))
    def go():
        pid = libc("syscall", 435, args, 88)
        if pid == 0:
            _os._exit(0)
        return pid
    attempt(hex(flags), go)
""",
        blocked(5, REFUSED),
    ),
    C(
        "unshare_and_setns",
        "unshare of mount, net, pid, time and cgroup namespaces; setns on its own ns files",
        """
for flags in (0x00020000, 0x40000000, 0x20000000, 0x00000080, 0x02000000, 0x08000000):
    attempt(hex(flags), lambda: libc("unshare", flags))
fd = _os.open("/proc/self/ns/net", _os.O_RDONLY)
attempt("setns", lambda: libc("setns", fd, 0))
""",
        blocked(7, REFUSED),
    ),
    C(
        "io_uring_family",
        "io_uring_setup, io_uring_enter, io_uring_register; /dev/userfaultfd; fanotify_init",
        """
params = _ctypes.create_string_buffer(120)
attempt("setup", lambda: libc("syscall", 425, 8, params))
attempt("enter", lambda: libc("syscall", 426, 0, 1, 0, 0, 0, 0))
attempt("register", lambda: libc("syscall", 427, 0, 0, 0, 0))
attempt("/dev/userfaultfd", lambda: _os.open("/dev/userfaultfd", _os.O_RDWR))
attempt("fanotify", lambda: libc("syscall", 300, 0, 0))
""",
        blocked(5, REFUSED | {"ENOENT"}),
    ),
    C(
        "cgroup_escape_writes",
        "moves itself to the root cgroup and raises its sandbox's memory and pids limits",
        """
import glob
paths = ["/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory/cgroup.procs",
         "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/pids/pids.max",
         "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/pids.max"]
for path in paths:
    attempt(path, lambda: put(path, "-1" if "max" in path or "limit" in path else "1", _os.O_WRONLY))
""",
        blocked(6, REFUSED | {"ENOENT", "EROFS"}),
    ),
    C(
        "daemon_zoo_into_next_cell",
        "leaves a double-forked setsid daemon, a SIGSTOPped one, a thread-stopped one, a "
        "timer-driven one and a lock holder; the next cell must see none of its uid",
        """
import fcntl, signal, threading, time
def daemon(kind):
    if _os.fork():
        return
    _os.setsid()
    if _os.fork():
        _os._exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if kind == "stopped":
        _os.kill(_os.getpid(), signal.SIGSTOP)
    if kind == "thread":
        threading.Thread(target=time.sleep, args=(60,)).start()
        _os.kill(_os.getpid(), signal.SIGSTOP)
    if kind == "timer":
        signal.signal(signal.SIGALRM, lambda *a: None)
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
    if kind == "lock":
        fd = _os.open("/tmp/.hx-lock", _os.O_RDWR | _os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
    while True:
        time.sleep(0.05)
for kind in ("plain", "stopped", "thread", "timer", "lock"):
    daemon(kind)
time.sleep(0.3)
print("planted")
""",
        exits(0),
        follow_up=ALONE,
        follow_expect=_alone,
    ),
    C(
        "done_fd_forgery",
        "reports a forged 'exit 0' on its status pipe (fd 4), then keeps running and exits 7",
        """
import struct, time
attempt("done", lambda: _os.write(4, struct.pack(">i", 0)))
time.sleep(0.5)
raise SystemExit(7)
""",
        _own_status,
    ),
]
