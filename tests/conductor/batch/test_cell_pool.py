"""A batch's sandboxes come from one pool sized to the host, not one per item in flight
(issue 27): at any concurrency the sandboxes alive at once stay within the pool; an
item waits for a cell; a start that fails is retried and only a persistent failure is
the item's error; a stop wakes the items still waiting.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from batch_support import plan_for
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.batch.cells import (
    CELL_MEMORY_BYTES,
    CellPool,
    CellsClosed,
    CellStartError,
    PooledCell,
    host_cells,
)
from conductor.batch.runner import BatchRunner
from conductor_kernel.interfaces import ExecResult


class Boxes:
    """A stand-in backend that counts its sandboxes alive; `fail_first` starts fail."""

    def __init__(self, fail_first: int = 0, hold_s: float = 0.0) -> None:
        self.fail_first = fail_first
        self.hold_s = hold_s  # how long an open waits for company (shows overlap)
        self.starts = self.alive = self.peak = 0
        self.lock = threading.Condition()

    def open(self, *_: Any, **__: Any) -> Box:
        with self.lock:
            self.starts += 1
            if self.starts <= self.fail_first:
                raise RuntimeError(f"start {self.starts} failed")
            self.alive += 1
            self.peak = max(self.peak, self.alive)
            self.lock.notify_all()
            # Give the other items a moment to open theirs: without a pool they all do.
            self.lock.wait_for(lambda: self.alive > 2, timeout=self.hold_s)
        return Box(self)


class Box:
    name = "counted"

    def __init__(self, boxes: Boxes) -> None:
        self.boxes = boxes
        self.closed = False

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        return ExecResult(stdout="", exit_code=0, backend="counted")

    def close(self) -> None:
        assert not self.closed, "a sandbox closed twice"
        self.closed = True
        with self.boxes.lock:
            self.boxes.alive -= 1


@settings(max_examples=30, deadline=None)
@given(cores=st.integers(1, 256), memory_gib=st.integers(0, 2048))
def test_the_host_sizes_the_pool_by_cores_and_memory(cores: int, memory_gib: int) -> None:
    size = host_cells(cores, memory_gib * 1024**3)
    assert 1 <= size <= 2 * cores
    assert size == 1 or size * CELL_MEMORY_BYTES <= memory_gib * 1024**3 // 2


@settings(max_examples=20, deadline=None)
@given(size=st.integers(1, 6), users=st.integers(1, 24), seed=st.integers(0, 2**32))
def test_cells_alive_never_exceed_the_pool_and_every_user_gets_one(
    size: int, users: int, seed: int
) -> None:
    pause = random.Random(seed)  # not Hypothesis's own random: it is not for threads
    boxes = Boxes()
    pool = CellPool(boxes.open, size)
    served = []

    def use() -> None:
        cell = pool.open()
        assert cell is not None
        time.sleep(pause.random() / 200)
        served.append(cell.name)
        cell.close()
        cell.close()  # a second close hands nothing back twice

    threads = [threading.Thread(target=use) for _ in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(served) == users
    assert boxes.peak <= size and pool.peak <= size and boxes.alive == 0 == pool.alive


@settings(max_examples=20, deadline=None)
@given(failures=st.integers(0, 5), attempts=st.integers(1, 4))
def test_a_start_that_fails_is_retried_and_only_a_persistent_failure_is_raised(
    failures: int, attempts: int
) -> None:
    boxes = Boxes(fail_first=failures)
    pool = CellPool(boxes.open, 1, attempts=attempts, retry_delay_s=0.0)
    if failures < attempts:
        cell = pool.open()
        assert cell is not None and boxes.starts == failures + 1
        cell.close()
    else:
        with pytest.raises(CellStartError, match=f"after {attempts} attempts"):
            pool.open()
        assert boxes.starts == attempts
    # Whatever happened, the cell is free again.
    boxes.fail_first = 0
    again = pool.open()
    assert again is not None
    again.close()


def test_a_stop_wakes_an_item_waiting_for_a_cell() -> None:
    pool = CellPool(Boxes().open, 1)
    held = pool.open()
    outcome: list[str] = []

    def wait_for_one() -> None:
        try:
            pool.open()
            outcome.append("got one")
        except CellsClosed:
            outcome.append("woken")

    waiter = threading.Thread(target=wait_for_one)
    waiter.start()
    pool.stop_waiting()
    waiter.join(timeout=30)
    assert not waiter.is_alive() and outcome == ["woken"]
    assert held is not None
    held.close()


PUZZLES = ("4 5 6 10", "1 2 4 7", "2 5 8 11", "3 4 4 13", "6 7 8 9", "1 11 11 13",
           "1 8 10 11", "2 3 6 9", "1 3 5 9", "4 5 7 9")  # fmt: skip


def puzzles_plan(tmp_path: Path, count: int) -> Any:
    """Items the demo model answers with a program: each run takes a cell (a sandbox is
    taken at a run's first cell, not for a run that writes none)."""
    import dataclasses

    plan = plan_for(tmp_path, count)
    plan.items = [
        dataclasses.replace(item, input=f"Use {numbers} to make 24")
        for item, numbers in zip(plan.items, PUZZLES, strict=False)
    ]
    return plan


def live_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, boxes: Boxes, **settings_: Any
) -> Any:
    from conductor.batch.setup import live_setup
    from conductor.config import load_settings
    from conductor.tasks.specs import get_spec

    monkeypatch.setattr("sandbox.registry.open_sandbox", boxes.open)
    monkeypatch.setattr("sandbox.registry.resolve_name", lambda name: "counted")
    overrides = {"model": "demo", "recall": False, "learn": False, **settings_}
    return live_setup(load_settings(overrides), get_spec("GameOf24"), lambda: tmp_path / "runs")


