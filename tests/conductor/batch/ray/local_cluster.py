"""A real Ray cluster of several nodes on this one machine, for tests and benchmarks.

Each node is `ray start --block` in its own session (so it and everything it starts
can be found and stopped by process id), with its own small footprint: one CPU, an
80 MB object store, no dashboard, no usage stats, everything under one temporary
directory. `kill_node` SIGKILLs a node's whole process tree at once, as if its machine
had died; `stop` ends every node this object started and nothing else.

The cluster requires Ray's token authentication with a token of its own (its servers
listen on every interface), so nothing else can join it, and it cannot be confused
with another cluster; `client_env` is what a driver needs to connect.

The head is started with `--node-ip-address 127.0.0.1`, which Ray rewrites to the
machine's outward address (so that other machines could join); drivers on this machine
attach to it. Every further node gets a loopback address of its own (127.0.0.2, ...), so
no two nodes share an address, as on a real cluster: a driver never lands on a node a
test is about to kill. The GCS and raylets listen on every interface, as Ray always does.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")
READY = "block forever"
NODE_ATTEMPTS = 3  # starts of one worker node before the cluster gives up


class NodeDidNotStart(RuntimeError):
    """A `ray start` process ended, or never said it was up, within its time."""


# Node death is noticed after health_check_failure_threshold missed checks.
HEALTH = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "3000",
    "RAY_health_check_failure_threshold": "4",
    # A raylet on a loaded machine may take over Ray's default minute to register; the
    # node then fails to start although nothing is wrong with it.
    "RAY_raylet_start_wait_time_s": "300",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> list[int]:
    tree, found, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _end_group(node: subprocess.Popen[bytes]) -> None:
    """Stop one node process and everything it started."""
    tree = [node.pid, *descendants(node.pid)]
    if node.poll() is None:
        node.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.wait(timeout=15)
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        node.wait(timeout=10)


class LocalCluster:
    def __init__(
        self, *, cpus: int = 1, env: dict[str, str] | None = None, token: str | None = None
    ) -> None:
        self.cpus = cpus
        self.root = Path(tempfile.mkdtemp(prefix="cray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        token = token or secrets.token_hex(16)
        self.client_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        self.env = {
            **(env or os.environ),
            "RAY_USAGE_STATS_ENABLED": "0",
            **HEALTH,
            **self.client_env,
            # Workers' scratch space goes with the cluster, even that of a killed node.
            "TMPDIR": str(self.root / "tmp"),
        }
        (self.root / "tmp").mkdir()
        self.nodes: list[subprocess.Popen[bytes]] = []

    def start(self, workers: int = 1) -> LocalCluster:
        self._node(["--head", "--port", str(self.port), "--include-dashboard=false"])
        for _ in range(workers):
            self.add_node()
        return self

    def add_node(self) -> subprocess.Popen[bytes]:
        # On a loaded machine a worker node's raylet can time out registering with the
        # head ("timed out during startup"); a node that did so is started again.
        for attempt in range(NODE_ATTEMPTS):
            try:
                return self._node(["--address", self.address], stop_on_failure=False)
            except NodeDidNotStart:
                if attempt == NODE_ATTEMPTS - 1:
                    self.stop()
                    raise
        raise AssertionError("unreachable")

    def _node(self, role: list[str], *, stop_on_failure: bool = True) -> subprocess.Popen[bytes]:
        n = len(self.nodes)
        log = self.root / f"node{n}.log"
        # The head on 127.0.0.1 (which Ray turns into this machine's address, where a
        # driver here attaches), each further node on a loopback address of its own
        # (127.0.0.2, ...), so each node has its own address as on a real cluster.
        address = "127.0.0.1" if n == 0 else f"127.0.0.{n + 1}"
        command = [RAY, "start", "--block", *role, "--node-ip-address", address]
        command += ["--num-cpus", str(self.cpus), "--object-store-memory", str(80 * 1024**2)]
        command += ["--disable-usage-stats", "--temp-dir", str(self.root / "ray")]
        with log.open("wb") as out:
            node = subprocess.Popen(
                command, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 360
        while READY not in log.read_text(errors="replace"):
            if node.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-3000:]
                _end_group(node)
                if stop_on_failure:
                    self.stop()
                raise NodeDidNotStart(f"ray node {n} did not start:\n{text}")
            time.sleep(0.2)
        self.nodes.append(node)
        return node

    def usage(self) -> dict[int, tuple[float, float]]:
        """Per process of the cluster (nodes, raylets, workers): CPU seconds so far and
        peak resident MB, read from /proc."""
        found: dict[int, tuple[float, float]] = {}
        tick = os.sysconf("SC_CLK_TCK")
        for node in self.nodes:
            for pid in [node.pid, *descendants(node.pid)]:
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                hwm = next(
                    (ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM")), "0"
                )
                found[pid] = ((int(fields[11]) + int(fields[12])) / tick, int(hwm) / 1024)
        return found

    def kill_node(self, node: subprocess.Popen[bytes]) -> None:
        """SIGKILL the node and everything it started, all at once."""
        for pid in [node.pid, *descendants(node.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.wait(timeout=30)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            _end_group(node)
        self.nodes = []
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
