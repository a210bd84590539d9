"""The Docker backend: hardened containers with a pre-forked runner, served warm.

Each `DockerSandbox` (one conductor run) takes a preloaded container from the warm
pool on its first `run` and keeps it; every `run` forks a fresh interpreter inside it.
The container is destroyed (and a spare started) at `close()` and after any timeout,
OOM, runaway output or runner death, so no state ever crosses runs and a wrecked
container never serves again. What the code does comes back as an `ExecResult`;
`infra_error` is kept for failures of Docker itself (daemon gone, image missing).

Hardening, all on by default: a non-root user, no network, a read-only root, size-
and inode-capped tmpfs for /tmp and /work, every capability dropped, no-new-privileges,
a seccomp denylist (sandbox/seccomp_profile.json), pids/memory(no swap)/CPU limits,
nofile/fsize/core ulimits, an init process, capped logs, and an explicit minimal
environment (nothing of the host's, API keys above all). Images are never pulled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conductor.interfaces import ExecResult
from sandbox import image as sandbox_image
from sandbox import sweeper
from sandbox.output import DEFAULT_KEEP_BYTES, HARD_CAP_BYTES, CappedBuffer
from sandbox.pool import (
    DeadlineExceeded,
    RunnerGone,
    RunnerSession,
    SessionStartError,
    WarmPool,
    shared_pool,
)

log = logging.getLogger("conductor.sandbox")

SECCOMP_PROFILE = Path(__file__).resolve().parent / "seccomp_profile.json"
BUILD_HINT = "run `conductor sandbox build`"
MB = 1024 * 1024


@dataclass(frozen=True)
class ContainerLimits:
    """Resource limits of one sandbox container; every field has a safe default."""

    memory_mb: int = 512  # RAM; swap is the same figure, i.e. none
    cpus: float = 1.0
    pids: int = 128  # processes and threads together
    tmpfs_mb: int = 64  # each of /tmp and /work
    tmpfs_inodes: int = 4096
    nofile: int = 256
    fsize_mb: int = 64  # largest file the code may write
    lifetime_s: float = 3600.0  # the runner exits by then even if we vanish

    def create_kwargs(self, image: str) -> dict[str, Any]:
        """The docker SDK `containers.create` arguments (labels added per container)."""
        from docker.types import LogConfig, Ulimit

        tmpfs_opts = f"rw,noexec,nosuid,nodev,size={self.tmpfs_mb}m,nr_inodes={self.tmpfs_inodes}"
        uid = sandbox_image.SANDBOX_UID
        workdir = sandbox_image.WORKDIR
        return {
            "image": image,
            "command": [
                "python3",
                "-I",
                sandbox_image.RUNNER_IN_IMAGE,
                "--workdir",
                workdir,
                "--lifetime",
                f"{self.lifetime_s:.0f}",
                "--kill-strays",
            ],
            "user": f"{uid}:{uid}",
            "working_dir": workdir,
            "environment": minimal_environment(),
            "hostname": "sandbox",
            "network_disabled": True,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {
                "/tmp": f"{tmpfs_opts},mode=1777",
                workdir: f"{tmpfs_opts},mode=0700,uid={uid},gid={uid}",
            },
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true", f"seccomp={seccomp_profile()}"],
            "pids_limit": self.pids,
            "mem_limit": self.memory_mb * MB,
            "memswap_limit": self.memory_mb * MB,
            "nano_cpus": int(self.cpus * 1e9),
            "shm_size": 16 * MB,
            "ipc_mode": "private",
            "ulimits": [
                Ulimit(name="nofile", soft=self.nofile, hard=self.nofile),
                Ulimit(name="fsize", soft=self.fsize_mb * MB, hard=self.fsize_mb * MB),
                Ulimit(name="core", soft=0, hard=0),
            ],
            "init": True,
            "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
            "stdin_open": True,
            "detach": False,  # with stdin_open, the SDK then sets StdinOnce: our socket
            # closing ends the runner, so no container outlives us by more than a moment
            "tty": False,
            "auto_remove": True,
        }


def minimal_environment() -> dict[str, str]:
    """The container's whole environment: nothing is taken from the host's."""
    return {
        "PATH": sandbox_image.IMAGE_PATH_ENV,
        "LANG": "C.UTF-8",
        "HOME": sandbox_image.WORKDIR,
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MPLCONFIGDIR": "/tmp",
    }


def seccomp_profile() -> str:
    """The profile as the Docker API wants it: the JSON text itself, compacted."""
    return json.dumps(json.loads(SECCOMP_PROFILE.read_text()), separators=(",", ":"))


_client_lock = threading.Lock()
_client: Any = None


def docker_client() -> Any:
    """A shared docker SDK client that negotiates the API version with the engine."""
    global _client
    with _client_lock:
        if _client is None:
            import docker

            _client = docker.from_env(version="auto", timeout=30)
        return _client


def daemon_problem() -> str | None:
    """Why the Docker engine cannot be used here, or None when it answers."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker Python package is missing: `pip install docker`"
    try:
        docker_client().ping()
    except Exception as exc:
        _forget_client()
        return (
            f"no Docker engine answers ({type(exc).__name__}: {exc}); start dockerd "
            "or set DOCKER_HOST"
        )
    return None


