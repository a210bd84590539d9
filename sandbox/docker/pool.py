"""Warm runner containers: one session per container, a pool that keeps spares ready.

A `RunnerSession` is one started container whose runner (sandbox/runner/main.py) we talk
to over the container's attached stdin/stdout: no host directory is shared. With
tty off, Docker multiplexes the container's stdout and stderr on the attach stream
behind 8-byte headers; we demultiplex, keep stdout as our frame channel and stderr as
the runner's diagnostics. The container is created with stdin_once, so when our
socket closes (we exit or crash) the runner reads EOF, ends, and the container is
removed by Docker (auto_remove).

The `WarmPool` hands a fresh, preloaded session to each sandbox that asks and never
takes one back: a session serves exactly one conductor run. Creating and destroying
containers happens on background threads so a run never waits for it.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections import deque
from typing import Any

from conductor_kernel.errors import UserFacingError
from sandbox.policy import cgroups
from sandbox.protocol import (
    DeadlineExceeded,
    FramedConversation,
    ProtocolError,
    RunnerGone,
    check_pong,
)

log = logging.getLogger("conductor.sandbox")

ATTACH_PARAMS = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
READY_TIMEOUT_S = 60.0
# A session is not handed out (or reused) this close to the end of its lifetime.
LIFETIME_MARGIN_S = 120.0


class SessionStartError(UserFacingError):
    """A sandbox container could not be started; the message says why."""


class RunnerSession(FramedConversation):
    """One running sandbox container and the framed conversation with its runner."""

    def __init__(self, client: Any, container_id: str, sock: socket.socket) -> None:
        super().__init__()
        self.client = client
        self.container_id = container_id
        self.sock = sock
        self.started_at = time.monotonic()
        self._raw = bytearray()  # attach stream bytes not yet demultiplexed
        self.preload: dict[str, Any] = {}
        self.killed_by_host = False  # set by `kill`: a cell's end was the host's doing

    @classmethod
    def start(cls, client: Any, create: dict[str, Any]) -> RunnerSession:
        """Create, attach (before start, so nothing is missed), start, await readiness.

        `create` holds `create_container` arguments with a ready `host_config` (the
        low-level API: the high-level one cannot set MaskedPaths).
        """
        import docker.errors

        try:
            container_id = client.api.create_container(**create)["Id"]
        except docker.errors.ImageNotFound as exc:
            raise SessionStartError(
                f"sandbox image {create.get('image')} is missing: run `conductor sandbox build`"
            ) from exc
        except docker.errors.APIError as exc:
            raise SessionStartError(f"could not create a sandbox container: {exc}") from exc
        try:
            raw = client.api.attach_socket(container_id, params=ATTACH_PARAMS)
            sock = getattr(raw, "_sock", raw)
            client.api.start(container_id)
            _cap_tcp_buffers(client, container_id)
            session = cls(client, container_id, sock)
            reply = session.request({"op": "ping"}, time.monotonic() + READY_TIMEOUT_S)
            session.preload = check_pong(reply)
            return session
        except (
            docker.errors.APIError,
            RunnerGone,
            DeadlineExceeded,
            ProtocolError,
            OSError,
        ) as exc:
            _remove_quietly(client, container_id)
            raise SessionStartError(
                f"the sandbox container did not become ready: {exc}. "
                "`conductor sandbox doctor` checks the setup."
            ) from exc

    @property
    def age_s(self) -> float:
        return time.monotonic() - self.started_at

    def _send(self, data: bytes, deadline: float) -> None:
        self.sock.settimeout(self.remaining(deadline))
        try:
            self.sock.sendall(data)
        except TimeoutError as exc:
            raise DeadlineExceeded("sending the request timed out") from exc
        except OSError as exc:
            raise RunnerGone(f"the attach stream broke: {exc}") from exc

    def _receive(self, deadline: float) -> None:
        """Read from the attach stream and sort its payloads into stdout/stderr.

        Docker's multiplexing headers carry the payload size: one larger than a frame
        may be is refused here, so nothing unbounded is ever buffered.
        """
        self.sock.settimeout(self.remaining(deadline))
        try:
            chunk = self.sock.recv(1 << 16)
        except TimeoutError as exc:
            raise DeadlineExceeded("no reply from the runner in time") from exc
        except OSError as exc:
            raise RunnerGone(f"the attach stream broke: {exc}") from exc
        if not chunk:
            raise RunnerGone("the runner's stream ended")
        self._raw += chunk
        while len(self._raw) >= 8:
            kind, size = self._raw[0], struct.unpack(">I", self._raw[4:8])[0]
            if size > self.frames.limit + 8:
                raise ProtocolError(f"the attach stream announced a {size}-byte payload")
            if len(self._raw) < 8 + size:
                break
            payload = bytes(self._raw[8 : 8 + size])
            del self._raw[: 8 + size]
            if kind == 1:
                self.frames.feed(payload)
            else:
                self.note_stderr(payload)

    def state(self) -> dict[str, Any] | None:
        """The container's State from Docker, None when it is gone already."""
        import docker.errors

        try:
            return self.client.api.inspect_container(self.container_id)["State"]
        except docker.errors.NotFound:
            return None

    def kill(self) -> None:
        """End the cell now, from any thread: shut the attach stream (a reader waiting on
        it returns at once, and the runner, seeing its input end, kills the cell and
        exits) and remove the container in the background."""
        self.killed_by_host = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        threading.Thread(
            target=_remove_quietly,
            args=(self.client, self.container_id),
            name="conductor-kill",
            daemon=True,
        ).start()

    def destroy(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        _remove_quietly(self.client, self.container_id)


def _cap_tcp_buffers(client: Any, container_id: str) -> None:
    """Bound the container's TCP buffers on cgroup v1 before its first cell runs (see
    cgroups.limit_tcp_of); KernelMemoryTCP in the host config asks for it too, for
    engines that apply it."""
    if cgroups.version() == 1:
        pid = client.api.inspect_container(container_id)["State"].get("Pid") or 0
        if pid > 0:
            cgroups.limit_tcp_of(pid)


def _remove_quietly(client: Any, container_id: str) -> None:
    import docker.errors

    try:
        client.api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:  # e.g. removal already in progress
        log.debug("removing %s: %s", container_id[:12], exc)
    except Exception as exc:  # daemon gone: the sweeper gets it next time
        log.debug("removing %s failed: %s", container_id[:12], exc)


class WarmPool:
    """Keeps `size` ready sessions for one container configuration."""

    def __init__(
        self, client: Any, make_kwargs: Any, *, size: int = 1, lifetime_s: float = 3600.0
    ) -> None:
        self.client = client
        self.make_kwargs = make_kwargs  # () -> create kwargs (fresh labels each time)
        self.size = size
        self.lifetime_s = lifetime_s
        self._ready: deque[RunnerSession] = deque()
        self._starting = 0
        self._waiters = 0
        self._failures = 0
        self._lock = threading.Condition()
        self._closed = False
        self._abandoned = False  # the process is leaving: start nothing, wait for nothing
        self.last_error: str | None = None

    def fresh(self, session: RunnerSession) -> bool:
        return session.age_s < self.lifetime_s - LIFETIME_MARGIN_S

    def acquire(self) -> RunnerSession:
        """A ready session for one run: a spare if one is warm, else the next to warm up.

        Every waiter gets a start of its own in flight, so concurrent runs warm in
        parallel. After a failed start, or when the pool is closed, the session is
        started here so the caller gets the error (or a session) directly.
        """
        give_up = time.monotonic() + READY_TIMEOUT_S
        with self._lock:
            failures_before = self._failures
            self._waiters += 1
            try:
                while True:
                    while self._ready:
                        session = self._ready.popleft()
                        if self.fresh(session):
                            self._refill_locked()
                            return session
                        self._destroy_later(session)
                    if self._closed or self._failures > failures_before:
                        break
                    if time.monotonic() >= give_up:
                        break
                    if self._starting < self._waiters:
                        self._start_locked()
                    self._lock.wait(timeout=give_up - time.monotonic())
            finally:
                self._waiters -= 1
            if self._abandoned:
                raise SessionStartError("the process is leaving: no sandbox is started now")
        return RunnerSession.start(self.client, self.make_kwargs())

    def release(self, session: RunnerSession) -> None:
        """A session is never reused: destroy it and start a replacement."""
        self._destroy_later(session)
        with self._lock:
            self._refill_locked()

    def warm(self) -> None:
        with self._lock:
            self._refill_locked()

    def _refill_locked(self) -> None:
        if self._closed:
            return
        missing = self.size - len(self._ready) - self._starting
        for _ in range(max(missing, 0)):
            self._start_locked()

    def _start_locked(self) -> None:
        self._starting += 1
        threading.Thread(target=self._start_one, name="conductor-warm", daemon=True).start()

    def _start_one(self) -> None:
        session = None
        try:
            session = RunnerSession.start(self.client, self.make_kwargs())
            self.last_error = None
        except Exception as exc:
            self.last_error = str(exc)
            if not self._closed:
                log.warning("could not warm a sandbox container: %s", exc)
        with self._lock:
            self._starting -= 1
            self._failures += session is None
            if session is not None and not self._closed:
                self._ready.append(session)
                session = None
            self._lock.notify_all()
        if session is not None:
            session.destroy()

    def _destroy_later(self, session: RunnerSession) -> None:
        threading.Thread(target=session.destroy, name="conductor-reap", daemon=True).start()

    def close(self) -> None:
        """Destroy the spares now (at exit); sessions in use are their owners' to close."""
        with self._lock:
            self._closed = True
            spares = list(self._ready)
            self._ready.clear()
        for session in spares:
            session.destroy()

    def abandon(self) -> None:
        """The process leaves now: start no container, wake every waiter (it gets a
        `SessionStartError`), and leave the spares to the reaper (sandbox/docker/reaper.py)."""
        with self._lock:
            self._closed = self._abandoned = True
            for session in self._ready:
                session.kill()  # its runner ends; the reaper removes the container
            self._ready.clear()
            self._lock.notify_all()


_POOLS: dict[str, WarmPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(key: str, factory: Any) -> WarmPool:
    """One pool per configuration per process; `factory()` makes it the first time."""
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool._closed:
            pool = _POOLS[key] = factory()
        return pool


def close_all_pools() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()


def abandon_all_pools() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.abandon()
