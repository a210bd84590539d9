"""A run from start to end, whichever method it uses: the conductor of the run's lifecycle.

`Conductor.run(question)` is a generator of events. It starts every run the same way
(`RunStarted`, naming the method; the notebook's recall), hands the run to its method
(`conductor_kernel.interfaces.Method`: meta-prompting by default, or a baseline), and
ends every run the same way: a `RunFinished` whose status says how it ended and whose
usage counts every call that returned, the cancelled ones included. Model calls run in
worker threads and push their events (streamed text included) into a queue that the
generator drains, so consumers see everything live and in order of occurrence. Limits
are checked before every model call and, through `conductor_kernel.limits.streaming`, while
every call streams; `cancel()` closes the streams in flight and takes effect within a
fraction of a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from conductor_kernel.carrier.choice import choose_carrier
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    Recall,
    RunFinished,
    RunStarted,
    SandboxExec,
    new_id,
)
from conductor_kernel.interfaces import AnswerCheck, CarrierAware, ChatModel, Method, Sandbox
from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import RunCancelled, RunGuard, StreamLimit
from conductor_kernel.run.context import RunContext
from conductor_kernel.run.meta import MetaPrompting
from conductor_kernel.run.state import RunState
from conductor_kernel.run.threads import run_concurrently

__all__ = ["Conductor", "RunState", "run_concurrently"]


class Conductor:
    """Runs questions with one method, one model (and experts), one sandbox, in turn."""

    def __init__(
        self,
        meta_model: ChatModel,
        expert_model: ChatModel | None = None,
        sandbox: Sandbox | None = None,
        config: RunConfig | None = None,
        *,
        # Called as recall(question, ledger=...): its model calls go on the run's ledger.
        recall: Callable[..., Recall | None] | None = None,
        method: Method | None = None,
        # The task's own check of an answer before it is taken (interfaces.AnswerCheck).
        answer_check: AnswerCheck | None = None,
    ) -> None:
        self.meta_model = meta_model
        self.expert_model = expert_model or meta_model
        self.sandbox = sandbox
        self.config = config or RunConfig()
        self.recall = recall
        self.answer_check = answer_check
        # Meta-prompting, with Expert Python as the configuration says, unless told.
        self.method: Method = method or MetaPrompting(python=self.config.python)
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the current run at the next step; what happened so far is kept."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether the current run was asked to stop."""
        return self._cancel.is_set()

    def run_config(self) -> RunConfig:
        """The run's limits, with Python on exactly when the method runs code."""
        if self.config.python == self.method.python:
            return self.config
        return self.config.model_copy(update={"python": self.method.python})

    def run(
        self,
        question: str,
        *,
        run_id: str | None = None,
        task: str = "",
        target: str | None = None,
        tags: dict[str, Any] | None = None,
        ledger: UsageLedger | None = None,
    ) -> Iterator[Event]:
        self._cancel.clear()
        method = self.method
        cfg = self.run_config()
        state = RunState(run_id=run_id or time.strftime("%Y%m%d-%H%M%S-") + new_id()[:6])
        if ledger is not None:
            state.ledger = ledger
        state.guard = RunGuard(cfg, state.ledger, self._cancel)
        carriers = method.carriers if isinstance(method, CarrierAware) else ("text",)
        carrier = choose_carrier(cfg.protocol, self.meta_model, method_carriers=carriers)
        system_prompt = method.system_prompt
        if isinstance(method, CarrierAware):
            system_prompt = method.system_prompt_for(carrier.carrier)
        yield RunStarted(
            run_id=state.run_id,
            question=question,
            task=task,
            target=target,
            method=method.name,
            model=self.meta_model.name,
            expert_model=self.expert_model.name,
            sandbox=getattr(self.sandbox, "name", "none") if cfg.python else "off",
            system_prompt=system_prompt,
            limits=cfg.limits(),
            tags=tags or {},
            protocol=carrier.carrier,
            protocol_reason=carrier.reason,
        )
        run = RunContext(
            state,
            model=self.meta_model,
            expert_model=self.expert_model,
            sandbox=self.sandbox,
            config=cfg,
            cancel=self._cancel,
            system_prompt=system_prompt,
            question=question,
            carrier=carrier.carrier,
        )
        check = self.answer_check
        if check is not None and cfg.answer_check and check.applies(question, task):
            run.answer_verdict = lambda answer: check(question, task, answer)
        status = "no_answer"
        error: Exception | None = None
        failures: list[SystemFailure] = []
        try:
            if self.recall is not None:
                # In a worker, like a model call: a cancel is seen while recall works.
                recall = self.recall
                event = yield from run.in_worker(lambda emit: recall(question, ledger=state.ledger))
                if event is not None:
                    event.run_id = state.run_id
                    run.recall = event.rendered
                    run.checked = list(event.checked)
                    yield event
            status = yield from _watching(method.solve(run), failures)
            if failures and status != "interrupted":
                # The machine failed the run (its sandbox, its model server): whatever
                # the model made of that afterwards is not a grade of the model.
                status = "error"
                first = failures[0]
                yield ErrorEvent(run_id=state.run_id, message=first.message, where=first.cause)
        except RunCancelled:
            status = "interrupted"
        except StreamLimit as stop:
            status = "limit"
            yield stop.hit
        except Exception as exc:
            # A system failure: record it and finish the run, then let the caller see it.
            status, error = "error", exc
            yield ErrorEvent(run_id=state.run_id, message=str(exc), where=type(exc).__name__)
        yield RunFinished(
            run_id=state.run_id,
            status=status,
            final_answer=state.answer,
            rounds=state.rounds,
            usage=state.usage,
            meta_usage=state.meta_usage,
            expert_calls=state.expert_calls,
            sandbox_runs=state.sandbox_runs,
            duration_s=time.monotonic() - state.started,
        )
        if error is not None:
            raise error


class SystemFailure:
    """A failure of the machine seen during a run: its cause and what it said."""

    def __init__(self, cause: str, message: str) -> None:
        self.cause = cause  # "sandbox" or "model"
        self.message = message


def system_failure(event: Event) -> SystemFailure | None:
    """The system failure an event reports, if any. A program's own failures (an
    exception, a timeout, memory, a runner the code broke) are the model's and count
    not, nor does a request the provider rejected (4xx: what was asked); a sandbox that
    could not run it, or an expert's model server failing after its retries, are the
    machine's."""
    # A run given no sandbox (`--no-python`, a replay without one) chose that: the
    # program not running is the configuration, not a failure of the machine.
    if (
        isinstance(event, SandboxExec)
        and event.result.infra_error
        and event.result.backend != "none"
    ):
        return SystemFailure("sandbox", f"the sandbox failed: {event.result.infra_error}")
    if isinstance(event, ExpertCallFinished) and event.error and event.server_failed:
        return SystemFailure("model", f"{event.name}'s model call failed: {event.error}")
    return None


def _watching(
    solve: Generator[Event, None, str], failures: list[SystemFailure]
) -> Generator[Event, None, str]:
    """`solve`'s events, passed on as they come, noting every system failure among them."""
    try:
        while True:
            try:
                event = next(solve)
            except StopIteration as done:
                return str(done.value)
            found = system_failure(event)
            if found is not None:
                failures.append(found)
            yield event
    finally:
        solve.close()
