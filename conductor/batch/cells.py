"""A batch's sandboxes: one pool of cells sized to the host, shared by the items in flight.

A batch used to open a sandbox per item in flight, and a second one for each item's
after-run checks, so at concurrency 64 on a 2-core machine Docker held some 128
containers, throughput collapsed and starts began to fail. Here every sandbox of a
batch (the items' own and their checks') comes from one `CellPool` of a fixed size:
an item waits for a free cell instead of creating a container; a cell is handed back
when its sandbox closes. The size comes from the host (its cores and memory) unless the
`sandbox_cells` setting names one.

A cell that fails to start is tried again a few times; only a failure that persists
reaches the item, as an error (`CellStartError`). A batch that stops wakes every item
still waiting for a cell (`CellsClosed`): they end interrupted, to run again.

A batch stopped by a signal must leave at once (`abandon`): sandboxes still open are
closed on background threads and the backends end theirs without waiting (`leave`,
sandbox.registry.leave_quickly: a detached reaper removes Docker's containers), so no
container removal or warm-up stands between the signal and the exit.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from conductor_kernel.errors import UserFacingError
from conductor_kernel.interfaces import ExecResult, Sandbox, SandboxUnavailable

log = logging.getLogger("conductor.batch")

# What one cell is allowed to hold at most (a sandbox's memory bound is 512 MiB by
# default) and how many cells a core carries: cells mostly wait for the model.
CELL_MEMORY_BYTES = 512 * 1024 * 1024
CELLS_PER_CORE = 2
START_ATTEMPTS = 3
RETRY_DELAY_S = 0.5
_POLL_S = 0.05


class CellStartError(UserFacingError):
    """A sandbox cell could not be started, even after retries."""


class CellsClosed(Exception):
    """The batch stopped while an item waited for a cell."""


def host_cells(cores: int | None = None, memory_bytes: int | None = None) -> int:
    """How many sandboxes this host can keep alive at once: two per core, and no more
    than half the memory holds (at least one)."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            memory_bytes = 4 * CELL_MEMORY_BYTES
    by_memory = (memory_bytes // 2) // CELL_MEMORY_BYTES
    return max(1, min(cores * CELLS_PER_CORE, by_memory))


class CellPool:
    """At most `size` sandboxes from `open_box` alive at once; see the module's doc.

    Told what is coming (`expect`), the pool starts sandboxes ahead of the items that
    will ask: up to `spares` of them wait started, within the same `size`, and each is
    handed to one item only, untouched, as a sandbox started on demand would be. A
    spare that fails to start is dropped (the item then starts its own, with retries,
    and sees the failure itself); warming ahead stops after `attempts` such failures.
    """

    def __init__(
        self,
        open_box: Callable[[], Sandbox | None],
        size: int | None = None,
        *,
        attempts: int = START_ATTEMPTS,
        retry_delay_s: float = RETRY_DELAY_S,
        leave: Callable[[], None] | None = None,
    ) -> None:
        self.open_box = open_box
        self.leave = leave  # the backends end their sandboxes without waiting
        self.size = size if size else host_cells()
        self.attempts = max(1, attempts)
        self.retry_delay_s = retry_delay_s
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._abandoned = threading.Event()
        self.alive = 0  # cells taken: in use, waiting started, or starting
        self.peak = 0  # the most cells alive at once, for reports and benchmarks
        self._ready: deque[Sandbox] = deque()
        self._warming = 0
        self._expected = 0  # opens still to come, as the batch said
        self._waiting = 0  # opens waiting now
        self._spares = 0
        self.warm_failures = 0
        self.handed_warm = 0  # opens served by a sandbox started ahead

    def expect(self, opens: int, spares: int) -> None:
        """`opens` more items will each ask for a cell: keep up to `spares` sandboxes
        started ahead of them (0: start each on demand, as before)."""
        with self._cond:
            self._expected, self._spares = max(0, opens), max(0, spares)
            self._warm_locked()

    def open(self) -> Sandbox | None:
        """A sandbox from a free cell, waiting for one; None when runs have no sandbox."""
        with self._cond:
            self._expected = max(0, self._expected - 1)
            self._waiting += 1
            try:
                box = self._wait_for_cell_locked()
            finally:
                self._waiting -= 1
            if box is not None:
                self._warm_locked()  # this item is served: warm for those still coming
                return PooledCell(box, self._give_back, self._abandoned)
        try:
            box = self._start()
        except BaseException:
            self._give_back()
            raise
        if box is None:
            self._give_back()
            return None
        return PooledCell(box, self._give_back, self._abandoned)

    def _wait_for_cell_locked(self) -> Sandbox | None:
        """A spare started ahead, or None once this item may start its own in a cell
        it now holds; CellsClosed when the batch stops first."""
        while True:
            if self._closed.is_set():
                raise CellsClosed("the batch stopped while this item waited for a sandbox")
            if self._ready:
                self.handed_warm += 1
                return self._ready.popleft()
            # Start its own in a free cell unless a spare already starting is its own.
            if self.alive < self.size and self._warming < self._waiting:
                self._take_cell_locked()
                return None
            self._cond.wait(timeout=_POLL_S)

    def close_spares(self) -> None:
        """The items are done: end the sandboxes still waiting, start no more."""
        with self._cond:
            self._expected = self._spares = 0
            spares, self._ready = list(self._ready), deque()
        for box in spares:
            self._end_spare(box)

    def stop_waiting(self) -> None:
        """The batch stops: items waiting for a cell give up (CellsClosed), and no spare
        is started. Returns at once (a stop signal's handler calls it before it cancels
        the runs in flight); the spares are ended when the runner returns."""
        self._closed.set()
        with self._cond:
            self._cond.notify_all()

    def abandon(self) -> None:
        """The process leaves now (a stop signal): nobody waits for a cell, closing one
        no longer waits for its sandbox to end, and the backends end theirs unwaited."""
        self._closed.set()
        if self._abandoned.is_set():
            return
        self._abandoned.set()
        self.close_spares()
        if self.leave is not None:
            try:
                self.leave()
            except Exception as exc:  # cleanup must never hold the exit up
                log.warning("could not hand the sandboxes to their reaper: %s", exc)

    @property
    def abandoned(self) -> bool:
        return self._abandoned.is_set()

    def _take_cell_locked(self) -> None:
        self.alive += 1
        self.peak = max(self.peak, self.alive)

    def _warm_locked(self) -> None:
        """Start spares while cells are free and items are coming for them."""
        if self._closed.is_set() or self.warm_failures >= self.attempts:
            return
        coming = self._expected + self._waiting
        while self.alive < self.size and len(self._ready) + self._warming < min(
            self._spares, coming
        ):
            self._take_cell_locked()
            self._warming += 1
            threading.Thread(target=self._warm_one, name="cell-warm", daemon=True).start()

    def _warm_one(self) -> None:
        box: Sandbox | None = None
        try:
            box = self.open_box()
        except Exception as exc:  # the item that needs it starts its own and sees why
            log.warning("a sandbox started ahead failed: %s", exc)
        with self._cond:
            self._warming -= 1
            if box is None:
                self.warm_failures += 1
                self.alive -= 1
            elif not self._closed.is_set() and self._spares > 0:
                self._ready.append(box)
                box = None  # kept: the next item takes it
            self._cond.notify_all()
        if box is not None:  # started as the items ended: nobody will take it
            self._end_spare(box)

    def _end_spare(self, box: Sandbox) -> None:
        """End a sandbox nobody took; its cell counts until it is closed."""
        if self._abandoned.is_set():
            _close_unwaited(box)
        else:
            _close_quietly(box)
        self._give_back()

    def _start(self) -> Sandbox | None:
        problem: BaseException | None = None
        for attempt in range(self.attempts):
            if self._closed.is_set():
                raise CellsClosed("the batch stopped while this item's sandbox started")
            try:
                box = self.open_box()
            except SandboxUnavailable:
                raise  # no backend here at all: trying again cannot help
            except Exception as exc:  # a busy daemon, a slow start: try again
                problem = exc
                log.warning("sandbox start failed (attempt %d): %s", attempt + 1, exc)
            else:
                if self._abandoned.is_set() and box is not None:
                    _close_unwaited(box)  # started as the batch left: nobody will use it
                    raise CellsClosed("the batch stopped while this item's sandbox started")
                return box
            if attempt + 1 < self.attempts:
                self._closed.wait(self.retry_delay_s * (attempt + 1))
        raise CellStartError(
            f"could not start a sandbox after {self.attempts} attempts: {problem}"
        ) from problem

    def _give_back(self) -> None:
        with self._cond:
            self.alive -= 1
            self._warm_locked()
            self._cond.notify_all()


class PooledCell:
    """A sandbox on loan from a `CellPool`: closing it ends it and frees the cell (only
    once the sandbox has ended, so the pool counts it alive until then)."""

    def __init__(
        self,
        inner: Sandbox,
        give_back: Callable[[], None],
        abandoned: threading.Event | None = None,
    ) -> None:
        self.inner = inner
        self._abandoned = abandoned
        self.name = str(getattr(inner, "name", "sandbox"))
        self._give_back: Callable[[], None] | None = give_back
        self._lock = threading.Lock()
        self.opened_at = time.monotonic()

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        return self.inner.run(code, timeout=timeout, stdin=stdin)

    def interrupt(self) -> bool:
        stop = getattr(self.inner, "interrupt", None)
        return bool(stop()) if callable(stop) else False

    def close(self) -> None:
        with self._lock:
            give_back, self._give_back = self._give_back, None
        if give_back is None:
            return  # closed already: the cell was handed back once
        if self._abandoned is not None and self._abandoned.is_set():
            give_back()
            _close_unwaited(self.inner)
            return
        try:
            self.inner.close()
        finally:
            give_back()


class LazyCell:
    """An item's sandbox, taken from the pool when its run's first cell runs, not when
    the item starts: at `--concurrency 16` on a 2-core machine (4 cells) sixteen items
    ask their models at once, and only those running code hold a cell, from their first
    cell to the end of their run (the run's files stay between its cells).

    What the pool says becomes the cell's result: a sandbox that cannot start is the
    sandbox's failure (`infra_error`), a batch that stops while the cell waits is a
    cancelled cell (the run is being cancelled too)."""

    def __init__(self, pool: CellPool, name: str) -> None:
        self.pool = pool
        self.name = name
        self._cell: Sandbox | None = None
        self._closed = False
        self._lock = threading.Lock()

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        cell = self._cell
        if cell is None:
            try:
                cell = self._take()
            except CellsClosed as exc:
                return ExecResult(backend=self.name, cancelled=True, stderr=str(exc))
            except (CellStartError, SandboxUnavailable) as exc:
                return ExecResult(backend=self.name, infra_error=str(exc))
            if cell is None:
                return ExecResult(backend=self.name, infra_error="this sandbox was closed")
        return cell.run(code, timeout=timeout, stdin=stdin)

    def interrupt(self) -> bool:
        stop = getattr(self._cell, "interrupt", None)
        return bool(stop()) if callable(stop) else False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            cell, self._cell = self._cell, None
        if cell is not None:
            cell.close()

    def _take(self) -> Sandbox | None:
        if self._closed:
            return None
        cell = self.pool.open()
        with self._lock:
            if not self._closed:
                self._cell = cell
                return cell
        if cell is not None:  # closed while it was being taken: hand it straight back
            cell.close()
        return None


def _close_unwaited(box: Sandbox) -> None:
    """Close a sandbox on a daemon thread: the process may exit before it is done (the
    backend's reaper, or the next start's sweep, removes what is left)."""
    threading.Thread(target=_close_quietly, args=(box,), name="cell-close", daemon=True).start()


def _close_quietly(box: Sandbox) -> None:
    try:
        box.close()
    except Exception as exc:
        log.debug("closing a sandbox as the batch left: %s", exc)
