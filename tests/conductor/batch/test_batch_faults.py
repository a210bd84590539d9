"""The fault matrix over batches: a failure of the system is never a grade of the model.

Hypothesis places faults of every class on a batch's items (which items, which class):
a sandbox that never starts, a sandbox that dies mid-run, a model server answering 5xx
to an expert after its retries, a meta call that times out, runs.db locked. The meta
model behaves like the demo: when a program's output never comes it declines. Then:
every faulted item, and only those, ends `error` with the fault's cause; accuracy is
over the other items alone; the report lists every failure by cause; and a second
session with `--retry-errors` (and the faults gone) runs exactly the faulted items.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from batch_support import plan_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.batch.report import summarize
from conductor.batch.runner import BatchRunner
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor_kernel.events import Event, RunStarted
from conductor_kernel.interfaces import ExecResult, Message, ModelError
from conductor_kernel.limits.run_config import RunConfig
from experts.demo import Declined, DemoModel
from record.migrations import DatabaseError

ITEMS = 10
# At most 4 faults: five system errors in a row stop a batch (tested elsewhere), and
# at concurrency 4 no placement of 4 faults can make that streak.
MAX_FAULTS = 4
CAUSE = {
    "sandbox_start": "sandbox",
    "sandbox_crash": "sandbox",
    "model_5xx": "model",
    "model_timeout": "model",
    "storage_locked": "storage",
}
_ITEM = re.compile(r"(?:Double|Check) item (\d+)\.")
_STDOUT = re.compile(r"stdout:\n```\n(.*?)\n```", re.S)


def _item_of(text: str) -> int:
    found = _ITEM.findall(text)
    return int(found[-1]) if found else -1


def _cell(code: str) -> str:
    return f'Expert Python:\n"""\n```python\n{code}\n```\nPlease run this code!\n"""'


class Faults:
    """Where the faults are, read by the models, sandboxes and storage of a session."""

    def __init__(self, placement: dict[int, str]) -> None:
        self.placement = placement

    def of(self, n: int) -> str | None:
        return self.placement.get(n)


def meta_turn(faults: Faults, messages: list[Message]) -> str:
    """Round 1 runs a cell and asks a checker, round 2 a second cell, round 3 answers
    the second cell's output (wrong for every third item); no output: it declines."""
    n = _item_of(messages[0].content)
    turn = sum(m.role == "user" for m in messages)
    if turn == 2 and faults.of(n) == "model_timeout":
        raise ModelError("no reply within 60 s from http://127.0.0.1:9/v1 (4 times)")
    if turn == 1:
        return _cell(f"print({n})") + f'\n\nExpert Checker:\n"""\nCheck item {n}.\n"""'
    outputs = _STDOUT.findall(messages[-1].content)
    if not outputs or not outputs[-1].strip().isdigit():  # "(nothing)": it never ran
        return str(Declined("No answer: the program printed nothing, so there is no answer."))
    if turn == 2:
        return _cell(f"print(2 * {outputs[-1].strip()})")
    value = int(outputs[-1].strip()) + (1 if n % 3 == 0 else 0)
    return f'>> FINAL ANSWER:\n"""\n{value}\n"""'


class FaultySandbox:
    """Runs `print(...)` cells by evaluating them; fails as the item's fault says."""

    name = "faulty"

    def __init__(self, fault: str | None) -> None:
        self.fault = fault
        self.cells = 0

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        self.cells += 1
        if self.fault == "sandbox_start":
            reason = "could not warm a sandbox container: no reply from the runner in time"
            return ExecResult(backend=self.name, infra_error=reason)
        if self.fault == "sandbox_crash" and self.cells == 2:
            reason = "the Docker engine went away during the run: connection refused"
            return ExecResult(backend=self.name, infra_error=reason)
        expression = code.strip().removeprefix("print(").removesuffix(")")
        value = eval(expression, {"__builtins__": {}})  # the test's own cells only
        return ExecResult(stdout=f"{value}\n", exit_code=0, backend=self.name)

    def close(self) -> None:
        pass


class LockedStore:
    """Stands for the batch's runs.db feed: locked for the items placed so."""

    stores_record = True

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.items: dict[str, int] = {}
        self.lock = threading.Lock()

    def handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            with self.lock:
                self.items[event.run_id] = _item_of(event.question)
        if self.faults.of(self.items.get(event.run_id, -1)) == "storage_locked":
            raise DatabaseError("runs.db is locked by another program (database is locked)")


def expert_reply(faults: Faults, name: str, instruction: str) -> str:
    if faults.of(_item_of(instruction)) == "model_5xx":
        raise ModelError("the server at http://127.0.0.1:9/v1 answered 503 4 times")
    return "Looks fine."


