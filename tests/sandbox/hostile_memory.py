"""Hostile cases: memory the sandbox holds as a whole, beyond any one process's address space.

The suite this answers held 2 GiB in memfds, 2 GiB in SysV shared memory and 1.5 GiB in
unix socket buffers while RLIMIT_AS said 1 GiB. Each case here hoards one kind (or
several processes together) towards 3 GiB, and must be stopped well before: by the
sandbox's cgroup (an OOM kill), a refusal, or a size-capped file system.
"""

from __future__ import annotations

from hostile_base import C, all_of, blocked, finished, memory_refused

from conductor_kernel.interfaces import ExecResult

GOAL_MB = 3072  # more than any sandbox here may hold
BOUND_MB = 1100  # the largest sandbox bound (bwrap's 1 GiB) plus slack

HOARD = r"""
import os, sys
held_mb = 0
def report(kind, exc=None):
    print("HELD", kind, held_mb, type(exc).__name__ if exc else "done", flush=True)
"""


def bounded(r: ExecResult, _: dict[str, str]) -> None:
    """The hoard stopped short: refused, or the process (or group) was killed."""
    held = [int(line.split()[2]) for line in r.stdout.splitlines() if line.startswith("HELD")]
    total = sum(held) if held else 0
    assert total < BOUND_MB, f"held {total} MB: {r.stdout[-300:]}"
    assert r.timed_out or r.signal or r.oom_killed or held, (r.exit_code, r.stderr[-300:])


def _tcp_bounded(r: ExecResult, _: dict[str, str]) -> None:
    """Data queued in TCP buffers by the whole sandbox stays near its 64 MiB cap."""
    hits = [line.split() for line in r.stdout.splitlines() if line.startswith("LIMIT")]
    assert hits, f"no count: {r.stdout[-200:]!r} {r.stderr[-300:]!r}"
    assert int(hits[-1][2]) < 256, f"{hits[-1][2]} MB queued in TCP buffers"


def _oom_contained(r: ExecResult, fill: dict[str, str]) -> None:
    """Not fixed (docs/hostile-battery.md): the kernel lets the cell lower its score to
    the floor it inherited (-1000 on this host, where nothing holds CAP_SYS_RESOURCE to
    raise it), so the OOM killer may take the runner instead. What must hold: the
    memory cap, and a result as data (the host then replaces the sandbox)."""
    if r.sandbox_error is None:
        memory_refused(r, fill)
    else:
        assert "memory" in r.sandbox_error, r.sandbox_error


