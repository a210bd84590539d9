"""Measuring, in a live sandbox, which bound each kind of kernel memory is charged to.

`conductor sandbox doctor` must say what the sandbox's bounds cover and what they do
not, from measurements rather than from intent. One cell fills, one after another and
holding each, a fixed amount of every kind of kernel-side buffer a cell can reach (unix
socket buffers, pipe buffers, TCP and UDP buffers on loopback, memfd and shared memory,
inotify and epoll, POSIX timers), and says on its stdout when each began and ended (by
the wall clock, which the host shares even where a time namespace moves the others). Meanwhile the host samples the sandbox's memory
cgroup: the charge of a kind is how much the cgroup's counter rose while the cell held
it. A kind whose charge falls far short of what it queued is not covered by the bound.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from sandbox.policy.cgroups import memory_counters_of

MB = 1 << 20

# Each step fills about TARGET_MB of one kind, prints "STEP kind start end queued",
# and keeps holding it while the next steps run.
PROBE = r"""
import ctypes, mmap, os, select, socket, time
libc = ctypes.CDLL(None, use_errno=True)
TARGET = 48 << 20
held = []
CHUNK = b"x" * 65536

def step(name, fill):
    start = time.time()  # the wall clock: a time namespace moves only the others
    queued = fill()
    time.sleep(0.6)
    print("STEP", name, start, time.time(), round(queued / (1 << 20), 2), flush=True)

def unix():
    queued = 0
    while queued < TARGET:
        try:
            a, b = socket.socketpair()
        except OSError:
            break  # out of descriptors: what is queued so far counts
        held.extend((a, b))
        for sock in (a, b):
            sock.setblocking(False)
            try:
                while True:
                    queued += sock.send(CHUNK)
            except BlockingIOError:
                pass
    return queued

def pipes():
    import fcntl
    queued = 0
    while queued < TARGET:
        try:
            r, w = os.pipe()
        except OSError:
            break
        held.extend((r, w))
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: the largest a cell may ask
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                queued += os.write(w, CHUNK)
        except BlockingIOError:
            pass
    return queued

def tcp():
    server = socket.create_server(("127.0.0.1", 0))
    held.append(server)
    queued = 0
    while queued < TARGET:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        held.extend((client, peer))
        client.setblocking(False)
        try:
            while True:
                queued += client.send(CHUNK)
        except OSError:
            pass
        if len(held) > 200:
            break
    return queued

def udp():
    queued = 0
    while queued < TARGET and len(held) < 220:
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind(("127.0.0.1", 0))
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        held.extend((receiver, sender))
        for _ in range(4):
            queued += sender.sendto(CHUNK[:60000], receiver.getsockname())
    return queued

def memfd():
    fd = os.memfd_create("probe")
    held.append(fd)
    for _ in range(TARGET // len(CHUNK)):
        os.write(fd, CHUNK)
    return TARGET

def watches():
    # inotify watches and epoll registrations: kernel objects per watched thing
    import select
    made = 0
    fd = libc.inotify_init1(0)
    held.append(fd)
    for root, dirs, names in os.walk("/usr"):
        for name in names:
            if libc.inotify_add_watch(fd, os.path.join(root, name).encode(), 0xFFF) >= 0:
                made += 1
        if made > 20000:
            break
    fds = [os.eventfd(0) for _ in range(150)]
    held.extend(fds)
    for _ in range(50):
        ep = select.epoll()
        held.append(ep)
        for each in fds:
            ep.register(each, select.EPOLLIN)
        made += len(fds)
    return made * 512  # a rough size per watch (bytes), to compare with the charge

def timers():
    made = 0
    timer = ctypes.c_void_p()
    while made < 1000 and libc.timer_create(1, None, ctypes.byref(timer)) == 0:
        made += 1
    return made * 256  # an estimate of the kernel's size for each (bytes)

for name, fill in (("unix socket buffers", unix), ("pipe buffers", pipes),
                   ("TCP buffers", tcp), ("UDP buffers", udp), ("memfd", memfd),
                   ("inotify and epoll watches", watches), ("POSIX timers", timers)):
    try:
        step(name, fill)
    except OSError as exc:
        print("STEP", name, 0, 0, -1, exc, flush=True)
    for obj in held:
        try:
            obj.close() if hasattr(obj, "close") else os.close(obj)
        except OSError:
            pass
    held.clear()
    time.sleep(0.4)
"""


@dataclass(frozen=True)
class Charge:
    kind: str
    queued_mb: float  # what the cell queued (-1: the kind was refused)
    charged_mb: float | None  # how much the cgroup's counters rose meanwhile (None: unknown)
    counter: str  # which counter rose most ("memory", "tcp")

    @property
    def covered(self) -> bool | None:
        if self.charged_mb is None or self.queued_mb <= 0:
            return None
        return self.charged_mb >= 0.5 * self.queued_mb


def sandbox_pid(sandbox: Any) -> int | None:
    """A host pid inside the sandbox, to find its cgroup by (None when unknown)."""
    session = getattr(sandbox, "_session", None)
    init = getattr(session, "init_pid", None)
    if init:
        return int(init)
    state = getattr(session, "state", None)
    if callable(state):
        try:
            pid = (state() or {}).get("Pid")
        except Exception:
            return None
        return int(pid) if pid else None
    return None


def measure_charges(sandbox: Any) -> list[Charge]:
    """Run the probe in `sandbox` and attribute each kind's rise of its cgroup counters."""
    warm = sandbox.run("pass", timeout=60)
    pid = sandbox_pid(sandbox) if warm.ok else None
    samples: list[tuple[float, dict[str, int]]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set() and pid is not None:
            samples.append((time.time(), memory_counters_of(pid)))
            done.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result = sandbox.run(PROBE, timeout=120)
    done.set()
    watcher.join()
    charges = []
    for line in result.stdout.splitlines():
        words = line.split()
        if not words or words[0] != "STEP":
            continue
        numbers = [w for w in words[1:] if _is_number(w)]
        kind = " ".join(words[1 : words.index(numbers[0])]) if numbers else " ".join(words[1:])
        start, end, queued = (float(n) for n in numbers[:3])
        charges.append(_attribute(kind, start, end, queued, samples))
    return charges


def _attribute(
    kind: str, start: float, end: float, queued: float, samples: list[tuple[float, dict[str, int]]]
) -> Charge:
    before = [c for t, c in samples if t <= start]
    during = [c for t, c in samples if start <= t <= end]
    if queued < 0 or not before or not during:
        return Charge(kind, queued, None, "")
    rises = {}
    for key in ("memory", "tcp"):
        if key not in before[-1]:
            continue
        peak = max(c.get(key, 0) for c in during)
        rises[key] = (peak - before[-1][key]) / MB
    if not rises:
        return Charge(kind, queued, None, "")
    counter = max(rises, key=lambda k: rises[k])
    return Charge(kind, queued, round(rises[counter], 1), counter)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
