"""One running bubblewrap sandbox as the host holds it: pipes, status, kill handles.

The host reaches the runner over bwrap's stdin/stdout (frames, sandbox/protocol.py) and
reads the runner's diagnostics from bwrap's stderr. From bwrap's `--json-status-fd` it
learns the host pid of the sandbox's PID namespace init and opens a pidfd on it at
once: SIGKILL to that process makes the kernel kill every process of the namespace,
whatever they did to themselves or to the init. With the sandbox's cgroup (as root)
and bwrap's own process group, that is how `destroy` ends a sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time

from sandbox.policy.cgroups import SandboxCgroup
from sandbox.protocol import FramedConversation, RunnerGone


class BwrapSession(FramedConversation):
    """One running bubblewrap sandbox and the framed conversation with its runner."""

    def __init__(self, proc: subprocess.Popen[bytes], status_fd: int, cgroup: SandboxCgroup | None):
        super().__init__()
        self.proc = proc
        self.cgroup = cgroup
        self.started_at = time.monotonic()
        self.init_pid: int | None = None  # the PID namespace's init, as bwrap reported it
        self._init_pidfd: int | None = None
        self._status_fd = status_fd
        self._status = bytearray()
        self.preload: dict = {}
        self.killed_by_host = False  # set by `kill`: a cell's end was the host's doing
        self._handles = threading.Lock()  # the init's pidfd, used from several threads
        assert proc.stdin and proc.stdout and proc.stderr
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        os.set_blocking(status_fd, False)

    @property
    def age_s(self) -> float:
        return time.monotonic() - self.started_at

    def _send(self, data: bytes, deadline: float) -> None:
        assert self.proc.stdin
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view:
            if not select.select([], [fd], [], self.remaining(deadline))[1]:
                continue
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise RunnerGone(f"the runner's stdin broke: {exc}") from exc

    def _receive(self, deadline: float) -> None:
        assert self.proc.stdout and self.proc.stderr
        out, err = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        watched = [out, err] + ([self._status_fd] if self._status_fd >= 0 else [])
        ready = select.select(watched, [], [], self.remaining(deadline))[0]
        for fd in ready:
            chunk = _read(fd)
            if fd == self._status_fd:
                self._note_status(chunk)
            elif fd == err:
                self.note_stderr(chunk or b"")
            elif chunk == b"":
                raise RunnerGone("the runner's stream ended")
            elif chunk:
                self.frames.feed(chunk)

    def _note_status(self, chunk: bytes | None) -> None:
        if chunk == b"":
            os.close(self._status_fd)
            self._status_fd = -1
            return
        self._status += chunk or b""
        del self._status[: max(0, len(self._status) - 65536)]
        if self.init_pid is None and b"child-pid" in self._status:
            with contextlib.suppress(ValueError, KeyError):
                first = bytes(self._status).split(b"}", 1)[0] + b"}"
                self.init_pid = int(json.loads(first)["child-pid"])
                with contextlib.suppress(OSError), self._handles:
                    self._init_pidfd = os.pidfd_open(self.init_pid)

    def oom_kills(self) -> int:
        return self.cgroup.oom_kills() if self.cgroup else 0

    def kill(self) -> None:
        """SIGKILL the whole sandbox by the handles the host holds, from any thread.

        Only signals: a thread reading the runner's pipes sees them end and gives the
        session up itself (`destroy`), so no descriptor is closed under a reader.
        """
        self.killed_by_host = True
        self._signal_all()

    def _signal_all(self) -> None:
        with self._handles:
            if self._init_pidfd is not None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(self._init_pidfd, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def destroy(self) -> None:
        """Kill the whole sandbox by the handles the host holds, then clean up."""
        self._signal_all()
        with self._handles:
            if self._init_pidfd is not None:
                os.close(self._init_pidfd)
                self._init_pidfd = None
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                pipe and pipe.close()
        if self._status_fd >= 0:
            os.close(self._status_fd)
            self._status_fd = -1
        if self.cgroup is not None:
            self.cgroup.kill_all()
            self.cgroup.remove()


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""