def run_session(
    tmp_path: Path, faults: Faults, *, retry_errors: bool, concurrency: int
) -> tuple[BatchRunner, list[int]]:
    plan = plan_for(tmp_path, ITEMS)
    ran: list[int] = []
    model = DemoModel(
        lambda messages: meta_turn(faults, messages),
        lambda name, instruction: expert_reply(faults, name, instruction),
        name="fake",
    )

    def make(item: TaskItem) -> Session:
        n = _item_of(item.input)
        ran.append(n)
        return Session(
            model,
            model,
            FaultySandbox(faults.of(n)),
            RunConfig(max_rounds=5),
            runs_path=tmp_path / "batch" / "runs",
        )

    runner = BatchRunner(
        plan,
        make,
        concurrency=concurrency,
        sinks=(LockedStore(faults),),
        retry_errors=retry_errors,
    )
    runner.run()
    return runner, ran


placements = st.dictionaries(
    st.integers(0, ITEMS - 1), st.sampled_from(sorted(CAUSE)), max_size=MAX_FAULTS
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(placement=placements, concurrency=st.sampled_from([1, 4]))
def test_injected_system_failures_are_errors_by_cause_and_only_they_rerun(
    tmp_path_factory: Any, placement: dict[int, str], concurrency: int
) -> None:
    tmp_path = tmp_path_factory.mktemp("batch")
    runner, ran = run_session(
        tmp_path, Faults(placement), retry_errors=False, concurrency=concurrency
    )
    assert sorted(ran) == list(range(ITEMS))
    records = runner.log.read()
    by_item = {int(r["item_id"][1:]): r for r in records.values()}  # ids are i00, i01...
    for n, record in by_item.items():
        fault = placement.get(n)
        if fault is None:
            assert record["status"] == "answered", record
            continue
        assert record["status"] == "error", (fault, record)
        assert record["error"]["cause"] == CAUSE[fault], (fault, record["error"])

    report = summarize(list(records.values()), total=ITEMS, header={"model": "fake"})
    healthy = [n for n in range(ITEMS) if n not in placement]
    assert report["accuracy"]["scored"] == len(healthy)
    assert report["accuracy"]["correct"] == sum(n % 3 != 0 for n in healthy)
    assert report["failures"]["error"] == len(placement)
    assert report["failures"]["declined"] == 0  # a sandbox that failed is no refusal
    assert report["errors_by_cause"] == dict(Counter(CAUSE[f] for f in placement.values()))
    listed = {e["item_id"] for e in report["failure_examples"] if e["kind"] == "error"}
    assert listed == {f"i{n:02d}" for n in placement}

    # The faults are fixed; --retry-errors runs exactly the items that failed.
    runner, ran = run_session(tmp_path, Faults({}), retry_errors=True, concurrency=concurrency)
    assert sorted(ran) == sorted(placement)
    final = summarize(list(runner.log.read().values()), total=ITEMS, header={})
    assert final["accuracy"]["scored"] == ITEMS and final["failures"]["error"] == 0
    assert final["accuracy"]["correct"] == sum(n % 3 != 0 for n in range(ITEMS))


def test_a_disk_that_fills_mid_batch_stops_it_with_the_cause_and_no_torn_line(
    tmp_path: Path,
) -> None:
    """The second record meets a full disk: what the disk took of it is taken back, the
    batch stops saying why and what to do (no worker thread dies of it), and the item
    runs again on resume."""
    import errno
    import json
    import os

    import pytest
    from batch_support import answer

    import conductor.batch.store
    from experts.scripted import ScriptedModel

    plan = plan_for(tmp_path, 4)

    def make(_item: object) -> Session:
        model = ScriptedModel([answer("2")] * 3)
        return Session(meta_model=model, config=RunConfig(python=False), runs_path=tmp_path / "r")

    real_write = os.write
    results = plan.folder / "results.jsonl"
    room = {"bytes": 10**9}
    died: list[object] = []

    def write(fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") != str(results):
            return real_write(fd, data)
        if room["bytes"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        taken = real_write(fd, bytes(data)[: room["bytes"]])
        room["bytes"] -= taken
        return taken

    runner = BatchRunner(plan, make, concurrency=1)
    original = conductor.batch.store.ResultsLog.append

    def append(log: object, record: dict[str, object]) -> None:
        if results.exists() and results.stat().st_size:
            room["bytes"] = 40  # the second record: a part fits, then nothing
        original(log, record)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conductor.batch.store.os, "write", write)
        patch.setattr(conductor.batch.store.ResultsLog, "append", append)
        patch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
        outcome = runner.run()
    assert not died
    assert outcome.stopped is not None and "the disk holding it is full" in outcome.stopped
    lines = results.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["final"]
