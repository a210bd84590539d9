"""A stopped run lets its process go: nothing it started holds the process open.

A Ctrl-C or SIGTERM ends the run `interrupted` within a fraction of a second, and the
command then exits. Work the run had in flight (an expert call waiting on a slow
server, a retry's back-off, a program in the sandbox) may go on in a background thread
until then, but never in one the interpreter waits for at exit: the user was told the
run is saved and the command stopped, and a second Ctrl-C during such a wait printed a
traceback from `threading._shutdown`.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Only a hang takes this long: a process that is not held ends in about a second.
HANG_S = 60
# The expert calls in flight hold far longer than that.
HOLD_S = 600

STOPPED_DURING_PARALLEL_EXPERTS = textwrap.dedent(
    f"""
    import threading
    from pathlib import Path
    from conductor.session import Session
    from conductor_kernel.events import ExpertCallStarted
    from conductor_kernel.limits.run_config import RunConfig
    from experts.scripted import ScriptedModel

    TWO = 'Expert A:\\n\"\"\"\\nIs 6*7 42?\\n\"\"\"\\n\\nExpert B:\\n\"\"\"\\nAnd 7*6?\\n\"\"\"'

    def expert(name, instruction):
        threading.Event().wait({HOLD_S})  # a stalled server, a back-off, a long program
        return "42"

    session = Session(
        meta_model=ScriptedModel([TWO], expert),
        config=RunConfig(python=False, parallel_experts=True),
        runs_path=Path(__import__("sys").argv[1]),
    )
    started = 0
    for event in session.solve("What is 6 times 7?"):
        started += isinstance(event, ExpertCallStarted)
        if started == 2:
            session.cancel()  # what the CLI's Ctrl-C handler does
    print(event.kind, event.status, flush=True)
    """
)


def test_a_run_stopped_during_parallel_expert_calls_lets_the_process_exit(
    tmp_path: Path,
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", STOPPED_DURING_PARALLEL_EXPERTS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert child.stdout.split() == ["run_finished", "interrupted"], child.stderr
    assert child.returncode == 0 and "Traceback" not in child.stderr, child.stderr


def test_a_cancel_before_the_run_takes_its_first_step_is_not_lost(tmp_path: Path) -> None:
    """The TUI hands its prepared session to the run's thread and Esc cancels it; the
    CLI's handler cancels once the session says it is running. A cancel that landed
    before the loop's first step was wiped by the loop clearing its flag at the start,
    and the run went on to its answer."""
    from conductor.session import Session
    from conductor_kernel.events import RunFinished
    from conductor_kernel.limits.run_config import RunConfig
    from experts.scripted import ScriptedModel

    session = Session(
        meta_model=ScriptedModel(lambda messages: '>> FINAL ANSWER:\n"""\n42\n"""'),
        config=RunConfig(python=False),
        runs_path=tmp_path,
    )
    run = session.solve("What is 6 times 7?")
    session.cancel()  # before the generator has run a single line
    events = list(run)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    assert finished.usage.calls == 0  # the model was never called

    # The next run of the same session is not stopped by the old cancel.
    again = list(session.solve("And 7 times 6?"))[-1]
    assert isinstance(again, RunFinished) and again.status == "answered"
