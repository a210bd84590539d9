"""The run's context: what a method sees of its run, and the one way to call the model.

A method (`conductor_kernel.interfaces.Method`: meta-prompting, or one of the paper's
baselines) is handed a `RunContext`, and every model call it makes goes through
`RunContext.ask`: the run's cancel flag and limits are checked before the call, the
reply streams under the run's guard (so a cancel or a limit stops it mid-stream), its
usage goes on the run's ledger the moment it returns, and it is recorded as a
`MetaTurnStarted`/`MetaTurnFinished` pair: the run's turns, whichever method takes them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any, TypeVar

from conductor_kernel.carrier.recover import calls_in_text
from conductor_kernel.events import (
    Event,
    FinalAnswer,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
)
from conductor_kernel.interfaces import (
    ChatModel,
    CheckVerdict,
    Completion,
    Message,
    Sandbox,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import (
    RunCancelled,
    RunGuard,
    StreamLimit,
    StreamWatch,
    in_worker,
)
from conductor_kernel.run.state import Handed, RunState

T = TypeVar("T")
Emit = Callable[[Event], None]


@dataclass(frozen=True)
class Turn:
    """One model turn of the run: its round, the id of its `MetaTurnStarted`, the reply.

    A turn offered tools has the names it was offered and its calls: the model's own,
    or (`recovered`) those it wrote into its text instead.
    """

    round: int
    id: str
    completion: Completion
    offered: tuple[str, ...] | None = None  # None: no tools offered (the text protocol)
    calls: tuple[ToolCall, ...] = ()
    recovered: bool = False

    @property
    def text(self) -> str:
        return self.completion.text

    @property
    def native_calls(self) -> tuple[ToolCall, ...]:
        """The calls the model made as calls (each needs a result sent back)."""
        return () if self.recovered else self.calls


@dataclass(frozen=True)
class NextMessage:
    """What a method sends after a turn: the text, and a result for each of the turn's
    own tool calls (sent before the text, under the calls' ids)."""

    text: str
    tool_results: tuple[ToolResult, ...] = ()


class RunContext:
    """What a method sees of its run: the question, the recalled notes, the limits, the
    models and the sandbox, and the one way to call the model (`ask`)."""

    def __init__(
        self,
        state: RunState,
        *,
        model: ChatModel,
        expert_model: ChatModel,
        sandbox: Sandbox | None,
        config: RunConfig,
        cancel: threading.Event,
        system_prompt: str,
        question: str = "",
        carrier: str = "text",
    ) -> None:
        self.state = state
        self.model = model
        self.expert_model = expert_model
        self.sandbox = sandbox
        self.config = config
        self.cancel = cancel
        self.system_prompt = system_prompt  # the run's, as RunStarted recorded it
        self.question = question
        self.carrier = carrier  # how the protocol is carried: text or tools (RunStarted)
        self.recall = ""  # the notebook's notes, rendered (empty: none, or recall off)
        # Recalled programs checked on this question (Recall.checked): handed to the
        # model as results it can cite, in the carrier's form (run/experience.py).
        self.checked: list[dict[str, Any]] = []
        self.handed: Handed | None = None  # the one handed to the model before round 1
        # The task's own check of an answer to this question; None: none applies to it.
        self.answer_verdict: Callable[[str], CheckVerdict | None] | None = None

    def answer_rejection(self, answer: str) -> str | None:
        """Why the task's own check rejects `answer`; None when it accepts it, cannot
        decide, or none applies."""
        found = None if self.answer_verdict is None else self.answer_verdict(answer)
        return None if found is None or found.accepted else found.why

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def guard(self) -> RunGuard:
        assert self.state.guard is not None
        return self.state.guard

    def check(self) -> None:
        """Before a model call: a cancel ends the run, a limit reached ends it there."""
        if self.cancel.is_set():
            raise RunCancelled()
        if self.guard.limit is not None:  # a stream was stopped at it already
            raise StreamLimit(self.guard.limit)
        hit = self.guard.over_limit(self.run_id)
        if hit is not None:
            raise StreamLimit(hit)

    def in_worker(self, work: Callable[[Emit], T]) -> Generator[Event, None, T]:
        """`work(emit)` in a worker thread, its events yielded live (streaming.in_worker)."""
        return (yield from in_worker(self.guard, work, run_id=self.run_id))

    def ask(
        self,
        history: list[Message],
        *,
        round: int,
        system: str,
        new_conversation: bool = False,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,
        handed: bool = False,
    ) -> Generator[Event, None, Turn]:
        """One model turn on `history` (its last message is this turn's): limits first,
        then the call, streamed and recorded. A call stopped mid-stream ends the run.
        With `tools`, they are offered, and calls written into the text are read too;
        with `grammar`, the reply is held to it. `handed`: the history ends with the
        turn's message, a call made for the model and its results (run/experience.py)."""
        self.check()
        message = history[-3] if handed else history[-1] if history else Message("user", "")
        results = history[-1].tool_results if handed else message.tool_results
        started = MetaTurnStarted(
            run_id=self.run_id,
            round=round,
            user_message=message.content,
            system_prompt="" if system == self.system_prompt else system,
            new_conversation=new_conversation,
            tool_results=[asdict(r) for r in results],
            handed_calls=[c.to_dict() for c in history[-2].tool_calls] if handed else [],
        )
        yield started
        t0 = time.monotonic()
        completion = yield from self.in_worker(
            partial(self._call, list(history), system, started.id, tools, grammar)
        )
        self.state.rounds = round
        # A call a server sent without an id gets one: its result goes back under it.
        calls = tuple(
            c if c.id else replace(c, id=f"call-{round}-{i}")
            for i, c in enumerate(completion.tool_calls)
        )
        recovered = False
        if tools is not None and not calls and not completion.truncated:
            calls = tuple(calls_in_text(completion.text))
            recovered = bool(calls)
        source = "text" if recovered else "native"
        yield MetaTurnFinished(
            parent_id=started.id,
            run_id=self.run_id,
            round=round,
            text=completion.text,
            usage=completion.usage,
            model=completion.model,
            duration_s=time.monotonic() - t0,
            stop_reason=completion.stop_reason,
            truncated=completion.truncated,
            carrier="tools" if tools is not None else "grammar" if grammar else "",
            offered_tools=[t.name for t in tools or ()],
            tool_calls=[{**c.to_dict(), "source": source} for c in calls],
        )
        if completion.stopped:
            if self.cancel.is_set():
                raise RunCancelled()
            if self.guard.limit is not None:
                raise StreamLimit(self.guard.limit)
        offered = None if tools is None else tuple(t.name for t in tools)
        return Turn(round, started.id, completion, offered, calls, recovered)

    def _call(
        self,
        messages: list[Message],
        system: str,
        turn_id: str,
        tools: Sequence[ToolSpec] | None,
        grammar: str | None,
        emit: Emit,
    ) -> Completion:
        """The call itself, streamed through a watch; charged the moment it returns."""
        watch = StreamWatch(
            self.guard,
            emit,
            run_id=self.run_id,
            parent_id=turn_id,
            model=self.model,
            prompt=lambda: "\n".join([system, *(m.content for m in messages)]),
            stop_at_answer=tools is None,
        )
        watch.check_before()  # a cancel or limit that came first: do not start the call
        # Tools go only to a call that offers them: a model that takes none never sees it.
        offer: dict[str, Any] = {} if tools is None else {"tools": tools}
        if grammar is not None:
            offer["grammar"] = grammar
        return self.state.ledger.metered(self.model, "meta").complete(
            messages,
            system=system,
            on_text=watch,
            cache=self.config.prompt_cache,
            role="meta",
            max_tokens=self.config.meta_max_tokens,
            **offer,
        )

    def answer(self, turn: Turn, answer: str) -> FinalAnswer:
        """The run's final answer, given in `turn`."""
        self.state.answer = answer
        return FinalAnswer(parent_id=turn.id, run_id=self.run_id, round=turn.round, answer=answer)

    def note(self, turn: Turn, reason: str, message: str) -> Observation:
        """Something the model caused and is told about (or that the record should say)."""
        return Observation(parent_id=turn.id, run_id=self.run_id, reason=reason, message=message)
