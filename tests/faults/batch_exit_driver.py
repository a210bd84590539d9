"""`conductor batch` in a real subprocess, with its sandbox backend slowed where a test
says, so a stop signal finds work that would hold a careless exit open.

Run as `python batch_exit_driver.py batch ...` (any `conductor` arguments). $EXIT_FAULT:

- `close`: closing a sandbox hangs for ten minutes before it really closes (a Docker
  daemon slow to remove containers, a bubblewrap sandbox slow to die);
- `start`: a sandbox starts for real, then its start hangs for ten minutes (a container
  created during warm-up whose runner never answers).

Each hang appends a line to $EXIT_MARKS first (`close` or `start <handle>`: the
container id or the bwrap pid), and `done` when it ever returns; the test sends its
signal once a mark is there. Nothing else is faked: the CLI, the batch runner, the
pool, the backends, the demo model and the transcripts are the real ones.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

FAULT = os.environ.get("EXIT_FAULT", "")
MARKS = Path(os.environ.get("EXIT_MARKS", os.devnull))
HANG_S = 600.0
_lock = threading.Lock()


def mark(line: str) -> None:
    with _lock, MARKS.open("a") as out:
        out.write(line + "\n")


def hang_then(real: Any, what: str) -> Any:
    def slowed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not any(t.name.startswith("batch-worker") for t in threading.enumerate()):
            return real(self, *args, **kwargs)  # the backend's probe, before the batch
        result = real(self, *args, **kwargs) if what == "start" else None
        handle = getattr(result, "container_id", None) or getattr(
            getattr(result, "proc", None), "pid", ""
        )
        mark(f"{what} {handle}".strip())
        time.sleep(HANG_S)
        if what == "close":
            result = real(self, *args, **kwargs)
        mark("done")
        return result

    return slowed


def install() -> None:
    from sandbox.bwrap.backend import BwrapSandbox
    from sandbox.docker.backend import DockerSandbox
    from sandbox.docker.pool import RunnerSession

    if FAULT == "close":
        DockerSandbox.close = hang_then(DockerSandbox.close, "close")  # type: ignore[method-assign]
        BwrapSandbox.close = hang_then(BwrapSandbox.close, "close")  # type: ignore[method-assign]
    elif FAULT == "start":
        real_start = RunnerSession.start.__func__  # type: ignore[attr-defined]
        RunnerSession.start = classmethod(hang_then(real_start, "start"))  # type: ignore[method-assign,assignment]
        BwrapSandbox._start_session = hang_then(BwrapSandbox._start_session, "start")  # type: ignore[method-assign]


if __name__ == "__main__":
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # a test that gives up asks where it hangs
    install()
    from conductor.cli import main

    sys.exit(main(sys.argv[1:]))
