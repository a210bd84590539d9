"""A served run: a session's run in a worker thread, its events handed to the event loop.

The session is synchronous (its models and sandbox block), so each request's run goes
on a thread of its own and the HTTP side reads its events from an asyncio queue. The
run is the session's, recorded as any other; cancelling it (a client that went away)
stops it at its next step and it ends `interrupted`. Once the run has finished, the
thread goes on learning from it whether or not anyone still listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from conductor_kernel.events import Event, new_id

if TYPE_CHECKING:
    from conductor.config.settings import Settings
    from conductor.session import Session

log = logging.getLogger("conductor.serve")

# Builds a session for the settings and method a request chose.
SessionFactory = Callable[["Settings", str], "Session"]


class _End:
    """Put on the queue after the run's last event."""


END = _End()


def default_factory(settings: Settings, method: str) -> Session:
    from conductor.session import build_session

    return build_session(settings, method=method)


class ServedRun:
    def __init__(
        self,
        question: str,
        settings: Settings,
        method: str,
        *,
        factory: SessionFactory = default_factory,
        tags: dict[str, str] | None = None,
    ) -> None:
        # Named here, as the loop names runs, so the header can carry it before it starts.
        self.run_id = time.strftime("%Y%m%d-%H%M%S-") + new_id()[:6]
        self.question = question
        self.settings = settings
        self.method = method
        self.factory = factory
        self.tags = tags or {}
        self.session: Session | None = None
        self.finished = threading.Event()  # the thread, learning included, is done
        self._cancel = threading.Event()
        self._queue: asyncio.Queue[Event | BaseException | _End] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._work, name=f"conductor-serve-{self.run_id}", daemon=True
        )

    def start(self) -> ServedRun:
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop the run at its next step (before it starts, if it has not yet)."""
        self._cancel.set()
        session = self.session
        if session is not None:
            session.cancel()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    async def next(self, wait: float) -> Event | BaseException | _End | None:
        """The run's next event (an exception that ended it; END after the last), or None
        if nothing came within `wait` seconds. Safe to cancel: nothing is lost."""
        try:
            return await asyncio.wait_for(self._queue.get(), wait)
        except TimeoutError:
            return None

    def _put(self, item: Event | BaseException | _End) -> None:
        with contextlib.suppress(RuntimeError):  # the server's loop has closed
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _work(self) -> None:
        session: Session | None = None
        try:
            session = self.factory(self.settings, self.method)
            self.session = session
            if self._cancel.is_set():
                session.cancel()  # asked while the session was being built
            for event in session.solve(self.question, run_id=self.run_id, tags=self.tags):
                self._put(event)
        except BaseException as exc:
            if session is None or session.ledger is None:
                log.warning("a served run could not start: %s: %s", type(exc).__name__, exc)
            self._put(exc)
        finally:
            if session is not None:
                try:
                    session.close()
                except Exception:
                    log.exception("closing a served run's sandbox failed")
            self._put(END)
            self.finished.set()
