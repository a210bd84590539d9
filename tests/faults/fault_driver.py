"""`conductor` in a real subprocess, with a model and a sandbox a test can hold at a stage.

Run as `python fault_driver.py solve QUESTION ...` (any `conductor` arguments). With
`--model fault` the meta model and experts are `StageModel`: round 1 calls an expert,
round 2 Expert Python (whose program runs in the real subprocess sandbox), round 3
answers; learning then makes its own model calls. When the run reaches the stage named
by $FAULT_STAGE (before_model, mid_stream, expert, sandbox, learning), the driver writes
$FAULT_MARK and waits until $FAULT_RELEASE exists (at most $FAULT_HOLD_S seconds, default
30), so the test can send a signal (or close a pipe) exactly there. At the sandbox stage nothing is held: the
program really runs in the sandbox (for 4 s) when the mark is written. Nothing else is faked: the CLI, the session, the
transcript writer, runs.db, the notebook and the printer are the real ones.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from conductor_kernel import prompts
from conductor_kernel.interfaces import Completion, Message, Usage

STAGE = os.environ.get("FAULT_STAGE", "")
MARK = Path(os.environ.get("FAULT_MARK", os.devnull))
RELEASE = Path(os.environ.get("FAULT_RELEASE", os.devnull + ".never"))
# One line per model call that returned: meta, expert or learning.
CALLS = Path(os.environ.get("FAULT_CALLS", os.devnull))
_reached: set[str] = set()
_lock = threading.Lock()

ROUND_1 = 'Expert Mathematician:\n"""\nWhat is 6 times 7?\n"""'
# With $FAULT_PARALLEL, round 1 calls two experts at once (the first is held at `expert`).
if os.environ.get("FAULT_PARALLEL"):
    ROUND_1 += '\n\nExpert Checker:\n"""\nWhat is 7 times 6?\n"""'
# How long a stage is held at most when the test never releases it.
HOLD_S = float(os.environ.get("FAULT_HOLD_S", "30"))
ROUND_2 = 'Expert Python:\n"""\nPrint 6 times 7.\n"""'
ROUND_3 = '>> FINAL ANSWER:\n"""\n42\n"""'
PROGRAM = "```python\nprint(6 * 7)\n```\nPlease run this code!"
# At the sandbox stage the program really runs while the fault arrives: it says so with
# a line the sandbox's output shows, then waits (the sandbox's own timeout ends it).
SLOW_PROGRAM = (
    "```python\nimport time\nprint('fault-driver program running', flush=True)\n"
    "time.sleep(4)\nprint(6 * 7)\n```\nPlease run this code!"
)
# What every call costs: each call that returned must show in the run's usage.
# Tokens of a real call of this size: learning's calls are bounded by the run's own.
CALL_USAGE = Usage(input_tokens=2_000, output_tokens=200, cost_usd=0.001, calls=1)


def reach(stage: str) -> None:
    """At the stage under test (once): say so, then hold until released."""
    with _lock:
        if stage != STAGE or stage in _reached:
            return
        _reached.add(stage)
    MARK.write_text(stage)
    deadline = time.monotonic() + HOLD_S
    while not RELEASE.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


class StageModel:
    """Meta turns, experts and learning calls, told apart by their system prompts."""

    name = "stage-model"  # not an offline name: learning makes its model calls

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text=None,
        cache: bool = False,
        role: str = "meta",
        max_tokens: int | None = None,
    ) -> Completion:
        purpose = "learning"
        if role == "meta" and system == prompts.META_SYSTEM:
            purpose = "meta"
            turns = sum(1 for m in messages if m.role == "user")
            text = (ROUND_1, ROUND_2, ROUND_3)[min(turns, 3) - 1]
            if on_text is not None:
                on_text(text[:10])
                if turns == 1:
                    reach("mid_stream")
                on_text(text[10:])
        elif system is not None and system.startswith("You are Expert Python"):
            text = SLOW_PROGRAM if STAGE == "sandbox" else PROGRAM
            purpose = "expert"
        elif system is not None and system.startswith("You are Expert"):
            reach("expert")
            text = "6 times 7 is 42."
            purpose = "expert"
        else:
            reach("learning")
            text = "INSIGHT: multiply directly.\nTYPE: 0\nNAME: arithmetic\nDESCRIPTION: products"
        with _lock, CALLS.open("a") as log:
            log.write(purpose + "\n")
        return Completion(text=text, usage=CALL_USAGE, model=self.name, stop_reason="end_turn")


class StageSandbox:
    """The real subprocess sandbox, held before it runs when the stage is `sandbox`."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = ""):
        if STAGE == "sandbox":
            # Say the stage is reached once the program is running (not before it).
            threading.Timer(0.5, lambda: MARK.write_text("sandbox")).start()
        return self.inner.run(code, timeout=timeout, stdin=stdin)

    def close(self) -> None:
        self.inner.close()


def install() -> None:
    import experts.registry as registry
    import sandbox.registry as sandboxes
    from conductor.session.notebook_hooks import NotebookHooks

    real_get, real_choose, real_open = registry.get_model, registry.choose, sandboxes.open_sandbox
    real_recall = NotebookHooks.recall

    def get_model(spec: str = "auto", **options):
        return StageModel() if spec == "fault" else real_get(spec, **options)

    def choose(spec: str = "auto"):
        if spec == "fault":
            return registry.ModelChoice("fault", "stage-model", "asked for")
        return real_choose(spec)

    def open_sandbox(name: str = "auto", **options):
        backend = os.environ.get("FAULT_SANDBOX", "subprocess")
        return StageSandbox(real_open(backend, **options))

    def recall(self, question: str, **kwargs):
        reach("before_model")
        return real_recall(self, question, **kwargs)

    registry.get_model, registry.choose = get_model, choose
    sandboxes.open_sandbox = open_sandbox
    NotebookHooks.recall = recall


if __name__ == "__main__":
    import faulthandler
    import signal

    # A test that gives up on this process asks it, with SIGUSR1, where every thread is.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    install()
    from conductor.cli import main

    sys.exit(main(sys.argv[1:]))
