"""The unsafe backend: a plain subprocess with a timeout and resource limits.

It isolates nothing: the code can read and write whatever the user can. It exists for
development and for machines where the user has chosen it by name, and it warns.
"""

from __future__ import annotations

import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO

from conductor_kernel.interfaces import ExecResult
from conductor_kernel.text.output import DEFAULT_KEEP_BYTES, HARD_CAP_BYTES, CappedBuffer

MEMORY_LIMIT_BYTES = 1024 * 1024 * 1024
FILE_SIZE_LIMIT_BYTES = 64 * 1024 * 1024


def _limit_child() -> None:  # runs in the child between fork and exec
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT_BYTES, FILE_SIZE_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def run_process(
    argv: list[str],
    *,
    timeout: float,
    stdin: str = "",
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    backend: str,
    keep_bytes: int = DEFAULT_KEEP_BYTES,
    hard_cap_bytes: int = HARD_CAP_BYTES,
    preexec=_limit_child,
    pass_fds: tuple[int, ...] = (),
) -> ExecResult:
    """Run `argv`, capture capped stdout/stderr, kill its process group at the deadline.

    Shared by the subprocess and bubblewrap backends. `pass_fds` stay open in the
    child (bubblewrap reads its seccomp program and files from them).
    """
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd=cwd,
            preexec_fn=preexec,
            pass_fds=pass_fds,
        )
    except OSError as exc:
        return ExecResult(backend=backend, infra_error=f"could not start {argv[0]}: {exc}")
    assert proc.stdin and proc.stdout and proc.stderr
    # A thread feeds stdin: code that never reads it must not block us past the deadline.
    threading.Thread(target=_feed_stdin, args=(proc.stdin, stdin.encode()), daemon=True).start()
    out, err = CappedBuffer(keep_bytes), CappedBuffer(keep_bytes)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    deadline = started + timeout
    timed_out = flooded = False
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.feed(chunk)
                if out.total + err.total > hard_cap_bytes:
                    flooded = True
            if flooded:
                break
        if not (timed_out or flooded):
            # Both streams closed; the code may still be running (it closed its stdout).
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        # Also when stopped from outside (Ctrl-C raises in the wait): the code must not
        # outlive it.
        _kill_group(proc)
        sel.close()
        returncode = proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    return ExecResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=returncode if returncode >= 0 else None,
        signal=-returncode if returncode < 0 else None,
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        backend=backend,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        output_limit_hit=flooded,
    )


def _feed_stdin(pipe: IO[bytes], data: bytes) -> None:
    try:
        if data:
            pipe.write(data)
        pipe.close()
    except (BrokenPipeError, ValueError, OSError):
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the whole process group, so daemons and children die with the run."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class SubprocessSandbox:
    """Runs code with the host's Python in a temporary directory. Not isolated."""

    name = "subprocess"
    unsafe = True

    @staticmethod
    def probe() -> str | None:
        return None

    def __init__(self, python: str | None = None, **_options: object) -> None:
        self.python = python or sys.executable
        self._workdir = tempfile.TemporaryDirectory(prefix="conductor-unsafe-")

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        path = os.path.join(self._workdir.name, "cell.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(code)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        return run_process(
            [self.python, "-I", path],
            timeout=timeout,
            stdin=stdin,
            env=env,
            cwd=self._workdir.name,
            backend=self.name,
        )

    def close(self) -> None:
        self._workdir.cleanup()