@pytest.mark.parametrize("concurrency", [4, 16])
def test_a_batch_keeps_no_more_sandboxes_alive_than_its_pool(
    concurrency: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    boxes = Boxes(hold_s=0.1)
    setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=2)
    plan = puzzles_plan(tmp_path, 8)
    outcome = BatchRunner(plan, setup.make_session, concurrency=concurrency).run()
    records = plan.results.read()
    assert outcome.stopped is None and len(records) == 8
    assert all(r["status"] != "error" for r in records.values()), records
    assert 1 <= boxes.peak <= 2 and boxes.alive == 0


def test_a_persistent_start_failure_is_the_items_error_and_the_batch_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    boxes = Boxes(fail_first=10**6)
    setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=2)
    assert setup.cells is not None
    setup.cells.retry_delay_s = 0.0
    plan = puzzles_plan(tmp_path, 3)
    BatchRunner(plan, setup.make_session, concurrency=2, cells=setup.cells).run()
    records = plan.results.read()
    # Each item tried its own start `attempts` times; warming ahead gave up after as
    # many failures (or a few more, started side by side before it knew).
    warm_failures = setup.cells.warm_failures
    assert setup.cells.attempts <= warm_failures <= setup.cells.attempts + 2
    assert len(records) == 3 and boxes.starts == 3 * setup.cells.attempts + warm_failures
    for record in records.values():
        assert record["status"] == "error"
        assert "could not start a sandbox after" in record["error"]["message"]


@settings(max_examples=12, deadline=None)
@given(size=st.integers(1, 4), concurrency=st.integers(1, 32), items=st.integers(1, 10))
def test_at_any_concurrency_a_batch_keeps_its_sandboxes_within_the_pool(
    size: int, concurrency: int, items: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp_path = tmp_path_factory.mktemp("batch")
    boxes = Boxes(hold_s=0.02)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CONDUCTOR_HOME", str(tmp_path / "home"))
        setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=size)
        plan = puzzles_plan(tmp_path, items)
        outcome = BatchRunner(plan, setup.make_session, concurrency=concurrency).run()
    assert outcome.stopped is None and len(plan.results.read()) == items
    assert 1 <= boxes.peak <= size and boxes.alive == 0
    assert setup.cells is not None and setup.cells.peak <= size


