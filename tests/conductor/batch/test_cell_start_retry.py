"""A cell that fails to start is tried again; only a persistent failure is the item's
`error` (cause sandbox), and `--retry-errors` runs such an item again (issue 27).

On the real backends: the fault is injected below the pool, where a start really
fails (Docker: every container start of the item's first sandbox; bubblewrap: its
first sandbox start), so what is shown is that the failure reaches the pool at the
cell's opening, where it is retried, rather than the run's first code cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conductor.batch.runner import BatchPlan, BatchRunner
from conductor.batch.setup import live_setup, make_scorer
from conductor.batch.store import is_finished
from conductor.config import load_settings
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec
from support import skip_or_fail


def backend_ready(backend: str) -> None:
    if backend == "docker":
        from sandbox.docker.backend import DockerSandbox

        reason = DockerSandbox.probe()
    else:
        from sandbox.bwrap.backend import BwrapSandbox

        reason = BwrapSandbox.probe()  # also caches the probe before any fault
    if reason is not None:
        skip_or_fail(f"{backend} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")


class StartFaults:
    """Makes the sandbox starts of the first `bad_boxes` sandboxes fail (all of them
    when None), counting the sandboxes opened."""

    def __init__(self, bad_boxes: int | None) -> None:
        self.bad_boxes = bad_boxes
        self.boxes = 0
        self.failed = 0

    def failing(self) -> bool:
        return self.bad_boxes is None or self.boxes <= self.bad_boxes

    def install(self, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
        faults = self
        if backend == "docker":
            from sandbox.docker import pool
            from sandbox.docker.backend import DockerSandbox

            cls: Any = DockerSandbox
            real_start = pool.RunnerSession.start.__func__  # type: ignore[attr-defined]

            def start(session_cls: Any, *args: Any, **kwargs: Any) -> Any:
                if faults.failing():
                    faults.failed += 1
                    raise pool.SessionStartError("injected: the container did not start")
                return real_start(session_cls, *args, **kwargs)

            monkeypatch.setattr(pool.RunnerSession, "start", classmethod(start))
        else:
            from sandbox.bwrap.backend import BwrapSandbox

            cls = BwrapSandbox
            real_session = BwrapSandbox._start_session

            def start_session(box: Any) -> Any:
                if faults.failing():
                    faults.failed += 1
                    raise RuntimeError("injected: bubblewrap did not start")
                return real_session(box)

            monkeypatch.setattr(BwrapSandbox, "_start_session", start_session)
        real_init = cls.__init__

        def init(box: Any, *args: Any, **kwargs: Any) -> None:
            faults.boxes += 1
            real_init(box, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", init)


def one_item_batch(tmp_path: Path, backend: str, retry_errors: bool = False) -> BatchRunner:
    spec = get_spec("GameOf24")
    settings = load_settings(
        {"model": "demo", "recall": False, "learn": False, "sandbox": backend, "sandbox_cells": 1}
    )
    setup = live_setup(settings, spec, lambda: tmp_path / "batch" / "runs")
    assert setup.cells is not None
    setup.cells.retry_delay_s = 0.0
    item = TaskItem(id="p0", input="4 4 6 8", line=1)
    plan = BatchPlan(
        tmp_path / "batch", "t-0123456789ab", spec.name, [item], setup.question,
        make_scorer(spec, setup.sandbox_name, settings),
    )  # fmt: skip
    return BatchRunner(
        plan, setup.make_session, concurrency=1, cells=setup.cells, retry_errors=retry_errors
    )


@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_a_start_that_fails_once_is_retried_and_the_item_is_scored(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    backend_ready(backend)
    faults = StartFaults(bad_boxes=1)
    faults.install(backend, monkeypatch)
    runner = one_item_batch(tmp_path, backend)
    runner.run()
    (record,) = runner.plan.results.read().values()
    assert faults.failed >= 1 and faults.boxes >= 2  # the first sandbox failed, a second served
    assert record["final"] and record["status"] != "error", record
    assert record["sandbox_runs"] >= 1 and record["score"] is not None, record


@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_a_start_that_always_fails_is_the_items_sandbox_error_and_runs_again(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    backend_ready(backend)
    faults = StartFaults(bad_boxes=None)
    faults.install(backend, monkeypatch)
    runner = one_item_batch(tmp_path, backend)
    runner.run()
    (record,) = runner.plan.results.read().values()
    # The item's own starts, `attempts` of them, and the spare started ahead for it.
    assert runner.cells is not None and runner.cells.warm_failures == 1
    assert faults.boxes == runner.cells.attempts + runner.cells.warm_failures
    assert record["final"] and record["status"] == "error", record
    assert record["error"]["cause"] == "sandbox", record
    assert record["score"] is None  # a system failure is not graded as a wrong answer
    # Finished for a plain resume; `--retry-errors` runs it again.
    assert is_finished(record) and not is_finished(record, retry_errors=True)
    again = one_item_batch(tmp_path, backend, retry_errors=True)
    assert [item.id for item in again.pending()] == ["p0"]
