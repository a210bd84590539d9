"""A scripted chat model: fixed turns or a function. Used by tests and the offline demo.

Token counts are estimated (about four characters a token) so that runs through it
show plausible usage without any provider.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import replace
from typing import Any

from conductor_kernel.interfaces import (
    STOPPED_PREFIX,
    CallRole,
    Completion,
    Message,
    StreamStopped,
    TextCallback,
    ToolSpec,
    Usage,
)
from conductor_kernel.text.tokens import by_characters  # the one rule: no vocabulary here

# Given the expert's name (from its system prompt) and its instruction, the reply.
ExpertFn = Callable[[str, str], str]
# A meta turn: its text, or a whole completion (its text, tool calls and stop reason).
MetaTurn = str | Completion
MetaFn = Callable[[list[Message]], MetaTurn]

_NAME_RE = re.compile(r"You are (Expert [^.\n]+?)\.")


def expert_name_from_system(system: str | None) -> str:
    m = _NAME_RE.search(system or "")
    return m.group(1) if m else "Expert"


def _kept(most: int | None) -> MutableSequence[Any]:
    """A list of everything, or the latest `most` only."""
    return [] if most is None else deque(maxlen=most)


class ScriptExhausted(RuntimeError):
    """The script has no more meta turns: the test or demo asked for more rounds."""


class ScriptedModel:
    """Answers meta turns from a list (or function) and experts from a function.

    `meta` is a list of turns played in order, or a function of the history.
    `experts` maps the expert's name and instruction to a reply; a list is played in
    order. Text is streamed to `on_text` in small pieces, as a real provider would.
    """

    def __init__(
        self,
        meta: Sequence[MetaTurn] | MetaFn,
        experts: ExpertFn | Sequence[str] | None = None,
        *,
        name: str = "scripted",
        chunk_chars: int = 24,
        keep_requests: int | None = None,
    ) -> None:
        self.name = name
        self._meta = meta
        self._experts = experts
        self._meta_index = 0
        self._expert_index = 0
        self._lock = threading.Lock()
        self.chunk_chars = chunk_chars
        # What each call was sent, for a test to read; `keep_requests` keeps only the
        # latest (the demo, which a long batch calls thousands of times, keeps a few).
        self.requests: MutableSequence[tuple[CallRole, str | None, list[Message]]] = _kept(
            keep_requests
        )
        # The names of the tools each meta call offered (None: none offered), and the
        # grammar it was held to (None: none).
        self.offered: MutableSequence[tuple[str, ...] | None] = _kept(keep_requests)
        self.grammars: MutableSequence[str | None] = _kept(keep_requests)
        # The sampling temperature each call asked for (None: the model's own).
        self.temperatures: MutableSequence[float | None] = _kept(keep_requests)

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        with self._lock:
            self.requests.append((role, system, list(messages)))
            self.temperatures.append(temperature)
            if role == "meta":
                self.offered.append(None if tools is None else tuple(t.name for t in tools))
                self.grammars.append(grammar)
        scripted: Completion | None = None
        if role == "expert" and callable(self._experts):
            # Outside the lock: concurrent expert calls must really run concurrently.
            instruction = messages[-1].content if messages else ""
            text = self._experts(expert_name_from_system(system), instruction)
        else:
            with self._lock:
                turn = (
                    self._meta_reply(messages)
                    if role == "meta"
                    else self._expert_reply(system, messages)
                )
            scripted = turn if isinstance(turn, Completion) else None
            text = turn.text if isinstance(turn, Completion) else turn
        stop = scripted.stop_reason if scripted is not None and scripted.stop_reason else "end_turn"
        if on_text:
            for i in range(0, len(text), self.chunk_chars):
                try:
                    on_text(text[i : i + self.chunk_chars])
                except StreamStopped as stopped:  # as a real provider: keep what came
                    text, stop = text[: i + self.chunk_chars], STOPPED_PREFIX + stopped.reason
                    break
        prompt = (system or "") + "".join(m.content for m in messages)
        usage = Usage(
            input_tokens=by_characters(len(prompt)), output_tokens=by_characters(len(text)), calls=1
        )
        completion = Completion(text=text, usage=usage, model=self.name, stop_reason=stop)
        if scripted is not None and not stop.startswith(STOPPED_PREFIX):
            completion = replace(completion, tool_calls=list(scripted.tool_calls))
        return completion

    def _meta_reply(self, messages: list[Message]) -> MetaTurn:
        if callable(self._meta):
            return self._meta(messages)
        if self._meta_index >= len(self._meta):
            raise ScriptExhausted(f"the script has only {len(self._meta)} meta turns")
        self._meta_index += 1
        return self._meta[self._meta_index - 1]

    def _expert_reply(self, system: str | None, messages: list[Message]) -> str:
        instruction = messages[-1].content if messages else ""
        if self._experts is None:
            return "(no scripted expert reply)"
        if callable(self._experts):
            return self._experts(expert_name_from_system(system), instruction)
        if self._expert_index >= len(self._experts):
            raise ScriptExhausted(f"the script has only {len(self._experts)} expert replies")
        self._expert_index += 1
        return self._experts[self._expert_index - 1]


class ScriptedToolModel(ScriptedModel):
    """A scripted model that takes tools (`ToolSupport`): under `--protocol auto` its runs
    use the tools carrier. Script its tool turns as `Completion`s with `tool_calls`."""

    def tool_support(self) -> tuple[bool, str]:
        return True, "the scripted model takes tools"

    def grammar_support(self) -> tuple[bool, str]:
        return True, "the scripted model records the grammar"
