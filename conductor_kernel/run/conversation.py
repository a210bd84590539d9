"""One conversation with the model, as every method holds it (`converse`).

Every model call goes through the run's context (run/context.py: `RunContext.ask`).
`converse` is the loop of one conversation with the model, with the policies every
method shares: a declined turn ends the run; a cut or empty turn is never acted on and
the model is told why; the last-round notice; the cap on rounds. What a turn means (an
answer, expert calls, neither) is the method's, through its `act` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from conductor_kernel import prompts
from conductor_kernel.events import (
    Event,
    LimitHit,
    Observation,
)
from conductor_kernel.interfaces import (
    Message,
    ToolResult,
    ToolSpec,
    cut_cause,
)
from conductor_kernel.run.context import NextMessage, RunContext, Turn
from conductor_kernel.run.state import Handed

T = TypeVar("T")


@dataclass(frozen=True)
class Replies:
    """What a conversation tells the model when a turn cannot be acted on."""

    nudge: str  # the turn held nothing the method acts on
    truncated: str  # the turn was cut off; `{cause}` says by what


META_REPLIES = Replies(nudge=prompts.NUDGE, truncated=prompts.TRUNCATED)


# What `act` returns: the body of the next user message (with the results of the turn's
# tool calls, if it made any), or None when the run is answered.
Act = Callable[[Turn], Generator[Event, None, str | NextMessage | None]]
# The tools a round offers (None: the text protocol), given its round number.
ToolsFor = Callable[[int], Sequence[ToolSpec] | None]
# The grammar a round's turn is held to (None: none), given its round number.
GrammarFor = Callable[[int], str | None]


# What stands in the history for a turn with no text whose calls were not acted on (a
# call cut off): providers refuse an empty assistant message.
NO_TEXT = "(no text)"

# Turns in a row that neither call an expert nor answer (nor say anything) after which
# the run stops: a model, or a chat template, that does not follow the protocol will
# not start to after more nudges, and every further round costs a full prompt.
OFF_PROTOCOL_TURNS = 3
OFF_PROTOCOL_REASONS = ("no_call_or_answer", "empty_reply")
OFF_PROTOCOL = "off_protocol"
OFF_PROTOCOL_MESSAGE = (
    "The model ignored the protocol {turns} turns in a row (no expert call and no final "
    "answer, or a turn cut off before either): the model or its chat template does not "
    "follow the format, so the run was stopped; nothing is learned from it. Try a larger "
    "model, check the server's chat template, or raise the meta model's output limit if "
    "its turns were cut."
)


def _noting(events: Generator[Event, None, T], seen: list[str]) -> Generator[Event, None, T]:
    """`events` passed on, the reason of every observation among them noted in `seen`."""
    try:
        while True:
            try:
                event = next(events)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(event, Observation):
                seen.append(event.reason)
            yield event
    finally:
        events.close()


def converse(
    run: RunContext,
    first: str,
    *,
    act: Act,
    replies: Replies,
    system: str | None = None,
    first_round: int = 1,
    new_conversation: bool = False,
    off_protocol_stop: int | None = None,
    tools_for: ToolsFor | None = None,
    grammar_for: GrammarFor | None = None,
    handed: Handed | None = None,
) -> Generator[Event, None, str]:
    """Rounds of one conversation with the model, up to the run's round cap; the status.

    Rounds are numbered as the run's (`first_round` on); the `ROUND N:` header the model
    reads counts this conversation's own turns. `new_conversation` records that its
    first turn saw none of the run's earlier turns (a method's second conversation).
    `off_protocol_stop` turns in a row that ignore the protocol end the run (None: never).
    `tools_for(round)` gives the tools each round offers (the tools carrier);
    `grammar_for(round)` the GBNF grammar each turn is held to (the grammar carrier).
    `handed` is a call made for the model and its results, sent after the first message
    and before round 1's turn (run/experience.py).
    """
    cfg = run.config
    system = run.system_prompt if system is None else system
    history: list[Message] = []
    user_text = prompts.ROUND_HEADER.format(round=1) + first
    results: tuple[ToolResult, ...] = ()  # for the last turn's own calls
    off_protocol = 0  # turns in a row that ignored the protocol
    for round_no in range(first_round, cfg.max_rounds + 1):
        if off_protocol_stop is not None and off_protocol >= off_protocol_stop:
            message = OFF_PROTOCOL_MESSAGE.format(turns=off_protocol)
            yield Observation(run_id=run.run_id, reason=OFF_PROTOCOL, message=message)
            return "no_answer"
        notice_at = cfg.last_round_notice_at or cfg.max_rounds - 1
        if cfg.last_round_notice and round_no == notice_at and cfg.max_rounds > 1:
            user_text += "\n\n" + prompts.LAST_ROUND
        history.append(Message("user", user_text, tool_results=results))
        results = ()
        handed_now = handed is not None and round_no == first_round
        if handed is not None and handed_now:
            history += [handed.call, Message("user", "", tool_results=handed.results)]
        turn = yield from run.ask(
            history,
            round=round_no,
            handed=handed_now,
            system=system,
            new_conversation=new_conversation and round_no == first_round,
            tools=None if tools_for is None else tools_for(round_no),
            grammar=None if grammar_for is None else grammar_for(round_no),
        )
        completion = turn.completion
        said = completion.text or (NO_TEXT if turn.offered is not None else "")
        history.append(Message("assistant", said))
        if completion.stop_reason == "declined":
            # The model says it cannot answer (the offline demo does): a labelled
            # non-answer, never an answer to learn from.
            yield run.note(turn, "declined", "The model declined: it cannot answer this question.")
            return "declined"
        header = prompts.ROUND_HEADER.format(round=round_no - first_round + 2)
        if completion.truncated:
            # Never act on a cut turn: its last call or answer may be half-written.
            message = replies.truncated.format(
                cause=cut_cause(completion.stop_reason, cfg.meta_max_tokens)
            )
            yield run.note(turn, "truncated", message)
            user_text = header + message
            off_protocol += 1  # nothing usable came of it either
            continue
        if not completion.text.strip() and not turn.calls:
            message = prompts.EMPTY_REPLY + replies.nudge
            yield run.note(turn, "empty_reply", message)
            user_text = header + message
            off_protocol += 1
            continue
        seen: list[str] = []
        body = yield from _noting(act(turn), seen)
        acted = any(reason not in OFF_PROTOCOL_REASONS for reason in seen) or not seen
        off_protocol = 0 if acted else off_protocol + 1
        if body is None:
            return "answered"
        if isinstance(body, NextMessage):
            if body.tool_results:  # the turn's calls go into the history with their results
                history[-1] = Message("assistant", completion.text, tool_calls=turn.native_calls)
            results = body.tool_results
            body = body.text
        user_text = header + body
    yield LimitHit(run_id=run.run_id, limit="rounds", value=cfg.max_rounds, maximum=cfg.max_rounds)
    return "limit"
