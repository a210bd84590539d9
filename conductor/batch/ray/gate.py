"""One rate limit for a whole Ray cluster: the gate actor and the backoff that obeys it.

On one machine a batch shares one `Backoff` object between threads (experts/retry.py).
Across a cluster the shared state lives in one Ray actor, `RateGate`: every worker asks
it before each model request (`admit`), tells it when the provider said 429/529
(`pause`), and reports the tokens each call used (`spent`). So a rate limit seen on one
node holds back every node, and a requests-per-minute or tokens-per-minute budget the
user sets is one budget for the batch, not one per process.

The gate answers "wait this many seconds" rather than a time of day: nodes' clocks
need not agree. Its methods never block, so one async actor serves any number of
workers.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from time import time as wall_clock  # for the report; the gate's waits use monotonic
from typing import Any

from conductor_kernel.interfaces import Completion
from experts.retry import Backoff

WINDOW_S = 60.0  # what "per minute" means for the budgets


class RateGate:
    """The batch's shared pause and request/token budgets (run as a Ray actor)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self._resume_at = 0.0
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_sum = 0
        self.admitted = 0
        self.pauses = 0
        self.paused_s = 0.0
        self.held = 0  # admit calls answered "wait"
        # The latest pause in wall-clock time (this actor's clock), for the report: when
        # the gate heard of it and when sending may resume.
        self.last_pause: dict[str, float] | None = None

    async def admit(self) -> float:
        """0 when a request may go now (and counts it); else seconds to wait first."""
        now = time.monotonic()
        ahead = self._resume_at - now
        if ahead <= 0:
            ahead = self._budget_wait(now)
        if ahead > 0:
            self.held += 1
            return ahead
        self._requests.append(now)
        self.admitted += 1
        return 0.0

    def _budget_wait(self, now: float) -> float:
        while self._requests and self._requests[0] <= now - WINDOW_S:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - WINDOW_S:
            self._token_sum -= self._tokens.popleft()[1]
        waits = [0.0]
        if self.rpm and len(self._requests) >= self.rpm:
            waits.append(self._requests[0] + WINDOW_S - now)
        if self.tpm and self._token_sum >= self.tpm and self._tokens:
            waits.append(self._tokens[0][0] + WINDOW_S - now)
        return max(waits)

    async def pause(self, seconds: float) -> None:
        """The provider is busy: nobody in the cluster sends for `seconds` from now."""
        now = time.monotonic()
        until = now + max(0.0, seconds)
        if until > self._resume_at:
            self.paused_s += until - max(now, self._resume_at)
            self._resume_at = until
            wall = wall_clock()
            self.last_pause = {"heard_at": wall, "until": wall + (until - now)}
        self.pauses += 1

    async def spent(self, tokens: int) -> None:
        if tokens > 0:
            self._tokens.append((time.monotonic(), tokens))
            self._token_sum += tokens

    async def stats(self) -> dict[str, Any]:
        return {
            "requests_admitted": self.admitted,
            "requests_held": self.held,
            "pauses": self.pauses,
            "paused_s": round(self.paused_s, 3),
            "last_pause": self.last_pause,
            "rpm": self.rpm,
            "tpm": self.tpm,
        }


class ClusterBackoff(Backoff):
    """A `Backoff` whose pause and budgets are the gate's: shared by the whole cluster.

    The local pause still applies too (the models' retry loop reads it), so a worker
    that saw the 429 itself waits even before the gate has heard of it.
    """

    def __init__(self, gate: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def pause(self, seconds: float) -> None:
        import ray

        super().pause(seconds)
        ray.get(self.gate.pause.remote(seconds))

    def wait(self) -> float:
        import ray

        waited = super().wait()
        while (ahead := ray.get(self.gate.admit.remote())) > 0:
            time.sleep(ahead)
            waited += ahead
            with self._lock:
                self.waited_s += ahead
        return waited


def spent_on(gate: Any) -> Callable[[Completion], None]:
    """A meter (conductor_kernel/limits/ledger.py) that tells the gate each call's tokens, for
    a tokens-per-minute budget. The report is not waited for: the call is done."""

    def report(completion: Completion) -> None:
        usage = completion.usage
        gate.spent.remote(int(usage.input_tokens) + int(usage.output_tokens))

    return report
