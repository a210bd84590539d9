"""Meta-prompting as a method: the model conducts fresh-eyes experts, then answers.

Each turn of the one conversation either calls experts (run in worker threads,
concurrently when allowed; Expert Python's code in the sandbox), gives the final answer,
or neither (the model is nudged). The experts' outputs go back quoted in the next user
message with a feedback paragraph. With `python=False` Expert Python is not offered and
no code runs ("meta-prompting without Python" in the paper's Table 1).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial

from conductor_kernel import prompts
from conductor_kernel.events import Event
from conductor_kernel.protocol import ParsedTurn, parse_turn
from conductor_kernel.run.conversation import (
    META_REPLIES,
    OFF_PROTOCOL_TURNS,
    RunContext,
    Turn,
    converse,
)
from conductor_kernel.run.expert_call import ExpertContext, ExpertOutcome, call_expert
from conductor_kernel.run.threads import run_concurrently
from conductor_kernel.turn_diagnosis import nudge_with_reasons

META = "meta"
META_NO_PYTHON = "meta-no-python"


class MetaPrompting:
    """The conductor loop of the meta-prompting paper, with or without Expert Python."""

    system_prompt = prompts.META_SYSTEM

    def __init__(self, *, python: bool = True) -> None:
        self.python = python

    @property
    def name(self) -> str:
        return META if self.python else META_NO_PYTHON

    def solve(self, run: RunContext) -> Generator[Event, None, str]:
        first = prompts.meta_first_message(
            run.question, python=self.python, max_rounds=run.config.max_rounds, recall=run.recall
        )

        def act(turn: Turn) -> Generator[Event, None, str | None]:
            return self._act(run, turn)

        return (
            yield from converse(
                run, first, act=act, replies=META_REPLIES, off_protocol_stop=OFF_PROTOCOL_TURNS
            )
        )

    def _act(self, run: RunContext, turn: Turn) -> Generator[Event, None, str | None]:
        parsed = parse_turn(turn.text)
        if parsed.has_answer and (not parsed.calls or run.config.calls_and_answer == "answer"):
            if _check_first(run, turn):
                run.state.check_asked = True
                ask = prompts.check_first(run.question, parsed.final_answer or "")
                yield run.note(turn, "answer_before_check", ask)
                return ask
            yield run.answer(turn, parsed.final_answer or "")
            return None
        if parsed.calls:
            if parsed.has_answer:
                yield run.note(
                    turn,
                    "calls_and_answer",
                    "The turn called experts and answered; the calls ran and the answer was set aside.",
                )
            body = yield from _dispatch(run, parsed, turn)
            return body + "\n\n" + prompts.FEEDBACK
        nudge = nudge_with_reasons(prompts.NUDGE, turn.text)
        yield run.note(turn, "no_call_or_answer", nudge)
        return nudge


def _check_first(run: RunContext, turn: Turn) -> bool:
    """Whether an answer is sent back for a check (`check_before_answer`): only once a
    run, only when no expert was consulted, and never in the last round."""
    state = run.state
    return (
        run.config.check_before_answer
        and not state.check_asked
        and state.expert_calls == 0
        and turn.round < run.config.max_rounds
    )


def _dispatch(run: RunContext, parsed: ParsedTurn, turn: Turn) -> Generator[Event, None, str]:
    """Run the turn's expert calls (concurrently when allowed); their outputs, quoted."""
    for call in parsed.calls:
        if call.is_empty:
            yield run.note(
                turn, "empty_instruction", prompts.EMPTY_INSTRUCTION.format(name=call.name)
            )
    calls = parsed.dispatchable
    state = run.state

    def work(emit: Callable[[Event], None]) -> list[ExpertOutcome]:
        # Metered: each expert call's usage goes on the ledger the moment it returns.
        expert_model = state.ledger.metered(run.expert_model, "expert")
        ctx = ExpertContext(
            expert_model, run.sandbox, run.config, emit, run.run_id, guard=run.guard
        )
        jobs = [
            partial(call_expert, c, ctx, parent_id=turn.id, round=turn.round, index=i)
            for i, c in enumerate(calls)
        ]
        if len(jobs) > 1 and run.config.parallel_experts:
            return run_concurrently(jobs, limit=8)
        return [j() for j in jobs]

    outcomes: list[ExpertOutcome] = []
    if calls:
        outcomes = yield from run.in_worker(work)
    blocks: list[str] = []
    for outcome in outcomes:
        state.expert_calls += 1
        state.sandbox_runs += outcome.sandbox_runs
        blocks.append(prompts.EXPERT_OUTPUT.format(name=outcome.name, output=outcome.output))
    empty = [prompts.EMPTY_INSTRUCTION.format(name=c.name) for c in parsed.calls if c.is_empty]
    return "\n\n".join(blocks + empty)