MEMORY = [
    C(
        "memfd_hoard",
        "fills 64 MB memfds towards 3 GB (memfds are in no address space)",
        HOARD
        + f"""
fds = []
try:
    while held_mb < {GOAL_MB}:
        fd = os.memfd_create("hoard")
        chunk = b"x" * (1 << 20)
        for _ in range(64):
            os.write(fd, chunk)
        fds.append(fd)
        held_mb += 64
except BaseException as exc:
    report("memfd", exc)
else:
    report("memfd")
""",
        bounded,
        timeout=20,
    ),
    C(
        "memfd_sealed_hoard",
        "grows memfds with ftruncate and touches them through mmap",
        HOARD
        + f"""
import mmap
maps = []
try:
    while held_mb < {GOAL_MB}:
        fd = os.memfd_create("hoard")
        os.ftruncate(fd, 64 << 20)
        m = mmap.mmap(fd, 64 << 20)
        for off in range(0, 64 << 20, 4096):
            m[off] = 1
        maps.append(m)
        os.close(fd)
        held_mb += 64
except BaseException as exc:
    report("memfd-mmap", exc)
else:
    report("memfd-mmap")
""",
        bounded,
        timeout=20,
    ),
    C(
        "devshm_hoard",
        "writes files into /dev/shm towards 3 GB",
        HOARD
        + f"""
try:
    while held_mb < {GOAL_MB}:
        with open(f"/dev/shm/h{{held_mb}}", "wb") as f:
            f.write(b"x" * (16 << 20))
        held_mb += 16
except BaseException as exc:
    report("shm", exc)
for name in os.listdir("/dev/shm"):
    os.unlink("/dev/shm/" + name)
""",
        bounded,
        timeout=20,
    ),
    C(
        "sysv_shm",
        "creates and attaches SysV shared memory segments",
        """
attempt("shmget", lambda: libc("shmget", 0, 1 << 30, 0o1000 | 0o600))
attempt("msgget", lambda: libc("msgget", 0, 0o1000 | 0o600))
attempt("semget", lambda: libc("semget", 0, 4, 0o1000 | 0o600))
""",
        blocked(3),
    ),
    C(
        "posix_mqueue",
        "opens a POSIX message queue",
        'attempt("mq_open", lambda: libc("mq_open", b"/hoard", 0o100 | 2, 0o600, None))\n',
        blocked(1),
    ),
    C(
        "socket_buffer_hoard",
        "queues data in unix socket pairs until refused, towards 3 GB",
        HOARD
        + f"""
import socket
pairs, queued = [], 0
try:
    while queued < {GOAL_MB} << 20:
        a, b = socket.socketpair()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
        a.setblocking(False)
        pairs.append((a, b))
        try:
            while True:
                queued += a.send(b"x" * 65536)
        except BlockingIOError:
            pass
        held_mb = queued >> 20
except BaseException as exc:
    report("sockets", exc)
else:
    report("sockets")
""",
        bounded,
        timeout=20,
    ),
    C(
        "pipe_buffer_hoard",
        "grows pipes to their largest size and fills them, towards 3 GB",
        HOARD
        + f"""
import fcntl
pipes, queued = [], 0
try:
    while queued < {GOAL_MB} << 20:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        pipes.append((r, w))
        try:
            while True:
                queued += os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass
        held_mb = queued >> 20
except BaseException as exc:
    report("pipes", exc)
else:
    report("pipes")
""",
        bounded,
        timeout=20,
    ),
    C(
        "five_process_hoard",
        "five processes each hold 700 MB in memfds at once (3.5 GB together)",
        HOARD
        + """
import time
children = []
for i in range(5):
    pid = os.fork()
    if pid == 0:
        got = 0
        fds = []
        try:
            while got < 700:  # 35 MB per memfd: under any file-size limit
                fd = os.memfd_create("part")
                for _ in range(35):
                    os.write(fd, b"x" * (1 << 20))
                fds.append(fd)
                got += 35
        except BaseException:
            pass
        print("HELD part", got, flush=True)
        time.sleep(3)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
""",
        lambda r, fill: _parts_bounded(r),
        timeout=20,
    ),
    C(
        "shared_anonymous_mapping",
        "maps 3 GB of shared anonymous memory and touches every page",
        HOARD
        + f"""
import mmap
try:
    m = mmap.mmap(-1, {GOAL_MB} << 20, flags=mmap.MAP_SHARED)
    for off in range(0, {GOAL_MB} << 20, 4096):
        m[off] = 1
        if off % (64 << 20) == 0:
            held_mb = off >> 20
except BaseException as exc:
    report("shared-anon", exc)
else:
    report("shared-anon")
""",
        bounded,
        timeout=20,
    ),
    C(
        "tmpfs_and_heap_together",
        "fills /tmp and /work to their caps, then allocates on top",
        HOARD
        + """
for folder in ("/tmp", "/work"):
    try:
        with open(f"{folder}/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
    except OSError:
        pass
blocks = []
try:
    while held_mb < 3072:
        blocks.append(bytearray(64 << 20))
        held_mb += 64
except BaseException as exc:
    report("heap", exc)
for folder in ("/tmp", "/work"):
    os.unlink(f"{folder}/fill")
""",
        lambda r, fill: all_of(bounded)(r, fill) if not r.signal else finished(r, fill),
        timeout=20,
    ),
    C(
        "tcp_buffer_hoard",
        "three processes queue data on loopback TCP connections nobody reads, towards "
        "1.2 GB (cgroup v1 charged TCP buffers to no memory limit, only the host's tcp_mem)",
        """
import socket
def hoard():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(128)
    held, total = [], 0
    try:
        while total < 400 << 20:
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
            c.connect(srv.getsockname())
            a = srv.accept()[0]
            a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
            c.setblocking(False)
            held += [c, a]
            sent = 0
            try:
                while sent < 64 << 20:
                    sent += c.send(b"x" * 65536)
            except BlockingIOError:
                pass
            total += sent
    except OSError:
        pass
    return total
r, w = _os.pipe()
kids = []
for _ in range(3):
    pid = _os.fork()
    if pid == 0:
        _os.write(w, b"%d\\n" % hoard())
        __import__("time").sleep(60)  # hold every buffer; the runner ends us
    kids.append(pid)
counts = b""
while counts.count(b"\\n") < 3:
    counts += _os.read(r, 100)
print("LIMIT tcp_mb", sum(int(n) for n in counts.split()) >> 20)
""",
        _tcp_bounded,
        timeout=10.0,
    ),
    C(
        "oom_immune_cell",
        "lowers its oom_score_adj to 0 and -1000 (so the OOM killer would take the runner), "
        "then allocates towards 3 GB",
        """
for value in ("0", "-1000"):
    attempt(value, lambda: put("/proc/self/oom_score_adj", value, _os.O_WRONLY))
print("adj", open("/proc/self/oom_score_adj").read().strip(), flush=True)
hoard = []
for _ in range(3 * 16):
    hoard.append(bytearray(64 << 20))
""",
        _oom_contained,
        timeout=10.0,
    ),
]


def _parts_bounded(r: ExecResult) -> None:
    held = [int(line.split()[2]) for line in r.stdout.splitlines() if line.startswith("HELD")]
    assert sum(held) < BOUND_MB or r.signal or r.oom_killed, f"held {held} MB together"
    # Children that were killed print nothing; those that printed stayed under the bound.
    assert sum(held) < BOUND_MB, f"held {sum(held)} MB together"
