"""A chat model that answers from one published record, for replaying the paper's runs.

As the meta model it returns the record's meta turns in order. As an expert it returns
the recorded reply to the call with the same instruction: calls of one turn may be
dispatched concurrently, so arrival order says nothing. For Expert Python the reply is
the expert's own words only; the code in it runs again in our sandbox.

Token counts are GPT-4's own tokenizer's (cl100k, conductor_kernel/text/tokens.py).
With `cache=True` a meta request is split into the prefix the previous request already
sent (a provider would serve it from its prompt cache) and the new suffix.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from conductor_kernel.interfaces import (
    CallRole,
    Completion,
    Message,
    TextCallback,
    ToolSpec,
    Usage,
)
from conductor_kernel.text.tokens import estimate_tokens
from record.published import PublishedRecord, RecordedCall, normalise_expert_name

MESSAGE_OVERHEAD_TOKENS = 4  # role and separators of one chat message
LOST_REPLY = (
    "(This reply is missing from the published log: the original harness failed "
    "while handling it and asked the meta model again.)"
)
NO_REPLY = "(The published record holds no reply for this instruction.)"
_NAME_RE = re.compile(r"You are (Expert [^.\n]+?)\.")


class ReplayExhausted(RuntimeError):
    """The conductor asked for more meta turns than the record holds."""


@dataclass
class _Slot:
    turn: int  # the meta turn whose call this is
    call: RecordedCall
    used: bool = False


def _key(text: str) -> str:
    return " ".join(text.split())


class ReplayModel:
    """A `ChatModel` answering both roles from one `PublishedRecord`."""

    def __init__(self, record: PublishedRecord, *, name: str = "replay") -> None:
        self.name = name
        self.record = record
        self._lock = threading.Lock()
        self._next_turn = 0
        self._slots = [_Slot(t.number, c) for t in record.turns for c in t.calls or []]
        self._prev_prompt: list[str] = []
        self._prev_tokens: list[int] = []
        # The last message of every meta request: what our loop sent back each round.
        self.meta_requests: list[str] = []
        # What went wrong while answering, for the replay report.
        self.unmatched: list[str] = []
        self.lost_replies = 0

    @property
    def meta_turns_served(self) -> int:
        return self._next_turn

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,  # a replay speaks the recorded text only
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        with self._lock:
            if role == "meta":
                text, usage = self._meta(messages, system, cache)
            else:
                text = self._expert(system, messages)
                prompt = (system or "") + "".join(m.content for m in messages)
                usage = Usage(
                    input_tokens=estimate_tokens(prompt),
                    output_tokens=estimate_tokens(text),
                    calls=1,
                )
        if on_text and text:
            on_text(text)
        return Completion(text=text, usage=usage, model=self.name, stop_reason="end_turn")

    def _meta(self, messages: list[Message], system: str | None, cache: bool) -> tuple[str, Usage]:
        if self._next_turn >= len(self.record.turns):
            raise ReplayExhausted(
                f"record {self.record.line} has {len(self.record.turns)} meta turns; "
                "the conductor asked for another"
            )
        turn = self.record.turns[self._next_turn]
        self._next_turn += 1
        self.meta_requests.append(messages[-1].content if messages else "")
        prompt = [system or "", *(m.content for m in messages)]
        tokens = self._prompt_tokens(prompt)
        cached = 0
        if cache and prompt[: len(self._prev_prompt)] == self._prev_prompt:
            cached = sum(self._prev_tokens)
        self._prev_prompt, self._prev_tokens = prompt, tokens
        usage = Usage(
            input_tokens=sum(tokens),
            output_tokens=estimate_tokens(turn.text),
            cache_read_tokens=cached,
            calls=1,
        )
        return turn.text, usage

    def _prompt_tokens(self, prompt: list[str]) -> list[int]:
        """Tokens per message, reusing the counts of the prefix the last request shared."""
        tokens: list[int] = []
        for i, content in enumerate(prompt):
            if i < len(self._prev_prompt) and self._prev_prompt[i] == content:
                tokens.append(self._prev_tokens[i])
            else:
                tokens.append(estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS)
        return tokens

    def _expert(self, system: str | None, messages: list[Message]) -> str:
        instruction = messages[-1].content if messages else ""
        m = _NAME_RE.search(system or "")
        name = normalise_expert_name(m.group(1)) if m else ""
        slot = self._find(instruction, name)
        if slot is None:
            self.unmatched.append(f"{name or 'an expert'}: {instruction[:80]!r}")
            return NO_REPLY
        slot.used = True
        if slot.call.reply is None:
            self.lost_replies += 1
            return LOST_REPLY
        return slot.call.reply

    def _find(self, instruction: str, name: str) -> _Slot | None:
        """The recorded call this request replays: same instruction, nearest turn first."""
        turn = self._next_turn  # the meta turn just served asked for this call
        free = [s for s in self._slots if not s.used]
        exact = instruction.strip()
        loose = _key(instruction)
        tests = (
            lambda s: s.turn == turn and s.call.instruction == exact,
            lambda s: s.turn == turn and _key(s.call.instruction) == loose,
            lambda s: _key(s.call.instruction) == loose,
        )
        for test in tests:
            found = [slot for slot in free if test(slot)]
            # Two experts of one turn may get the same instruction: the name decides,
            # so concurrent calls get the same replies in every replay.
            named = [slot for slot in found if slot.call.expert == name]
            if named or found:
                return (named or found)[0]
        # The same expert asked in this turn with slightly different words.
        same_name = [s for s in free if s.turn == turn and s.call.expert == name]
        return same_name[0] if len(same_name) == 1 else None


class TurnsReplayModel:
    """A `ChatModel` answering every call with the next of a run's recorded turns.

    For the paper's baseline runs: one model, no experts, so the calls come in the
    order they were recorded (expert-dynamic's first call, which wrote the expert's
    description, answers with that description).
    """

    def __init__(self, turns: list[str], *, line: int = 0, name: str = "replay") -> None:
        self.name = name
        self.turns = list(turns)
        self.line = line
        self._lock = threading.Lock()
        self._next = 0
        self.requests: list[str] = []  # the last message of every call: what we sent

    @property
    def served(self) -> int:
        return self._next

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,  # a replay speaks the recorded text only
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        with self._lock:
            if self._next >= len(self.turns):
                raise ReplayExhausted(
                    f"record {self.line} has {len(self.turns)} model turns; "
                    "the method asked for another"
                )
            text = self.turns[self._next]
            self._next += 1
            self.requests.append(messages[-1].content if messages else "")
        prompt = [system or "", *(m.content for m in messages)]
        usage = Usage(
            input_tokens=sum(estimate_tokens(p) + MESSAGE_OVERHEAD_TOKENS for p in prompt),
            output_tokens=estimate_tokens(text),
            calls=1,
        )
        if on_text and text:
            on_text(text)
        return Completion(text=text, usage=usage, model=self.name, stop_reason="end_turn")
