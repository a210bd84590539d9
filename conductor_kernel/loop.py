"""The conductor loop: meta turns, expert calls, limits, nudges, feedback.

`Conductor.run(question)` is a generator of events. Model calls and expert calls run
in worker threads and push their events (streamed text included) into a queue that
the generator drains, so consumers see everything live and in order of occurrence.
Limits are checked before every meta-model call and, through `conductor_kernel.streaming`,
while every call streams; `cancel()` closes the streams in flight and takes effect
within a fraction of a second. The run always ends with a `RunFinished` event whose
usage counts every call that returned, the cancelled ones included.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar, cast

from conductor_kernel import prompts
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    Recall,
    RunFinished,
    RunStarted,
    new_id,
)
from conductor_kernel.expert_call import ExpertContext, ExpertOutcome, call_expert
from conductor_kernel.interfaces import (
    ChatModel,
    Completion,
    Message,
    Sandbox,
    Usage,
    cut_cause,
)
from conductor_kernel.ledger import UsageLedger
from conductor_kernel.protocol import ParsedTurn, parse_turn
from conductor_kernel.run_config import RunConfig
from conductor_kernel.streaming import (
    RunCancelled,
    RunGuard,
    StreamLimit,
    StreamWatch,
    in_worker,
)

T = TypeVar("T")


@dataclass
class RunState:
    run_id: str
    started: float = field(default_factory=time.monotonic)
    # Every model call of the run records its usage here as it returns (ledger.py).
    ledger: UsageLedger = field(default_factory=UsageLedger)
    guard: RunGuard | None = None
    rounds: int = 0
    expert_calls: int = 0
    sandbox_runs: int = 0
    answer: str | None = None

    @property
    def usage(self) -> Usage:
        """What the run has spent so far (learning comes later and is reported apart)."""
        return self.ledger.run_total()

    @property
    def meta_usage(self) -> Usage:
        return self.ledger.total("meta")


class Conductor:
    """One meta model conducting experts. A `Conductor` can run many questions in turn."""

    def __init__(
        self,
        meta_model: ChatModel,
        expert_model: ChatModel | None = None,
        sandbox: Sandbox | None = None,
        config: RunConfig | None = None,
        *,
        # Called as recall(question, ledger=...): its model calls go on the run's ledger.
        recall: Callable[..., Recall | None] | None = None,
    ) -> None:
        self.meta_model = meta_model
        self.expert_model = expert_model or meta_model
        self.sandbox = sandbox
        self.config = config or RunConfig()
        self.recall = recall
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the current run at the next step; what happened so far is kept."""
        self._cancel.set()

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
        cfg = self.config
        state = RunState(run_id=run_id or time.strftime("%Y%m%d-%H%M%S-") + new_id()[:6])
        if ledger is not None:
            state.ledger = ledger
        state.guard = RunGuard(cfg, state.ledger, self._cancel)
        yield RunStarted(
            run_id=state.run_id,
            question=question,
            task=task,
            target=target,
            model=self.meta_model.name,
            expert_model=self.expert_model.name,
            sandbox=getattr(self.sandbox, "name", "none") if cfg.python else "off",
            system_prompt=prompts.META_SYSTEM,
            limits=cfg.limits(),
            tags=tags or {},
        )
        status = "no_answer"
        error: Exception | None = None
        try:
            recalled = ""
            if self.recall is not None:
                # In a worker, like a model call: a cancel is seen while recall works.
                recall = self.recall
                event = yield from self._in_worker(
                    state, lambda emit: recall(question, ledger=state.ledger)
                )
                if event is not None:
                    event.run_id = state.run_id
                    recalled = event.rendered
                    yield event
            first = prompts.meta_first_message(
                question, python=cfg.python, max_rounds=cfg.max_rounds, recall=recalled
            )
            status = yield from self._rounds(state, first)
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

    def _rounds(self, state: RunState, first: str) -> Generator[Event, None, str]:
        cfg = self.config
        history: list[Message] = []
        user_text = prompts.ROUND_HEADER.format(round=1) + first
        for round_no in range(1, cfg.max_rounds + 1):
            limit = self._limit_reached(state)
            if limit is not None:
                yield limit
                return "limit"
            notice_at = cfg.last_round_notice_at or cfg.max_rounds - 1
            if cfg.last_round_notice and round_no == notice_at and cfg.max_rounds > 1:
                user_text += "\n\n" + prompts.LAST_ROUND
            history.append(Message("user", user_text))
            turn = MetaTurnStarted(run_id=state.run_id, round=round_no, user_message=user_text)
            yield turn
            t0 = time.monotonic()
            completion = yield from self._in_worker(
                state, partial(self._meta_call, state, history, turn.id)
            )
            state.rounds = round_no
            history.append(Message("assistant", completion.text))
            yield MetaTurnFinished(
                parent_id=turn.id,
                run_id=state.run_id,
                round=round_no,
                text=completion.text,
                usage=completion.usage,
                model=completion.model,
                duration_s=time.monotonic() - t0,
                stop_reason=completion.stop_reason,
                truncated=completion.truncated,
            )
            self._raise_if_stopped(state, completion)
            if completion.stop_reason == "declined":
                # The model says it cannot answer (the offline demo does): a labelled
                # non-answer, never an answer to learn from.
                yield Observation(
                    parent_id=turn.id,
                    run_id=state.run_id,
                    reason="declined",
                    message="The model declined: it cannot answer this question.",
                )
                return "declined"
            header = prompts.ROUND_HEADER.format(round=round_no + 1)
            if completion.truncated:
                # Never act on a cut turn: its last call or answer may be half-written.
                message = prompts.TRUNCATED.format(
                    cause=cut_cause(completion.stop_reason, cfg.meta_max_tokens)
                )
                yield Observation(
                    parent_id=turn.id, run_id=state.run_id, reason="truncated", message=message
                )
                user_text = header + message
                continue
            if not completion.text.strip():
                message = prompts.EMPTY_REPLY + prompts.NUDGE
                yield Observation(
                    parent_id=turn.id, run_id=state.run_id, reason="empty_reply", message=message
                )
                user_text = header + message
                continue
            parsed = parse_turn(completion.text)
            if parsed.has_answer and (not parsed.calls or cfg.calls_and_answer == "answer"):
                state.answer = parsed.final_answer
                yield FinalAnswer(
                    parent_id=turn.id,
                    run_id=state.run_id,
                    round=round_no,
                    answer=state.answer or "",
                )
                return "answered"
            if parsed.calls:
                if parsed.has_answer:
                    yield Observation(
                        parent_id=turn.id,
                        run_id=state.run_id,
                        reason="calls_and_answer",
                        message="The turn called experts and answered; the calls ran and the answer was set aside.",
                    )
                body = yield from self._dispatch(state, parsed, turn.id, round_no)
                user_text = header + body + "\n\n" + prompts.FEEDBACK
            else:
                yield Observation(
                    parent_id=turn.id,
                    run_id=state.run_id,
                    reason="no_call_or_answer",
                    message=prompts.NUDGE,
                )
                user_text = header + prompts.NUDGE
        yield LimitHit(
            run_id=state.run_id, limit="rounds", value=cfg.max_rounds, maximum=cfg.max_rounds
        )
        return "limit"

    def _dispatch(
        self, state: RunState, parsed: ParsedTurn, turn_id: str, round_no: int
    ) -> Generator[Event, None, str]:
        """Run the turn's expert calls (concurrently when allowed); their outputs, quoted."""
        blocks: list[str] = []
        for call in parsed.calls:
            if call.is_empty:
                message = prompts.EMPTY_INSTRUCTION.format(name=call.name)
                yield Observation(
                    parent_id=turn_id,
                    run_id=state.run_id,
                    reason="empty_instruction",
                    message=message,
                )
        calls = parsed.dispatchable

        def work(emit: Callable[[Event], None]) -> list[ExpertOutcome]:
            assert state.guard is not None
            # Metered: each expert call's usage goes on the ledger the moment it returns.
            expert_model = state.ledger.metered(self.expert_model, "expert")
            ctx = ExpertContext(
                expert_model, self.sandbox, self.config, emit, state.run_id, guard=state.guard
            )
            jobs = [
                partial(call_expert, c, ctx, parent_id=turn_id, round=round_no, index=i)
                for i, c in enumerate(calls)
            ]
            if len(jobs) > 1 and self.config.parallel_experts:
                return run_concurrently(jobs, limit=8)
            return [j() for j in jobs]

        outcomes: list[ExpertOutcome] = []
        if calls:
            outcomes = yield from self._in_worker(state, work)
        for outcome in outcomes:
            state.expert_calls += 1
            state.sandbox_runs += outcome.sandbox_runs
            blocks.append(prompts.EXPERT_OUTPUT.format(name=outcome.name, output=outcome.output))
        empty = [prompts.EMPTY_INSTRUCTION.format(name=c.name) for c in parsed.calls if c.is_empty]
        return "\n\n".join(blocks + empty)

    def _meta_call(
        self, state: RunState, history: list[Message], turn_id: str, emit: Callable[[Event], None]
    ) -> Completion:
        """One meta turn, streamed through a watch; charged the moment it returns."""
        assert state.guard is not None
        messages = list(history)

        def prompt() -> str:
            return "\n".join([prompts.META_SYSTEM, *(m.content for m in messages)])

        watch = StreamWatch(
            state.guard,
            emit,
            run_id=state.run_id,
            parent_id=turn_id,
            model=self.meta_model,
            prompt=prompt,
        )
        watch.check_before()  # a cancel or limit that came first: do not start the call
        # Metered: the usage goes on the ledger the moment the call returns.
        completion = state.ledger.metered(self.meta_model, "meta").complete(
            messages,
            system=prompts.META_SYSTEM,
            on_text=watch,
            cache=self.config.prompt_cache,
            role="meta",
            max_tokens=self.config.meta_max_tokens,
        )
        return completion

    def _raise_if_stopped(self, state: RunState, completion: Completion) -> None:
        """A call stopped mid-stream ends the run: cancelled, or at the limit it hit."""
        if not completion.stopped:
            return
        if self._cancel.is_set():
            raise RunCancelled()
        assert state.guard is not None
        if state.guard.limit is not None:
            raise StreamLimit(state.guard.limit)

    def _in_worker(
        self, state: RunState, work: Callable[[Callable[[Event], None]], T]
    ) -> Generator[Event, None, T]:
        assert state.guard is not None
        return (yield from in_worker(state.guard, work, run_id=state.run_id))

    def _limit_reached(self, state: RunState) -> LimitHit | None:
        if self._cancel.is_set():
            raise RunCancelled()
        assert state.guard is not None
        if state.guard.limit is not None:  # a stream was stopped at it already
            return state.guard.limit
        return state.guard.over_limit(state.run_id)


def run_concurrently(jobs: Sequence[Callable[[], T]], *, limit: int) -> list[T]:
    """Each job's result, in order, at most `limit` at once; the first failure (in job
    order) is raised once every job has ended.

    Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's
    threads at exit, so a run stopped while its experts waited (on a stalled server, a
    retry's back-off, a program in the sandbox) held the process open until they
    returned, after the user was told the run had stopped and was saved.
    """
    results: list[Any] = [None] * len(jobs)
    errors: dict[int, BaseException] = {}
    order = iter(range(len(jobs)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = jobs[i]()
            except BaseException as exc:
                errors[i] = exc

    threads = [
        threading.Thread(target=work, daemon=True, name=f"conductor-expert-{n}")
        for n in range(min(limit, len(jobs)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[min(errors)]
    return cast(list[T], results)
