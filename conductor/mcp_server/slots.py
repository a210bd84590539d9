"""How many runs the MCP server's `solve` keeps going at once.

Each run holds a sandbox, a model's connections and a thread until its learning is
done, so past the bound a call is refused at once with when to retry (as `conductor
serve --max-concurrent` answers 429), never queued: a queue nobody bounds is the same
overload, later.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural

DEFAULT_MAX_CONCURRENT = 4


class Busy(UserFacingError):
    """Every run slot is taken."""


class RunSlots:
    def __init__(self, limit: int = DEFAULT_MAX_CONCURRENT) -> None:
        if limit < 1:
            raise UserFacingError("--max-concurrent must be at least 1")
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """One slot for the block's run, or `Busy` when none is free."""
        if not self._free.acquire(blocking=False):
            raise Busy(
                f"{plural(self.limit, 'run')} in progress, as many as this server runs at once "
                "(`conductor mcp --max-concurrent N`); retry when one has finished"
            )
        try:
            yield
        finally:
            self._free.release()