def _forget_client() -> None:
    global _client
    with _client_lock:
        _client = None


def image_problem(tag: str) -> str | None:
    import docker.errors

    try:
        docker_client().images.get(tag)
    except docker.errors.ImageNotFound:
        return f"the sandbox image {tag} is missing: {BUILD_HINT}"
    except docker.errors.APIError as exc:
        return f"could not look up the sandbox image {tag}: {exc}"
    return None


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
        self._session: RunnerSession | None = None
        self._pool: WarmPool | None = None
        self._ready_checked = False
        self._closed = False
        self._lock = threading.Lock()  # one execution at a time per container
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
        config = json.dumps([self.image, asdict(self.limits), self.pool_size], sort_keys=True)
        key = hashlib.sha256(config.encode()).hexdigest()
        if self._pool is None:
            self._pool = shared_pool(key, lambda: self._new_pool(client))
        return self._pool

    def _new_pool(self, client: Any) -> WarmPool:
        limits, image = self.limits, self.image

        def make_kwargs() -> dict[str, Any]:
            kwargs = limits.create_kwargs(image)
            kwargs["labels"] = {**sweeper.owner_labels(limits.lifetime_s), "conductor.image": image}
            return kwargs

        return WarmPool(client, make_kwargs, size=self.pool_size, lifetime_s=limits.lifetime_s)

    # -- the Sandbox protocol ---------------------------------------------------------

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        with self._lock:
            started = time.monotonic()
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
            try:
                reply = session.request(request, time.monotonic() + timeout + self.grace_s)
            except DeadlineExceeded:
                self._retire()
                return ExecResult(
                    timed_out=True,
                    signal=signal.SIGKILL,
                    duration_s=time.monotonic() - started,
                    backend=self.name,
                    stderr="[sandbox: no answer by the deadline; the container was destroyed]",
                )
            except RunnerGone as exc:
                return self._runner_died(session, exc, started)
            result = self._to_result(reply)
            if result.timed_out or result.oom_killed or result.output_limit_hit:
                self._retire()  # a wrecked container never serves again
            return result

    def close(self) -> None:
        with self._lock:
            self._closed = True
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
        note = (
            "the sandbox ran out of memory and was killed"
            if oom
            else "the code ended the sandbox's runner process"
        )
        last_words = session.runner_stderr.decode("utf-8", "replace").strip()[-500:]
        if last_words:
            log.warning("the sandbox runner's last output: %s", last_words)
        return ExecResult(
            stderr=f"[sandbox: {note}; the container was replaced] ({exc})",
            signal=signal.SIGKILL,
            oom_killed=oom,
            duration_s=duration,
            backend=self.name,
        )

    def _to_result(self, reply: dict[str, Any]) -> ExecResult:
        if reply.get("op") != "result":
            self._retire()
            return self._infra(f"the sandbox runner answered {reply!r:.300}")
        out, err = (
            _decode_stream(reply["stdout"], self.keep_bytes),
            _decode_stream(reply["stderr"], self.keep_bytes),
        )
        return ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=reply.get("exit_code"),
            signal=reply.get("signal"),
            timed_out=bool(reply.get("timed_out")),
            oom_killed=bool(reply.get("oom_killed")),
            duration_s=float(reply.get("duration_s", 0.0)),
            backend=self.name,
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            output_limit_hit=bool(reply.get("output_limit_hit")),
        )

    def _infra(self, message: str) -> ExecResult:
        return ExecResult(backend=self.name, infra_error=message)


def _decode_stream(data: dict[str, Any], keep: int) -> CappedBuffer:
    """Rebuild the runner's head/tail capture as the shared `CappedBuffer` shape."""
    import base64

    buffer = CappedBuffer(keep)
    buffer.feed(base64.b64decode(data["head"]))
    buffer.feed(base64.b64decode(data["tail"]))
    buffer.total = int(data["bytes"])
    return buffer
