"""What a cell printed reaches the meta model escaped, and a run's cancel kills its cell.

Both through a real `Conductor` with scripted models and stand-in sandboxes (the real
backends are tested in tests/sandbox/test_cancel.py): invisible characters in a cell's
output come back to the meta model as visible escapes, the text around them intact; a
cancel while a cell runs calls the sandbox's `interrupt`, and the run ends
`interrupted` without waiting for the cell.
"""

from __future__ import annotations

import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.events import MetaTurnStarted, RunFinished, SandboxExec
from conductor_kernel.interfaces import ExecResult, Message
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from conductor_kernel.text.display import UNSAFE
from experts.scripted import ScriptedModel

CALL = 'Expert Python:\n"""\n```python\nprint("hi")\n```\nPlease run this code!\n"""'


def meta(history: list[Message]) -> str:
    if history[-1].content.startswith("ROUND 1"):
        return CALL
    return '>> FINAL ANSWER:\n"""\ndone\n"""'


class PrintingBox:
    name = "stand-in"

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        return ExecResult(stdout=self.stdout, stderr=self.stdout, exit_code=0, backend=self.name)

    def close(self) -> None:
        pass


# Drawn from the whole list of characters the display escapes, not filtered out of all of
# Unicode: they are rare there, and Hypothesis gives up on a filter that drops most draws.
INVISIBLE = [chr(c) for c in range(0x110000) if UNSAFE.fullmatch(chr(c))]
invisible = st.sampled_from(INVISIBLE)


@given(st.text(alphabet=invisible, min_size=1, max_size=50))
@settings(max_examples=60, deadline=None)
def test_invisible_characters_a_cell_prints_reach_the_meta_model_escaped(hidden: str) -> None:
    printed = f"visible \U0001f600{hidden} text"
    model = ScriptedModel(meta, lambda _n, _t: "unused")
    events = list(Conductor(model, model, PrintingBox(printed), RunConfig(max_rounds=2)).run("q"))
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1].user_message
    assert "visible \U0001f600" in second and " text" in second
    assert UNSAFE.search(second) is None, repr(second)
    # The record keeps what the cell really printed; only what is shown is escaped.
    (exec_event,) = [e for e in events if isinstance(e, SandboxExec)]
    assert exec_event.result.stdout == printed


class BlockingBox:
    """A cell that runs until `interrupt()` kills it (or 30 s pass)."""

    name = "stand-in"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.killed = threading.Event()
        self.interrupts = 0

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        self.started.set()
        if self.killed.wait(30):
            return ExecResult(cancelled=True, signal=9, backend=self.name)
        return ExecResult(exit_code=0, backend=self.name)

    def interrupt(self) -> bool:
        self.interrupts += 1
        running = self.started.is_set() and not self.killed.is_set()
        self.killed.set()
        return running

    def close(self) -> None:
        self.killed.set()


def test_a_cancel_kills_the_running_cell_and_the_run_ends_interrupted() -> None:
    box = BlockingBox()
    model = ScriptedModel(meta, lambda _n, _t: "unused")
    conductor = Conductor(model, model, box, RunConfig(max_rounds=2, python_timeout_s=30))
    threading.Thread(
        target=lambda: box.started.wait(10) and conductor.cancel(), daemon=True
    ).start()
    started = time.monotonic()
    events = list(conductor.run("q"))
    took = time.monotonic() - started
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    assert box.interrupts >= 1 and box.killed.is_set()
    assert took < 20, f"the run waited {took:.1f} s for a cell that would run 30 s"
    execs = [e for e in events if isinstance(e, SandboxExec)]
    assert all(e.result.cancelled for e in execs)


def test_a_cell_asked_for_after_the_cancel_never_runs() -> None:
    box = BlockingBox()
    model = ScriptedModel(meta, lambda _n, _t: "unused")
    conductor = Conductor(model, model, box, RunConfig(max_rounds=2))
    run = conductor.run("q")
    next(run)  # RunStarted: the loop has cleared its flag; cancel before round 1 ends
    conductor.cancel()
    events = list(run)
    assert not box.started.is_set()
    assert isinstance(events[-1], RunFinished) and events[-1].status == "interrupted"
