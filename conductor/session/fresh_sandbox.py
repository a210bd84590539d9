"""A sandbox of its own for the checks made after a run: never the run's sandbox.

Learning re-runs stored tools, tests the tools a run made and lets scorers run code
(P3's `sat(solution())`); a scorer check that runs where the run's cells ran can be
shaped by what they left there (files in /work or /tmp, anything planted for a later
`python3`), so a tool could "reproduce" an answer only because the run prepared it.
`FreshSandbox` wraps a factory: nothing is started until the first check runs code,
and `close()` ends what was started. A session passes one to its after-run hooks in
the place of the run's own sandbox (conductor/session/__init__.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from conductor_kernel.interfaces import ExecResult, Sandbox


class FreshSandbox:
    """A sandbox opened on first use from `factory`, for one run's checks."""

    def __init__(self, factory: Callable[[], Sandbox | None]) -> None:
        self._factory = factory
        self._inner: Sandbox | None = None
        self._failure: str | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def name(self) -> str:
        return getattr(self._inner, "name", "fresh")

    @property
    def opened(self) -> bool:
        """Whether a sandbox was started (some check ran code)."""
        return self._inner is not None

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        inner = self._open()
        if inner is None:
            problem = self._failure or "this sandbox was closed"
            return ExecResult(backend="fresh", infra_error=problem)
        return inner.run(code, timeout=timeout, stdin=stdin)

    def interrupt(self) -> bool:
        stop = getattr(self._inner, "interrupt", None)
        return bool(stop()) if callable(stop) else False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()

    def _open(self) -> Sandbox | None:
        with self._lock:
            if self._inner is None and not self._closed and self._failure is None:
                try:
                    self._inner = self._factory()
                except Exception as exc:  # reported as the check's infra error
                    self._failure = f"could not open a fresh sandbox: {exc}"
                if self._inner is None and self._failure is None:
                    self._failure = "no sandbox is configured for these checks"
            return self._inner