class FakeSession:
    """A container as the Docker pool sees it: counted alive from start to destroy."""

    alive = peak = started = 0
    lock = threading.Lock()

    def __init__(self) -> None:
        with FakeSession.lock:
            FakeSession.alive += 1
            FakeSession.started += 1
            FakeSession.peak = max(FakeSession.peak, FakeSession.alive)
        self.age_s = 0.0

    def destroy(self) -> None:
        with FakeSession.lock:
            FakeSession.alive -= 1


@pytest.mark.parametrize("spares", [0, 1])
@settings(max_examples=10, deadline=None)
@given(users=st.integers(1, 8))
def test_a_docker_pool_without_spares_starts_a_container_per_user_only(
    spares: int, users: int
) -> None:
    """What the batch opens Docker with (setup.BATCH_OPTIONS: pool_size 0): no container
    is warmed ahead outside the batch's pool, so alive containers = cells held. With a
    spare (what a solve uses) one more is started than are held."""
    from sandbox.docker import pool

    FakeSession.alive = FakeSession.peak = FakeSession.started = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(pool.RunnerSession, "start", classmethod(lambda cls, *a: FakeSession()))
        monkeypatch.setattr(pool.WarmPool, "_destroy_later", lambda self, s: s.destroy())
        warm = pool.WarmPool(None, dict, size=spares)
        warm.warm()
        held = [warm.acquire() for _ in range(users)]
        deadline = time.monotonic() + 30
        while warm._starting and time.monotonic() < deadline:  # spares still starting
            time.sleep(0.01)
        assert FakeSession.alive == users + spares
        for session in held:
            warm.release(session)  # type: ignore[arg-type]
        while warm._starting and time.monotonic() < deadline:
            time.sleep(0.01)
        assert FakeSession.alive == spares
        warm.close()
    assert FakeSession.alive == 0


