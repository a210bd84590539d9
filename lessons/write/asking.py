"""The notebook's own model calls (reflection, the type choice, induction): what they
share, and what a small model taught them.

Run against SmolLM2-135M (tests/peers/test_notebook_llama.py), these prompts come back
in no asked form, and often as one line repeated until the output limit: 600 tokens of
"The session failed." took 40 s of a user's time after each run. So every call here is
streamed through `RepetitionGuard`, which ends the stream (the server stops generating)
once a line has come `REPEATS` times; what came before is parsed as usual. And what the
parsers keep must be a lesson, not an echo of the prompt: `is_placeholder` finds the
prompt's own `<key>`/`<lesson>` slots and instructions written back.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

from conductor_kernel.interfaces import ChatModel, Completion, Message, StreamStopped

log = logging.getLogger("conductor.notebook")

REPEATS = 3
# A slot of the prompt (`<key>`, `<lesson>`, `<step>` ...), or one in square brackets.
_PLACEHOLDER = re.compile(
    r"<\s*(key|lesson|suggestion|step|number|one sentence|two to five)[^>]*>"
    r"|\[\s*(key|lesson|suggestion|step|number)s?\s*\]",
    re.I,
)


class RepetitionGuard:
    """An `on_text` callback that stops a stream whose text has started to loop."""

    def __init__(self, repeats: int = REPEATS) -> None:
        self.repeats = repeats
        self._partial = ""
        self._lines: Counter[str] = Counter()

    def __call__(self, piece: str) -> None:
        self._partial += piece
        *done, self._partial = self._partial.split("\n")
        for line in done:
            key = " ".join(line.split()).lower()
            if not key:
                continue
            self._lines[key] += 1
            if self._lines[key] >= self.repeats:
                raise StreamStopped("repeating")


def ask(model: ChatModel, prompt: str, *, system: str, max_tokens: int) -> Completion:
    """One notebook prompt, streamed under a `RepetitionGuard`. Raises what the model
    raises; a stream stopped for repeating itself returns the text before the stop."""
    completion = model.complete(
        [Message("user", prompt)],
        system=system,
        on_text=RepetitionGuard(),
        role="expert",
        max_tokens=max_tokens,
    )
    if completion.stopped:
        log.info("a notebook call was stopped: its reply was repeating itself")
    return completion


def is_placeholder(text: str) -> bool:
    """Whether text is the prompt's own slot (`<key>`, `<lesson>` ...) written back."""
    return bool(_PLACEHOLDER.search(text))


def echoes(text: str, prompt: str) -> bool:
    """Whether text is a piece of the prompt it answers (an instruction copied back)."""
    squeezed = " ".join(re.findall(r"\w+", text.lower()))
    return len(squeezed) >= 12 and squeezed in " ".join(re.findall(r"\w+", prompt.lower()))
