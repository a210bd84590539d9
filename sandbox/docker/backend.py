"""The Docker backend: hardened containers with a pre-forked runner, served warm.

Each `DockerSandbox` (one conductor run) takes a preloaded container from the warm
pool on its first `run` and keeps it; every `run` forks a fresh interpreter inside it.
The container is destroyed (and a spare started) at `close()` and after any timeout,
OOM, runaway output or runner death, so no state ever crosses runs and a wrecked
container never serves again. What the code does comes back as an `ExecResult`;
`infra_error` is kept for failures of Docker itself (daemon gone, image missing).

The container's configuration (uid separation, hardening, limits) is in
sandbox/docker/config.py; replies are checked by sandbox/protocol.py, and anything the
cell provokes (a malformed reply, a runner that died) comes back as an `ExecResult`
with `sandbox_error`, the container replaced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import threading
import time
from dataclasses import asdict
from typing import Any

from conductor_kernel.interfaces import ExecResult
from conductor_kernel.text.display import visible_line
from conductor_kernel.text.output import DEFAULT_KEEP_BYTES, HARD_CAP_BYTES
from sandbox import image as sandbox_image
from sandbox.docker import sweeper
from sandbox.docker.client import (  # noqa: F401 (re-exported: tests and the CLI use them)
    BUILD_HINT,
    daemon_problem,
    docker_client,
    image_problem,
)
from sandbox.docker.config import (  # noqa: F401 (re-exported: tests and the bench use them)
    ContainerLimits,
    minimal_environment,
    seccomp_profile,
)
from sandbox.docker.pool import RunnerSession, SessionStartError, WarmPool, shared_pool
from sandbox.preload import preload_args
from sandbox.protocol import (
    DeadlineExceeded,
    ProtocolError,
    RunnerGone,
    cancelled_result,
    reply_limit,
    result_from_reply,
    run_guarded,
)

log = logging.getLogger("conductor.sandbox")

MB = 1024 * 1024


class DockerSandbox:
    """A hardened Docker container with a pre-forked runner, kept for one run."""

    name = "docker"

    @staticmethod
    def probe(image: str | None = None) -> str | None:
        """None when this backend can run code here; otherwise why not."""
        return daemon_problem() or image_problem(image or sandbox_image.image_tag())

    def __init__(
        self,
        *,
        image: str | None = None,
        limits: ContainerLimits | None = None,
        pool_size: int = 1,
        acquire_now: bool = True,
        grace_s: float = 3.0,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
        hard_cap_bytes: int = HARD_CAP_BYTES,
        runner_command: list[str] | None = None,
        close_waits: bool = False,
        **options: Any,
    ) -> None:
        limit_fields = set(ContainerLimits.__dataclass_fields__)
        unknown = set(options) - limit_fields
        if unknown:
            raise TypeError(
                f"DockerSandbox got unknown options {sorted(unknown)}; known: "
                f"image, pool_size, grace_s, keep_bytes, hard_cap_bytes, {sorted(limit_fields)}"
            )
        self.image = image or sandbox_image.image_tag()
        self.limits = limits or ContainerLimits(**options)
        self.grace_s = grace_s  # host deadline = timeout + grace: the runner gets first go
        self.keep_bytes = keep_bytes
        self.hard_cap_bytes = hard_cap_bytes
        self.pool_size = pool_size
        # Whether `close` returns only once the container is removed (a batch's pool of
        # cells counts a sandbox alive until it closes); else it is removed in the
        # background.
        self.close_waits = close_waits
        # Tests only: a stand-in for the runner (e.g. one that answers with garbage).
        self.runner_command = runner_command
        self._session: RunnerSession | None = None
        self._pool: WarmPool | None = None
        self._ready_checked = False
        self._closed = False
        self._lock = threading.Lock()  # one execution at a time per container
        self._running: RunnerSession | None = None  # the session while a cell runs in it
        self.containers_used: list[str] = []
        if self.probe_quietly() is None:
            pool = self._get_pool()
            pool.warm()
            if acquire_now:
                # Take our container now, so waiting for a warm one is part of opening
                # the sandbox, never of a cell's run time. A failure here is reported
                # by the first run, as an infra error.
                self._session_for(timeout=0.0)

    # -- set-up --------------------------------------------------------------------

    def probe_quietly(self) -> str | None:
        problem = daemon_problem() or image_problem(self.image)
        self._ready_checked = problem is None
        return problem

    def _get_pool(self) -> WarmPool:
        client = docker_client()
        sweeper.sweep_once_per_process(client)
        config = json.dumps(
            [self.image, asdict(self.limits), self.pool_size, self.runner_command], sort_keys=True
        )
        key = hashlib.sha256(config.encode()).hexdigest()
        if self._pool is None:
            self._pool = shared_pool(key, lambda: self._new_pool(client))
        return self._pool

    def _new_pool(self, client: Any) -> WarmPool:
        limits, image, command = self.limits, self.image, self.runner_command

        def make_kwargs() -> dict[str, Any]:
            kwargs = limits.create_kwargs(image)
            # The heavy libraries to preload are chosen at each start, from the latest cells.
            kwargs["command"] = command or [*kwargs["command"], *preload_args()]
            kwargs["labels"] = {**sweeper.owner_labels(limits.lifetime_s), "conductor.image": image}
            return kwargs

        return WarmPool(client, make_kwargs, size=self.pool_size, lifetime_s=limits.lifetime_s)

    # -- the Sandbox protocol ---------------------------------------------------------

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        """Run one cell; whatever the cell (or a runner it broke) does comes back as data."""
        return run_guarded(
            self, code, timeout, stdin, what="Docker", replaced="the container was replaced"
        )

    def _run_locked(self, code: str, timeout: float, stdin: str, started: float) -> ExecResult:
        if self._closed:
            return self._infra("this sandbox was closed; open a new one")
        if not self._ready_checked:
            problem = self.probe_quietly()
            if problem:
                return self._infra(problem)
        session = self._session_for(timeout)
        if isinstance(session, ExecResult):
            return session
        request = {
            "op": "run",
            "code": code,
            "stdin": stdin,
            "timeout": timeout,
            "keep_bytes": self.keep_bytes,
            "hard_cap_bytes": self.hard_cap_bytes,
        }
        deadline = time.monotonic() + timeout + self.grace_s
        self._running = session
        try:
            if self._closed:
                session.kill()  # closed while this run waited for the lock
            reply = session.request(request, deadline, limit=reply_limit(self.keep_bytes))
            result = result_from_reply(reply, keep_bytes=self.keep_bytes, backend=self.name)
        except (DeadlineExceeded, RunnerGone, ProtocolError) as exc:
            return self._failed(session, exc, started)
        finally:
            self._running = None
        if session.killed_by_host:  # the reply raced the kill: the container goes anyway
            self._retire()
            return cancelled_result(self.name, started)
        if result.timed_out or result.oom_killed or result.output_limit_hit:
            self._retire()  # a wrecked container never serves again
        return result

    def _failed(self, session: RunnerSession, exc: Exception, started: float) -> ExecResult:
        """No reply: the host killed the cell, the deadline passed, the runner died or
        broke the protocol. The container is given up in every case."""
        if session.killed_by_host:
            self._retire()
            return cancelled_result(self.name, started)
        if isinstance(exc, RunnerGone):
            return self._runner_died(session, exc, started)
        self._retire()
        if isinstance(exc, DeadlineExceeded):
            return ExecResult(
                timed_out=True,
                signal=signal.SIGKILL,
                duration_s=time.monotonic() - started,
                backend=self.name,
                stderr="[sandbox: no answer by the deadline; the container was destroyed]",
            )
        log.warning("the sandbox runner broke the protocol: %s", visible_line(str(exc)))
        return ExecResult(
            backend=self.name,
            duration_s=time.monotonic() - started,
            sandbox_error=f"{exc}; the container was replaced",
        )

    def interrupt(self) -> bool:
        """Kill the running cell now, from any thread (cancel, Esc, Ctrl-C, end of run).

        The attach stream is shut, so the cell's `run` returns at once with `cancelled`
        set, and the runner, seeing its input end, kills the cell and exits; the
        container is removed and a fresh one serves the next cell. False when no cell
        was running.
        """
        session = self._running
        if session is None:
            return False
        session.kill()
        return True

    def start_now(self) -> None:
        """Hold a ready container now, or raise `SessionStartError` saying why not (a
        batch's pool then tries again; a run would only see it at its first cell)."""
        with self._lock:
            if self._closed:
                raise SessionStartError("this sandbox was closed")
            problem = None if self._ready_checked else self.probe_quietly()
            got = self._infra(problem) if problem else self._session_for(timeout=0.0)
        if isinstance(got, ExecResult):
            raise SessionStartError(got.infra_error or "the sandbox container did not start")

    def close(self) -> None:
        """Give the container up; a cell still running is killed first, not waited for."""
        self._closed = True
        self.interrupt()
        with self._lock:
            session = self._session
            if self.close_waits and session is not None:
                self._session = None
                session.destroy()
            else:
                self._retire()

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------

    def _session_for(self, timeout: float) -> RunnerSession | ExecResult:
        session = self._session
        pool = self._get_pool()
        # Too close to its lifetime for this run: the runner could expire mid-cell.
        if session is not None and session.age_s + timeout + 60 > self.limits.lifetime_s:
            self._retire()
            session = None
        if session is None:
            try:
                session = pool.acquire()
            except SessionStartError as exc:
                problem = daemon_problem() or str(exc)
                return self._infra(problem)
            self._session = session
            self.containers_used.append(session.container_id)
        return session

    def _retire(self) -> None:
        """Destroy our container in the background; the pool starts a replacement."""
        session, self._session = self._session, None
        if session is not None and self._pool is not None:
            self._pool.release(session)

    def _runner_died(self, session: RunnerSession, exc: Exception, started: float) -> ExecResult:
        duration = time.monotonic() - started
        problem = daemon_problem()
        if problem:
            self._retire()
            return self._infra(f"the Docker engine went away during the run: {problem}")
        try:
            state = session.state() or {}
        except Exception:
            state = {}
        self._retire()
        oom = bool(state.get("OOMKilled"))
        note = "the sandbox ran out of memory and was killed" if oom else "the runner ended"
        last_words = session.last_words()
        if last_words:
            log.warning("the sandbox runner's last output: %s", last_words)
        return ExecResult(
            stderr=f"[sandbox: {note}; the container was replaced] ({exc})",
            signal=signal.SIGKILL,
            oom_killed=oom,
            duration_s=duration,
            backend=self.name,
            sandbox_error=f"{note} ({exc}); the container was replaced",
        )

    def _infra(self, message: str) -> ExecResult:
        return ExecResult(backend=self.name, infra_error=message)
