"""A scripted chat model: fixed turns or a function. Used by tests and the offline demo.

Token counts are estimated (about four characters a token) so that runs through it
show plausible usage without any provider.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence

from conductor_kernel.interfaces import (
    STOPPED_PREFIX,
    CallRole,
    Completion,
    Message,
    StreamStopped,
    TextCallback,
    Usage,
)

# Given the expert's name (from its system prompt) and its instruction, the reply.
ExpertFn = Callable[[str, str], str]
MetaFn = Callable[[list[Message]], str]

_NAME_RE = re.compile(r"You are (Expert [^.\n]+?)\.")


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def expert_name_from_system(system: str | None) -> str:
    m = _NAME_RE.search(system or "")
    return m.group(1) if m else "Expert"


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
        meta: Sequence[str] | MetaFn,
        experts: ExpertFn | Sequence[str] | None = None,
        *,
        name: str = "scripted",
        chunk_chars: int = 24,
    ) -> None:
        self.name = name
        self._meta = meta
        self._experts = experts
        self._meta_index = 0
        self._expert_index = 0
        self._lock = threading.Lock()
        self.chunk_chars = chunk_chars
        self.requests: list[tuple[CallRole, str | None, list[Message]]] = []

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
    ) -> Completion:
        with self._lock:
            self.requests.append((role, system, list(messages)))
        if role == "expert" and callable(self._experts):
            # Outside the lock: concurrent expert calls must really run concurrently.
            instruction = messages[-1].content if messages else ""
            text = self._experts(expert_name_from_system(system), instruction)
        else:
            with self._lock:
                text = (
                    self._meta_reply(messages)
                    if role == "meta"
                    else self._expert_reply(system, messages)
                )
        stop = "end_turn"
        if on_text:
            for i in range(0, len(text), self.chunk_chars):
                try:
                    on_text(text[i : i + self.chunk_chars])
                except StreamStopped as stopped:  # as a real provider: keep what came
                    text, stop = text[: i + self.chunk_chars], STOPPED_PREFIX + stopped.reason
                    break
        prompt = (system or "") + "".join(m.content for m in messages)
        usage = Usage(
            input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(text), calls=1
        )
        return Completion(text=text, usage=usage, model=self.name, stop_reason=stop)

    def _meta_reply(self, messages: list[Message]) -> str:
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
