"""The bubblewrap backend: a warm runner in unshared namespaces, for machines without Docker.

Each `BwrapSandbox` (one conductor run) keeps one bubblewrap sandbox whose runner
(sandbox/runner/main.py, the same as Docker's) preloads numpy and sympy once and forks a
fresh child per cell; the host talks to it over bwrap's stdin/stdout pipes with the
checked protocol of sandbox/protocol.py. The layout is in sandbox/bwrap/launch.py.

The host never trusts anything inside to end the sandbox: it kills the sandbox's
cgroup (as root) and SIGKILLs the PID namespace's init by the pid bwrap reported on
`--json-status-fd` (the kernel then kills every process of the namespace), and bwrap's
own process group. After a timeout, an OOM kill, an output flood, a runner death or a
protocol breach the sandbox is destroyed and a fresh one, started in the background at
that moment, serves the next cell.

Which Python: the debootstrap root file system that `conductor sandbox build --offline`
unpacks (Debian's python3 with numpy and sympy, as in the Docker image) when it
exists, else the host's /usr/bin/python3 with whatever Debian packages the host has.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor_kernel.interfaces import ExecResult
from conductor_kernel.text.display import visible_line
from conductor_kernel.text.output import DEFAULT_KEEP_BYTES, HARD_CAP_BYTES
from sandbox.bwrap import launch
from sandbox.bwrap.launch import Limits
from sandbox.bwrap.session import BwrapSession
from sandbox.policy.cgroups import SandboxCgroup
from sandbox.policy.seccomp import SeccompUnavailable
from sandbox.protocol import (
    DeadlineExceeded,
    ProtocolError,
    RunnerGone,
    cancelled_result,
    check_pong,
    reply_limit,
    result_from_reply,
    run_guarded,
)

log = logging.getLogger("conductor.sandbox")

READY_TIMEOUT_S = 60.0
LIFETIME_MARGIN_S = 120.0
# bwrap's --die-with-parent fires when the *thread* that started it ends: every bwrap
# is started from this one long-lived thread.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="conductor-bwrap-spawn")

__all__ = ["BwrapSandbox", "BwrapSession", "Limits"]


class BwrapSandbox:
    """Runs each cell in a warm bubblewrap sandbox kept for one conductor run."""

    name = "bwrap"

    @staticmethod
    def probe() -> str | None:
        """None when bubblewrap can run code here; else why not (cached per process)."""
        return _probe_reason()

    def __init__(
        self,
        *,
        rootfs: str | Path | None = None,
        python: str | None = None,
        limits: Limits | None = None,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
        hard_cap_bytes: int = HARD_CAP_BYTES,
        grace_s: float = 3.0,
        runner_command: list[str] | None = None,
        warm: bool = True,
        **_options: object,
    ) -> None:
        self.limits = limits or Limits()
        root = Path(rootfs) if rootfs else _built_rootfs()
        self.root = root or Path("/")
        self.python = python or "/usr/bin/python3"
        hosted = self.root == Path("/")
        self.python_source = f"host {self.python}" if hosted else f"rootfs {self.root}"
        self.privileged = os.geteuid() == 0
        self.keep_bytes, self.hard_cap_bytes, self.grace_s = keep_bytes, hard_cap_bytes, grace_s
        self.runner_command = runner_command  # tests only: a stand-in runner
        self._overlay = launch.can_overlay(self.root)
        visible = Path(launch.PRIVATE_ROOTFS_MOUNT) if self._overlay else self.root
        self._static_args = launch.system_binds(self.root, visible)
        self._proc_hiding = launch.proc_hiding_args()
        self._lock = threading.Lock()
        self._session: BwrapSession | None = None
        self._running: BwrapSession | None = None  # the session while a cell runs in it
        self._spare: list[BwrapSession | Exception] = []
        self._spare_ready = threading.Condition()
        self._closed = False
        self._abandoned = False  # ended by signals alone: nothing of it is waited for
        self._threads: list[threading.Thread] = []
        self.sessions_started = 0
        _OPEN.add(self)
        if warm:
            self._warm_spare()

    # -- the Sandbox protocol ---------------------------------------------------------

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        """Run one cell; whatever the cell (or a runner it broke) does comes back as data."""
        return run_guarded(
            self, code, timeout, stdin, what="bubblewrap", replaced="it was replaced"
        )

    def interrupt(self) -> bool:
        """Kill the running cell now, from any thread (cancel, Esc, Ctrl-C, end of run).

        The cell's `run` returns at once with `cancelled` set; the sandbox it ran in is
        destroyed and a fresh one serves the next cell. False when no cell was running.
        """
        session = self._running
        if session is None:
            return False
        session.kill()
        return True

    def start_now(self) -> None:
        """Hold a started sandbox now, or raise saying why not (a batch's pool then tries
        again; a run would only see it at its first cell)."""
        with self._lock:
            got = (
                ExecResult(backend=self.name, infra_error="this sandbox was closed")
                if self._closed
                else self._session_for(0.0)
            )
        if isinstance(got, ExecResult):
            raise RuntimeError(got.infra_error or "bubblewrap did not start")

    def abandon(self) -> None:
        """End this sandbox's processes now by signals alone: no thread is joined, no
        process waited for (the process is leaving; the kernel reaps the rest)."""
        self._closed = self._abandoned = True
        with self._spare_ready:
            spares, self._spare = self._spare, [_LEFT]
            self._spare_ready.notify_all()
        for session in (self._running, self._session, *spares):
            if isinstance(session, BwrapSession):
                with contextlib.suppress(Exception):
                    session.kill()

    def close(self) -> None:
        """End every sandbox this object started; nothing of them runs when this returns.

        A cell still running is killed first, so closing never waits for its timeout.
        """
        if self._abandoned:
            self.abandon()
            return
        self._closed = True
        self.interrupt()
        with self._lock:
            self._closed = True
            self._retire(replace=False)
            for thread in list(self._threads):  # reaps, and a spare still starting
                thread.join(timeout=READY_TIMEOUT_S)
            with self._spare_ready:
                spares, self._spare = self._spare, []
            for spare in spares:
                if isinstance(spare, BwrapSession):
                    spare.destroy()

    def __enter__(self) -> BwrapSandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------

    def _run_locked(self, code: str, timeout: float, stdin: str, started: float) -> ExecResult:
        if self._closed:
            return ExecResult(backend=self.name, infra_error="this sandbox was closed")
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
        ooms_before = session.oom_kills()
        deadline = time.monotonic() + timeout + self.grace_s
        self._running = session
        try:
            if self._closed:
                session.kill()  # closed while this run waited for the lock
            reply = session.request(request, deadline, limit=reply_limit(self.keep_bytes))
            result = result_from_reply(reply, keep_bytes=self.keep_bytes, backend=self.name)
        except (DeadlineExceeded, RunnerGone, ProtocolError) as exc:
            return self._failed(session, exc, started, ooms_before)
        finally:
            self._running = None
        if session.killed_by_host:  # the reply raced the kill: the sandbox is gone anyway
            self._retire()
            return cancelled_result(self.name, started)
        if session.oom_kills() > ooms_before and not result.timed_out:
            result.oom_killed = True  # the host's own count, from the sandbox's cgroup
        if result.timed_out or result.oom_killed or result.output_limit_hit:
            self._retire()  # a wrecked sandbox never serves again
        return result

    def _failed(
        self, session: BwrapSession, exc: Exception, started: float, ooms_before: int
    ) -> ExecResult:
        """No reply: the host killed the cell, the deadline passed, the runner died or
        broke the protocol. The sandbox is given up in every case."""
        oom = session.oom_kills() > ooms_before  # read before the cgroup goes
        self._retire()
        duration = time.monotonic() - started
        if session.killed_by_host:
            return cancelled_result(self.name, started)
        if isinstance(exc, DeadlineExceeded):
            return ExecResult(
                timed_out=True,
                signal=signal.SIGKILL,
                duration_s=duration,
                backend=self.name,
                stderr="[sandbox: no answer by the deadline; the sandbox was destroyed]",
            )
        self._log_last_words(session)
        if isinstance(exc, RunnerGone):
            note = "ran out of memory" if oom else "its runner ended"
            return ExecResult(
                stderr=f"[sandbox: {note}; the sandbox was replaced] ({exc})",
                signal=signal.SIGKILL,
                oom_killed=oom,
                duration_s=duration,
                backend=self.name,
                sandbox_error=f"the sandbox {note} ({exc}); it was replaced",
            )
        log.warning("the sandbox runner broke the protocol: %s", visible_line(str(exc)))
        return ExecResult(
            backend=self.name, duration_s=duration, sandbox_error=f"{exc}; the sandbox was replaced"
        )

    def _log_last_words(self, session: BwrapSession) -> None:
        last_words = session.last_words()
        if last_words:
            log.warning("the sandbox runner's last output: %s", last_words)

    def _session_for(self, timeout: float) -> BwrapSession | ExecResult:
        session = self._session
        if session is not None and session.age_s + timeout + LIFETIME_MARGIN_S > (
            self.limits.lifetime_s
        ):
            self._retire()
            session = None
        if session is None:
            taken = self._take_spare()
            if isinstance(taken, Exception):
                return ExecResult(backend=self.name, infra_error=str(taken))
            session = self._session = taken
        return session

    def _retire(self, *, replace: bool = True) -> None:
        session, self._session = self._session, None
        if session is not None:
            self._background(session.destroy, "conductor-bwrap-reap")
        if replace and not self._closed:
            self._warm_spare()

    def _warm_spare(self) -> None:
        with self._spare_ready:
            if self._spare:
                return
            if self._abandoned:
                self._spare.append(_LEFT)
                self._spare_ready.notify_all()
                return
            self._spare.append(_PENDING)
        self._background(self._start_spare, "conductor-bwrap-warm")

    def _background(self, target: object, name: str) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=target, name=name, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _start_spare(self) -> None:
        try:
            made: BwrapSession | Exception = self._start_session()
        except Exception as exc:
            made = exc
        with self._spare_ready:
            if self._spare != [_LEFT]:
                self._spare = [made]
            self._spare_ready.notify_all()
            closed = self._closed
        if closed and isinstance(made, BwrapSession):
            made.destroy()

    def _take_spare(self) -> BwrapSession | Exception:
        if not self._spare:
            self._warm_spare()
        with self._spare_ready:
            self._spare_ready.wait_for(lambda: self._spare and self._spare[0] is not _PENDING)
            taken = self._spare[0] if self._spare[0] is _LEFT else self._spare.pop()
        # No spare is kept while this one serves (each costs a preloaded interpreter);
        # `_retire` starts the replacement the moment a sandbox is given up.
        return taken

    def _start_session(self) -> BwrapSession:
        cgroup = None
        if self.privileged:
            cgroup = SandboxCgroup.create(self.limits.memory_bytes, self.limits.max_processes + 8)
        cell_uid = launch.new_host_uid() if self.privileged else None
        fds: dict[str, int] = {}
        try:
            fds["seccomp"] = launch.seccomp_fd()
            files = [
                *launch.etc_files(cell_uid or launch.SANDBOX_UID),
                *launch.proc_covers(self.limits.memory_bytes),
                *launch.runner_files(),
            ]
            for path, data in files:
                fds[path] = launch.data_fd(data, name="conductor-file")
            status_r, fds["status"] = os.pipe()
            command = self.runner_command or launch.runner_command(
                self.python, cell_uid=cell_uid, limits=self.limits, cgroup=cgroup is not None
            )
            argv = [
                "bwrap",
                *launch.namespace_args(self.privileged),
                *self._static_args,
                *launch.scratch_args(self.limits),
                *[
                    arg
                    for path, _ in files
                    for arg in ("--perms", "0444", "--ro-bind-data", str(fds[path]), path)
                ],
                *self._proc_hiding,
                *("--remount-ro", "/", "--chdir", "/", "--clearenv"),
                *[a for k, v in launch.SANDBOX_ENV.items() for a in ("--setenv", k, v)],
                *("--seccomp", str(fds["seccomp"]), "--json-status-fd", str(fds["status"])),
                "--",
                *command,
            ]
            proc = _SPAWNER.submit(
                subprocess.Popen,
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd="/",
                pass_fds=tuple(fds.values()),
                preexec_fn=launch.child_setup(
                    self.limits,
                    cgroup,
                    keep_uid=not self.privileged,
                    overlay=launch.overlay_rootfs(self.root) if self._overlay else None,
                    timens=launch.time_namespace() if self.privileged else None,
                ),
            ).result()
        except (OSError, SeccompUnavailable, subprocess.SubprocessError) as exc:
            if cgroup is not None:
                cgroup.remove()
            raise RuntimeError(f"cannot start bubblewrap: {exc}") from exc
        finally:
            for fd in fds.values():
                os.close(fd)
        session = BwrapSession(proc, status_r, cgroup)
        self.sessions_started += 1
        try:
            session.preload = check_pong(
                session.request({"op": "ping"}, time.monotonic() + READY_TIMEOUT_S)
            )
        except (RunnerGone, DeadlineExceeded, ProtocolError) as exc:
            words = session.last_words()
            session.destroy()
            raise RuntimeError(f"bubblewrap could not start the sandbox: {words or exc}") from exc
        return session


_PENDING = RuntimeError("starting")
_LEFT = RuntimeError("the process is leaving: no sandbox is started now")
_OPEN: weakref.WeakSet[BwrapSandbox] = weakref.WeakSet()
_leaving = False


def leave_quickly() -> None:
    """The process exits on a stop signal: every open sandbox is killed by signals, with
    no wait (see `BwrapSandbox.abandon`); their later closes, and the close of every
    sandbox at exit, do the same."""
    global _leaving
    _leaving = True
    for sandbox in list(_OPEN):
        sandbox.abandon()


@atexit.register
def _close_all() -> None:
    """Sandboxes nobody closed end with the process (bwrap would too, a moment later)."""
    for sandbox in list(_OPEN):
        with contextlib.suppress(Exception):
            sandbox.abandon() if _leaving else sandbox.close()


def _built_rootfs() -> Path | None:
    """The root file system that the offline image build unpacked, if there is one."""
    from sandbox import image  # stdlib-only at import; the docker SDK stays unloaded

    return image.rootfs_path()


@functools.cache
def _probe_reason() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (`apt-get install bubblewrap`)"
    try:
        launch.seccomp_fd()
    except (SeccompUnavailable, OSError) as exc:
        return f"no seccomp filter can be built: {exc}"
    sandbox = BwrapSandbox(warm=False)
    try:
        result = sandbox.run("pass", timeout=20)
    except BaseException:  # a stop signal: the process leaves, waiting for no sandbox
        leave_quickly()
        raise
    sandbox.close()
    if result.ok:
        return None
    detail = result.infra_error or result.stderr.strip()[-300:] or f"exit {result.exit_code}"
    hint = ""
    if "namespace" in detail or "uid map" in detail or "Operation not permitted" in detail:
        hint = (
            " (are unprivileged user namespaces allowed? check "
            "`sysctl user.max_user_namespaces kernel.unprivileged_userns_clone`)"
        )
    return f"a trivial bwrap sandbox failed: {detail}{hint}"
