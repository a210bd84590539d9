"""Properties of whole sandboxes that no single cell can show.

- Two sandboxes running at once do not share per-user kernel limits: one holds every
  inotify instance it can get while the other still gets one (both backends).
- The host ends a bubblewrap sandbox by the handles it holds (the PID namespace's init
  as bwrap reported it, the cgroup), not by trusting anything inside: a stand-in
  "runner" that ignores the end of its input and leaves setsid survivors behind is
  gone entirely once the sandbox is closed.
- A bubblewrap sandbox is bounded as a whole: memfds spread over several processes
  cannot hold more than the sandbox's memory limit.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.policy import cgroups
from sandbox.registry import backend_class, probe
from support import skip_or_fail

HOLD_INOTIFY = """
import ctypes, time
lib = ctypes.CDLL(None, use_errno=True)
n = 0
while lib.inotify_init1(0) >= 0:
    n += 1
print("holding", n, flush=True)
time.sleep(6)
"""
TAKE_ONE = "import ctypes\nprint(ctypes.CDLL(None).inotify_init1(0) >= 0)\n"


@pytest.fixture(params=["bwrap", "docker"])
def two_sandboxes(request: pytest.FixtureRequest) -> Iterator[tuple[object, object]]:
    reason = probe(request.param)
    if reason is not None:
        skip_or_fail(f"{request.param} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")
    cls = backend_class(request.param)
    first, second = cls(), cls()
    yield first, second
    first.close()
    second.close()


@pytest.mark.serial
def test_per_user_kernel_limits_are_not_shared(two_sandboxes: tuple) -> None:
    hog, other = two_sandboxes
    held: list = []
    thread = threading.Thread(target=lambda: held.append(hog.run(HOLD_INOTIFY, timeout=10)))
    thread.start()
    time.sleep(3)  # the hog has taken every instance its uid may have by now
    result = other.run(TAKE_ONE, timeout=5)
    thread.join()
    assert held and "holding" in held[0].stdout, held
    assert int(held[0].stdout.split()[1]) >= 8, held[0].stdout
    assert result.ok and result.stdout == "True\n", f"the other sandbox starved: {result}"


@pytest.fixture
def bwrap_only() -> None:
    reason = probe("bwrap")
    if reason is not None:
        skip_or_fail(f"bwrap cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")


def _processes_named(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_the_host_kills_a_bwrap_sandbox_by_its_own_handles(bwrap_only: None) -> None:
    from sandbox.bwrap.backend import BwrapSandbox

    marker = "hijacked" + uuid.uuid4().hex[:8]
    # A "runner" that answers the ping, then leaves survivors in new sessions that
    # ignore every signal they can, and never reads its input again.
    hijacked = f"""
import json, os, signal, struct, subprocess, sys, time
head = os.read(0, 4); body = os.read(0, struct.unpack(">I", head)[0])
pong = json.dumps({{"op": "pong", "id": json.loads(body)["id"], "modules": []}}).encode()
os.write(1, struct.pack(">I", len(pong)) + pong)
for _ in range(3):
    subprocess.Popen(["sleep", "600", "{marker}"], start_new_session=True,
                     preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN)
                                         for s in (signal.SIGTERM, signal.SIGHUP)])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.close(0)
time.sleep(600)
"""
    box = BwrapSandbox(rootfs="/", runner_command=["/usr/bin/python3", "-c", hijacked])
    result = box.run("print(1)", timeout=1.0)  # never answered: the host's deadline ends it
    assert result.timed_out and result.infra_error is None
    deadline = time.monotonic() + 60  # generous: the loop ends once they are gone
    while _processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    box.close()
    assert not _processes_named(marker), "processes of the sandbox outlived it"


@pytest.mark.slow
@pytest.mark.skipif(cgroups.why_none() is not None, reason="no cgroup for sandboxes here")
def test_a_bwrap_sandbox_is_bounded_as_a_whole(bwrap_only: None) -> None:
    from sandbox.bwrap.backend import BwrapSandbox, Limits

    limit = 256 * 1024 * 1024
    box = BwrapSandbox(rootfs="/", limits=Limits(memory_bytes=limit))
    code = """
import os, time
for i in range(4):
    if os.fork() == 0:
        fds, held = [], 0
        try:
            while held < 200:
                fd = os.memfd_create("x")
                for _ in range(20):
                    os.write(fd, b"x" * (1 << 20))
                fds.append(fd)
                held += 20
        except BaseException:
            pass
        print("HELD", held, flush=True)
        time.sleep(2)
        os._exit(0)
for _ in range(4):
    os.wait()
"""
    try:
        result = box.run(code, timeout=15)
        held = sum(int(line.split()[1]) for line in result.stdout.splitlines() if "HELD" in line)
        assert held * 1024 * 1024 < limit, f"{held} MB held by a sandbox bounded to 256 MB"
        assert result.oom_killed or held < 800, result
        assert box.run("print('after')").stdout == "after\n"
    finally:
        box.close()
    assert os.getpid()
