"""A cancel asked for by a signal handler is seen, however the signals fall.

The CLI's Ctrl-C/SIGTERM/SIGHUP handler cancels the run from inside whatever the main
thread is waiting in: here, the loop's wait for its worker's events. On CPython 3.11 a
signal handled inside `queue.SimpleQueue.get(timeout=...)` just before its deadline
turned that wait into one without any timeout, so the cancel was never looked at and a
`conductor solve` held at recall ignored SIGTERM until recall ended (the fault matrix's
before-the-first-model-call cells hung about one time in a hundred). This test fires a
stream of signals at the main thread while it waits, so that some of them land at the
edge of a poll, then asks for the cancel from the handler.
"""

from __future__ import annotations

import random
import signal
import threading

import pytest

from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import RunCancelled, RunGuard, in_worker

SIGNALS_BEFORE_CANCEL = 800
# Only a hang needs this long: a wait that works sees the cancel within a poll or two.
RESCUE_AFTER_S = 30.0


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_a_cancel_from_a_signal_handler_is_seen_while_waiting_for_the_worker() -> None:
    cancel = threading.Event()
    guard = RunGuard(RunConfig(), UsageLedger(), cancel)
    handled = 0

    def on_signal(signum: int, frame: object) -> None:
        nonlocal handled
        handled += 1
        if handled == SIGNALS_BEFORE_CANCEL:
            cancel.set()  # what the CLI's graceful stop does

    main = threading.get_ident()
    shooting = threading.Event()
    shooting.set()

    def shoot() -> None:
        rng = random.Random(7)
        while shooting.is_set():
            # Spread across a poll interval, so some land at the end of a wait.
            threading.Event().wait(rng.uniform(0.0002, 0.004))
            signal.pthread_kill(main, signal.SIGUSR1)

    released_by_rescue = threading.Event()
    worker_may_end = threading.Event()

    def rescue() -> None:
        if not worker_may_end.wait(RESCUE_AFTER_S):
            released_by_rescue.set()
            worker_may_end.set()

    def work(emit: object) -> str:
        worker_may_end.wait()  # a recall (or a model call) that never returns by itself
        return "done"

    previous = signal.signal(signal.SIGUSR1, on_signal)
    shooter = threading.Thread(target=shoot, daemon=True)
    rescuer = threading.Thread(target=rescue, daemon=True)
    try:
        shooter.start()
        rescuer.start()
        with pytest.raises(RunCancelled):
            for _ in in_worker(guard, work, run_id="r"):
                pass
    finally:
        shooting.clear()
        shooter.join()
        worker_may_end.set()
        rescuer.join()
        signal.signal(signal.SIGUSR1, previous)
    assert handled >= SIGNALS_BEFORE_CANCEL
    assert not released_by_rescue.is_set(), "the cancel was missed until the worker ended"
