"""Signals that end a command: Ctrl-C, SIGTERM, SIGHUP (a closed terminal), SIGPIPE.

Python turns only SIGINT into an exception, and that exception lands wherever the main
thread happens to be. Here every stop signal is handled alike, and gently first: while
a run is in flight the command's `graceful` callback cancels it, so the loop ends it at
its next step with `run_finished` status `interrupted` written through the normal
path. Only when nothing can stop gracefully (before a run starts, while learning, or at
a second signal) does the handler raise `Interrupted`, a `KeyboardInterrupt` that names
the signal; the session still writes the run's end on its way out.

SIGPIPE stays ignored (Python's default), so a closed pipe is a `BrokenPipeError` on
write, which the session treats as a stop (session.py). A hung-up terminal gets its
descriptors pointed at /dev/null, so nothing later fails writing to it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

# Exit codes as a shell reports a death by each signal (128 + number).
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129, "SIGPIPE": 141}
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived where nothing could stop gracefully."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


# Given the signal's name, stop gracefully and return True, or return False.
Graceful = Callable[[str], bool]

received: list[str] = []
_graceful: list[Graceful] = []
_terminal_fds: list[int] = []  # of stdout/stderr, those that were a terminal at start


def _handler(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    received.append(name)
    if name == "SIGHUP":
        detach_terminal()
    if len(received) == 1 and _graceful and _graceful[-1](name):
        return
    raise Interrupted(name)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Handle the stop signals while inside (main thread only; elsewhere a no-op).

    The previous handlers come back on the way out, so calling the CLI in-process (as
    tests do) leaves the caller's signal handling as it was.
    """
    received.clear()
    _terminal_fds[:] = [fd for fd in (1, 2) if _isatty(fd)]
    previous: dict[int, Any] = {}
    for name in STOP_SIGNALS:
        number = getattr(signal, name)
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            previous[number] = signal.signal(number, _handler)
    try:
        yield
    finally:
        for number, handler in previous.items():
            if received and handler is signal.SIG_DFL:
                # The command is ending because of a stop signal: a repeat that comes
                # while it exits (a hung-up terminal can send SIGHUP twice) must not kill
                # it by the default action and lose the exit code it is about to return.
                handler = signal.SIG_IGN
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(number, handler)


@contextlib.contextmanager
def graceful(stop: Graceful) -> Iterator[None]:
    """While inside, a first stop signal calls `stop(name)` instead of raising."""
    _graceful.append(stop)
    try:
        yield
    finally:
        _graceful.remove(stop)


def last_signal() -> str | None:
    return received[0] if received else None


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def detach_terminal() -> None:
    """Point stdout/stderr that were the terminal at /dev/null: it is gone.

    (A hung-up terminal no longer answers `isatty`, hence the list made at start.)
    """
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in _terminal_fds:
            try:
                os.dup2(null, fd)
            except OSError:
                continue
    finally:
        os.close(null)


def silence_broken_stdout() -> None:
    """After a `BrokenPipeError` on stdout: send what is left to /dev/null.

    Without it, Python's flush of stdout at exit fails again and prints its own error.
    """
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(null)


def say(message: str) -> None:
    """A line to stderr that never raises (the terminal may be gone)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def pipes_close_alike() -> Iterator[None]:
    """rich's own answer to a closed pipe (`Console.on_broken_pipe`) points stdout at
    /dev/null and raises `SystemExit(1)`, which reads as a failure (`conductor runs show
    X | head` under `set -o pipefail`). Recognised here by exactly that, and raised again
    as the broken pipe it was, so every command ends 141 like `solve`. Recognised, not
    patched: a command that prints without rich (piped `runs list`, JSON) never imports
    it (25 ms or more of its start)."""
    before = _stdout_file()
    try:
        yield
    except SystemExit as exc:
        null = _file_of(os.devnull)
        if exc.code == 1 and before not in (None, null) and _stdout_file() == null:
            raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe") from None
        raise


def _file_of(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _stdout_file() -> tuple[int, int] | None:
    """Which file stdout is now (device and inode)."""
    try:
        found = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return found.st_dev, found.st_ino
