"""`conductor serve --model demo` as a process, held to its limits by raw sockets: a
body of 64 MiB leaves its memory where it was, a thousand connections trickling their
headers leave a normal request answered, a connection past the cap is answered 503 at
once, one too slow with its headers is closed, and JSON nested 100,000 deep is a JSON
400 and one line in the log."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import REPO

pytestmark = pytest.mark.slow

KEY = "process-test-key"
MiB = 1 << 20
# What a body, however large, may add to the server's memory: the cap (1 MiB) read
# into one buffer, and what the allocator keeps of it, with room to spare.
BODY_MEMORY_BOUND = 32 * MiB
# What a thousand connections waiting for their headers may add: a few kilobytes each.
SLOW_MEMORY_BOUND = 64 * MiB


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def rss(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    def open_files(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=60)

    def ask(self, head: str, body: bytes = b"") -> bytes:
        """A whole request on a connection of its own; the reply as far as it came."""
        with self.connect() as sock:
            sock.sendall(head.encode() + body)
            return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    reply = b""
    try:
        while chunk := sock.recv(65536):
            reply += chunk
    except ConnectionResetError:
        pass  # the server closed with our body unread: what came before stands
    return reply


def request(method: str, path: str, *, body: bytes = b"", **headers: str) -> str:
    """A request's head (with the key); a `body` given is only measured, sent apart."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {KEY}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return "\r\n".join([*lines, "Connection: close", "", ""])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serving(home: Path, *flags: str) -> Iterator[Served]:
    """`conductor serve` with the demo model and `flags`, until the block ends."""
    port = free_port()
    (home / "config.toml").touch()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "PYTHONPATH": str(REPO),  # this checkout's code, whatever the venv installed
        "CONDUCTOR_HOME": str(home / "data"),
        "CONDUCTOR_CONFIG": str(home / "config.toml"),
        "CONDUCTOR_SERVE_API_KEY": KEY,
    }
    command = [sys.executable, "-m", "conductor.cli", "serve", "--model", "demo"]
    command += ["--no-recall", "--no-learn", "--port", str(port), *flags]
    log = home / "serve.log"
    with log.open("wb") as written:
        process = subprocess.Popen(command, env=env, stdout=written, stderr=subprocess.STDOUT)
    served = Served(process, port, log)
    try:
        deadline = time.monotonic() + 120
        while "Uvicorn running" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "conductor serve did not start"
            time.sleep(0.1)
        yield served
    finally:
        process.terminate()
        process.wait(60)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # Slow connections are held for the test's length: none of them may time out first.
    with serving(tmp_path_factory.mktemp("serve"), "--header-timeout", "600") as running:
        yield running


@pytest.fixture(scope="module")
def many_files() -> None:
    """Room in this test process for 1,100 sockets and more."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    if wanted < 1200:
        pytest.skip(f"the open-file hard limit ({hard}) is too low for 1,000 connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))


def test_a_body_of_64_mib_leaves_the_servers_memory_where_it_was(served: Served) -> None:
    before = served.rss()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak.append(served.rss())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    head = request("POST", "/v1/chat/completions", Content_Type="application/json")
    chunk = b" " * MiB
    replies = []
    try:
        # Declared up front, and chunked with no length declared: both are cut at 1 MiB.
        for framing in ("length", "chunked"):
            with served.connect() as sock:
                if framing == "length":
                    sock.sendall(f"{head[:-2]}Content-Length: {64 * MiB}\r\n\r\n".encode())
                else:
                    sock.sendall(f"{head[:-2]}Transfer-Encoding: chunked\r\n\r\n".encode())
                try:
                    for _ in range(64):
                        sock.sendall(
                            chunk if framing == "length" else b"100000\r\n" + chunk + b"\r\n"
                        )
                except (BrokenPipeError, ConnectionResetError):
                    pass  # refused part-way, as it should be
                replies.append(read_all(sock))
    finally:
        done.set()
        sampler.join()
    assert max(peak) - before < BODY_MEMORY_BOUND, (before, max(peak))
    told = served.log.read_text()
    assert told.count("the request body is over 1,048,576 bytes") == 2
    for reply in replies:  # a reset may swallow the reply; the log says it was refused
        assert not reply or reply.startswith(b"HTTP/1.1 413")
    assert b"200 OK" in served.ask(request("GET", "/v1/models"))  # and it goes on serving


def test_a_normal_request_is_answered_while_1000_connections_trickle(
    served: Served, many_files: None
) -> None:
    files, memory = served.open_files(), served.rss()
    slow = [served.connect() for _ in range(1000)]
    try:
        for sock in slow:
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHo")
        wait_until(lambda: served.open_files() - files >= 1000)  # all accepted
        for sock in slow:  # one more byte each, as a client trickling its headers
            sock.sendall(b"s")
        reply = served.ask(request("GET", "/v1/models"))
        held, grown = served.open_files() - files, served.rss() - memory
    finally:
        for sock in slow:
            sock.close()
    assert reply.startswith(b"HTTP/1.1 200") and b"conductor:meta@demo" in reply
    assert held >= 1000  # the slow ones were all still held while it answered
    assert grown < SLOW_MEMORY_BOUND, grown


def wait_until(condition: Callable[[], bool]) -> None:
    """Until `condition` holds; a fail-safe, not a measure, ends a wait gone wrong."""
    for _ in range(1200):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("the server never got there")


def test_a_connection_past_the_cap_is_answered_503_and_closed(
    tmp_path: Path, many_files: None
) -> None:
    with serving(tmp_path, "--max-connections", "50", "--header-timeout", "600") as capped:
        before = capped.open_files()
        held = [capped.connect() for _ in range(50)]
        wait_until(lambda: capped.open_files() - before >= 50)
        past = [capped.connect() for _ in range(150)]
        try:
            answers = [read_all(sock) for sock in past]
            files = capped.open_files()
            busy = capped.ask(request("GET", "/v1/models"))
        finally:
            for sock in held + past:
                sock.close()
        wait_until(lambda: capped.open_files() <= before)  # it noticed the 50 close
        after = capped.ask(request("GET", "/v1/models"))
    assert all(answer.startswith(b"HTTP/1.1 503") for answer in answers)
    assert files <= before + 50  # the 150 past the cap hold nothing
    assert busy.startswith(b"HTTP/1.1 503")
    assert after.startswith(b"HTTP/1.1 200")


def test_headers_that_never_end_are_cut_off_at_the_deadline(tmp_path: Path) -> None:
    with serving(tmp_path, "--header-timeout", "1") as strict, strict.connect() as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\n")
        reply = b""
        for _ in range(2400):  # a byte every 0.05 s, until the server closes
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                reply = read_all(sock)
                break
            try:
                sock.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                break
    assert reply.startswith(b"HTTP/1.1 408")


def test_json_nested_100000_deep_is_a_json_400_and_one_line_in_the_log(served: Served) -> None:
    body = b"[" * 100_000
    before = served.log.read_text()
    reply = served.ask(request("POST", "/v1/chat/completions", body=body), body)
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert "nested" in json.loads(payload)["error"]["message"]
    logged = served.log.read_text()[len(before) :]
    assert len(logged.splitlines()) == 1 and "refused POST" in logged, logged
