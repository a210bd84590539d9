"""The baselines' turn policy on generated replies: answers, prose, empty turns, turns cut
at the output limit and declines, in any order, under any round cap.

Whatever the model does, the run ends on the first whole turn that holds an answer (with
that answer), or at the cap without one; every other turn is told why it was not taken;
every model call is one meta turn, counted in the usage; and the answer is what
`conductor score` would read from that turn.
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.methods import BASELINES, get_method
from conductor.methods import prompts as method_prompts
from conductor_kernel.events import (
    Event,
    FinalAnswer,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunFinished,
)
from conductor_kernel.interfaces import Completion, Message, Usage
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.protocol import parse_final_answer
from conductor_kernel.run.loop import Conductor

words = st.text(alphabet=st.sampled_from("abcxyz 0123456789+-=.,\n"), min_size=0, max_size=40)


@st.composite
def replies(draw: Any) -> tuple[str, str]:
    """(text, stop reason) of one model turn."""
    kind = draw(st.sampled_from(["answer", "prose", "empty", "cut", "cut_answer", "marker_case"]))
    body = draw(words)
    value = draw(st.text(alphabet="0123456789abc ", min_size=1, max_size=8).map(str.strip))
    value = value or "7"
    answer = f'{body}\n>> FINAL ANSWER:\n"""\n{value}\n"""'
    if kind == "answer":
        return answer, "end_turn"
    if kind == "marker_case":  # emphasis and case, as the published turns write it
        return f'{body}\n**>> Final Answer:**\n"""\n{value}\n"""', "stop"
    if kind == "prose":
        return body.replace(">>", "") or "thinking", "end_turn"
    if kind == "empty":
        return draw(st.sampled_from(["", "  ", "\n"])), "end_turn"
    if kind == "cut":
        return body or "partial", "max_tokens"
    return answer, "length"  # an answer in a cut turn is never taken


class Replies:
    """A model playing generated turns, then prose for ever."""

    name = "generated"

    def __init__(self, turns: list[tuple[str, str]]) -> None:
        self.turns = list(turns)
        self.calls: list[list[Message]] = []
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], **_: Any) -> Completion:
        with self._lock:
            n = len(self.calls)
            self.calls.append(list(messages))
        text, stop = self.turns[n] if n < len(self.turns) else ("still thinking", "end_turn")
        return Completion(text, Usage(input_tokens=3, output_tokens=2, calls=1), "g", stop)


def taken(text: str, stop: str) -> str | None:
    """The answer a whole turn gives, None for a turn that gives none."""
    if stop in ("max_tokens", "length") or not text.strip():
        return None
    return parse_final_answer(text)[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    method=st.sampled_from(BASELINES),
    turns=st.lists(replies(), min_size=0, max_size=7),
    cap=st.integers(min_value=1, max_value=6),
)
def test_a_baseline_ends_on_the_first_whole_answer_or_at_the_cap(
    method: str, turns: list[tuple[str, str]], cap: int
) -> None:
    dynamic = method == "expert-dynamic"
    played = [("You are a careful calculator.", "end_turn"), *turns] if dynamic else turns
    model = Replies(played)
    conductor = Conductor(
        model, config=RunConfig(max_rounds=cap, python=False), method=get_method(method)
    )
    events: list[Event] = [e for e in conductor.run("What is 3 + 4?") if not e.transient]
    finished = events[-1]
    assert isinstance(finished, RunFinished)

    first = 1 if dynamic else 0
    expected_round, expected_answer = None, None
    for n in range(first, cap):
        text, stop = played[n] if n < len(played) else ("still thinking", "end_turn")
        answer = taken(text, stop)
        if answer is not None:
            expected_round, expected_answer = n + 1, answer
            break
    if expected_round is None:
        assert finished.status == "limit" and finished.final_answer is None
        assert finished.rounds == cap
    else:
        assert finished.status == "answered" and finished.final_answer == expected_answer
        assert finished.rounds == expected_round
        (final,) = [e for e in events if isinstance(e, FinalAnswer)]
        assert (final.answer, final.round) == (expected_answer, expected_round)

    # One meta turn per model call, each counted once in the usage.
    started = [e for e in events if isinstance(e, MetaTurnStarted)]
    assert len(started) == len(model.calls) == finished.usage.calls == finished.rounds
    assert len([e for e in events if isinstance(e, MetaTurnFinished)]) == len(started)
    # Every answering turn not taken was told why, and the next message says it.
    notes = {e.parent_id: e for e in events if isinstance(e, Observation)}
    for turn, nxt in zip(started[first:], started[first + 1 :], strict=False):
        note = notes.get(turn.id)
        assert note is not None and note.reason in ("no_call_or_answer", "empty_reply", "truncated")
        assert note.message in nxt.user_message
        assert "FINAL ANSWER" in nxt.user_message or "cut off" in nxt.user_message
    if dynamic and len(model.calls) > 1:
        assert method_prompts.AS_THAT_EXPERT in model.calls[1][0].content
