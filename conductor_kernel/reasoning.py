"""Reasoning text in a model's reply: kept and shown, never read as protocol.

Servers deliver a reasoning model's thinking in several ways: inside the content as a
`<think>…</think>` block (llama.cpp, Ollama or vLLM without a reasoning parser), with
only the closing tag when the chat template opened the block in the prompt (DeepSeek-R1
distills), unclosed when the turn was cut mid-thought, or apart from the content
(`reasoning_content` / `reasoning` in OpenAI-compatible replies, Anthropic `thinking`
blocks). The providers fold the separate forms into the text as a `<think>` block
(`ReasoningFold`), so a transcript keeps every form the same way, and the parser
(`conductor_kernel.protocol`) reads only what lies outside such blocks: an expert call
or a final answer the model only thought about is never acted on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "<think>"
CLOSE = "</think>"
_TAGS = r"think|thinking|reasoning"
_OPEN_RE = re.compile(rf"<(?P<tag>{_TAGS})>", re.I)
_CLOSE_RE = re.compile(rf"</(?:{_TAGS})>", re.I)


@dataclass(frozen=True)
class Split:
    """A reply divided into what the model said and what it only thought."""

    visible: str
    reasoning: tuple[str, ...] = ()

    @property
    def has_reasoning(self) -> bool:
        return bool(self.reasoning)


def reasoning_spans(text: str) -> list[tuple[int, int]]:
    """The [start, end) offsets of every reasoning block in `text`, tags included.

    A closing tag before any opening one ends a block that began at the start of the
    reply (the template opened it); an opening tag never closed runs to the end.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    first_open = _OPEN_RE.search(text)
    first_close = _CLOSE_RE.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        spans.append((0, first_close.end()))
        pos = first_close.end()
    while (opened := _OPEN_RE.search(text, pos)) is not None:
        closer = re.compile(rf"</{re.escape(opened.group('tag'))}>", re.I)
        closed = closer.search(text, opened.end())
        end = len(text) if closed is None else closed.end()
        spans.append((opened.start(), end))
        pos = end
    return spans


def split_reasoning(text: str) -> Split:
    """`text` without its reasoning blocks (each replaced by a line break, so what stood
    on either side never joins into one line), and the blocks' inner text."""
    spans = reasoning_spans(text)
    if not spans:
        return Split(text)
    visible: list[str] = []
    thoughts: list[str] = []
    pos = 0
    for start, end in spans:
        visible.append(text[pos:start])
        visible.append("\n")
        inner = _CLOSE_RE.sub("", _OPEN_RE.sub("", text[start:end], count=1), count=1)
        thoughts.append(inner.strip())
        pos = end
    visible.append(text[pos:])
    return Split("".join(visible), tuple(thoughts))


def visible_text(text: str) -> str:
    """What the model said, its reasoning left out."""
    return split_reasoning(text).visible


class ReasoningFold:
    """Folds reasoning a server sends apart from the content into the streamed text as
    a `<think>` block. Each method returns the text to pass on (possibly empty)."""

    def __init__(self) -> None:
        self.open = False

    def reasoning(self, piece: str) -> str:
        if not piece:
            return ""
        if self.open:
            return piece
        self.open = True
        return OPEN + piece

    def text(self, piece: str) -> str:
        if self.open and piece:
            self.open = False
            return CLOSE + piece
        return piece

    def close(self) -> str:
        """At the end of the reply: the closing tag if a block is still open."""
        if self.open:
            self.open = False
            return CLOSE
        return ""


def folded(reasoning: str, text: str) -> str:
    """A whole (non-streamed) reply's reasoning and text as one text."""
    return f"{OPEN}{reasoning}{CLOSE}{text}" if reasoning else text