class HangingStarts(Boxes):
    """Every start hangs (a container whose runner never answers) until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.hanging = 0

    def open(self, *_: Any, **__: Any) -> Box:
        with self.lock:
            self.hanging += 1
        self.release.wait(600)
        return super().open()


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_stop_signal_during_warm_up_returns_with_every_item_interrupted(
    stop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    """Structure, not seconds: the runner returns while the starts it met still hang,
    handed the pool's sandboxes to the backends' quick leave, and recorded each item
    in flight as interrupted (the hung ones on their behalf), so resume runs them."""
    import os
    import signal

    from conductor import interrupts

    boxes = HangingStarts()
    setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=2)
    assert setup.cells is not None
    left: list[str] = []
    setup.cells.leave = lambda: left.append("left")
    plan = puzzles_plan(tmp_path, 5)
    runner = BatchRunner(plan, setup.make_session, concurrency=4, cells=setup.cells)

    # The signal goes only while the run is on (its handler installed): one sent after
    # would reach whatever this test process runs next as a KeyboardInterrupt.
    ended, sending = threading.Event(), threading.Lock()

    def signal_once_both_cells_hang() -> None:
        # Both starts hang and the runner has taken the stop signals over (before, a
        # signal is the CLI's plain interrupt: a KeyboardInterrupt out of this test).
        while (boxes.hanging < 2 or not interrupts._graceful) and not ended.is_set():
            time.sleep(0.01)
        with sending:
            if not ended.is_set():
                os.kill(os.getpid(), getattr(signal, stop))

    threading.Thread(target=signal_once_both_cells_hang, daemon=True).start()
    try:
        with interrupts.installed():
            try:
                outcome = runner.run()
            finally:
                with sending:
                    ended.set()
        assert boxes.hanging == 2 and not boxes.release.is_set()  # still hanging now
        assert outcome.user_interrupt and left == ["left"] and setup.cells.abandoned
        records = plan.results.read()
        assert len(records) == 4  # the four taken by workers; the fifth never began
        assert all(r["status"] == "interrupted" and not r["final"] for r in records.values())
        # Their runs began (a sandbox is taken at a run's first cell) and none got one:
        # each cell came back cancelled, nothing was graded.
        assert all(r["score"] is None and r["run_id"] for r in records.values())
        assert [item.id for item in runner.pending()] == [f"i{n:02d}" for n in range(5)]
    finally:
        boxes.release.set()  # the hung starts end; their sandboxes are closed unwaited
    deadline = time.monotonic() + 60
    while boxes.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert boxes.alive == 0


# -- sandboxes started ahead of the items (issue 37) -----------------------------------


class Untouched(Boxes):
    """Boxes that remember whether any user had one before (a spare is handed once)."""

    def open(self, *_: Any, **__: Any) -> Box:
        box = super().open()
        box.users = 0  # type: ignore[attr-defined]
        return box


@settings(max_examples=25, deadline=None)
@given(
    size=st.integers(1, 5),
    spares=st.integers(0, 6),
    users=st.integers(1, 16),
    expected=st.integers(0, 20),
    seed=st.integers(0, 2**32),
)
def test_spares_stay_within_the_pool_and_each_is_handed_to_one_user_untouched(
    size: int, spares: int, users: int, expected: int, seed: int
) -> None:
    pause = random.Random(seed)
    boxes = Untouched()
    pool = CellPool(boxes.open, size)
    pool.expect(expected, spares)
    handed: list[Any] = []
    lock = threading.Lock()

    def use() -> None:
        cell = pool.open()
        assert isinstance(cell, PooledCell)
        box = cell.inner
        with lock:
            assert box.users == 0, "a sandbox was handed to a second user"
            box.users += 1
            handed.append(box)
        time.sleep(pause.random() / 200)
        cell.close()

    threads = [threading.Thread(target=use) for _ in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(handed) == users and len({id(box) for box in handed}) == users
    assert boxes.peak <= size and pool.peak <= size
    pool.close_spares()
    # Spares nobody took are ended; none outlives the batch, none is left starting.
    deadline = time.monotonic() + 30
    while (boxes.alive or pool.alive) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert boxes.alive == 0 == pool.alive
    assert boxes.starts <= users + min(spares, size) + size  # no start beyond the demand


def test_an_item_told_of_in_advance_takes_a_sandbox_already_started() -> None:
    boxes = Boxes()
    pool = CellPool(boxes.open, 4)
    pool.expect(2, spares=2)
    with boxes.lock:
        assert boxes.lock.wait_for(lambda: boxes.alive == 2, timeout=30)
    first = pool.open()
    assert first is not None and boxes.starts == 2 and pool.handed_warm == 1
    second, third = pool.open(), pool.open()  # the third was not announced: its own start
    assert second is not None and third is not None
    assert pool.handed_warm == 2 and boxes.starts == 3 and pool.alive == 3
    for cell in (first, second, third):
        cell.close()
    assert pool.alive == 0


def test_a_batch_item_gives_its_cell_back_when_its_run_ends_before_learning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    """The after-run hooks (learning, its checks in sandboxes of their own) run while
    the next item already holds the cell."""
    boxes = Boxes()
    setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=1)
    session = setup.make_session(puzzles_plan(tmp_path, 1).items[0])
    seen: list[int] = []
    session.after_run.append(lambda events, **_: seen.append(boxes.alive) or [])
    session.run("Use numbers and basic arithmetic operations to obtain 24: 1 2 3 4")
    assert seen == [0] and boxes.alive == 0
    session.close()
    assert boxes.alive == 0


def test_items_that_run_no_code_never_wait_for_a_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    """A sandbox is taken at a run's first cell: with every start hung, runs that write
    no program all finish (before, each item took its cell as it began, and waited)."""
    boxes = HangingStarts()
    setup = live_batch(tmp_path, monkeypatch, boxes, sandbox_cells=2)
    plan = plan_for(tmp_path, 6)  # questions the demo model answers without code
    try:
        outcome = BatchRunner(plan, setup.make_session, concurrency=6, cells=setup.cells).run()
        records = plan.results.read()
        assert outcome.stopped is None and len(records) == 6
        assert all(r["final"] and r["sandbox_runs"] == 0 for r in records.values())
        assert boxes.hanging <= 2  # only spares started ahead, within the pool
    finally:
        boxes.release.set()
