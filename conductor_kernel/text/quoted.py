"""Other people's words inside a prompt, fenced as data that cannot close its own fence.

The notebook's recall (lessons/read/render.py) puts every word it did not write itself
(a note's text and program, an earlier question, a model's suggestions, what a program
printed) between an opening mark `⟦label⟧` and the closing mark `⟦end⟧`. The label is the
renderer's own and says whose words follow.

The two brackets are reserved. In quoted text each of them, and the look-alikes a reader
could take for them, becomes a plain square bracket, so no text, whatever it holds, can
open, close or nest a fence: a fence ends at the first `⟦end⟧` after its opening, and
that is always the renderer's. Invisible and control characters are shown as escapes
(display.py), as everywhere else untrusted text is shown.

Why fixed marks with the brackets rewritten, not a random nonce per render: the guarantee
holds for every text, not with high probability (a nonce can be guessed or leak into a
later note); the same notes render the same text (prompt caches, replays, the token
counts cached by text); and a reader needs no secret to parse it. The price: a program
holding one of those brackets is not shown exactly as it is, so the renderer never
offers such a program to be run as it is (`shown_as_is`).

Whatever acts on what the renderer says (experts/demo/) reads `split(text)`: the
renderer's own text, each fenced block replaced by a placeholder, and the blocks apart.
A mark is recognised only in the former.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conductor_kernel.text.display import visible

OPEN, CLOSE = "⟦", "⟧"
END = f"{OPEN}end{CLOSE}"
# Reserved brackets and their look-alikes, each made a plain one in quoted text.
_NEUTRAL = str.maketrans({"⟦": "[", "〚": "[", "⟧": "]", "〛": "]"})
_MARK = re.compile(f"{OPEN}([^{OPEN}{CLOSE}]*){CLOSE}")


def neutral(text: str) -> str:
    """`text` as it is shown inside a fence: no reserved bracket, nothing invisible."""
    return visible(text).translate(_NEUTRAL)


def shown_as_is(text: str) -> bool:
    """Whether quoting leaves `text` unchanged (a program can then be copied from it)."""
    return neutral(text) == text


def _label(label: str) -> str:
    if neutral(label) != label or "\n" in label or label == "end":
        raise ValueError(f"not a fence label: {label!r}")
    return label


def fence(label: str, text: str) -> str:
    """`text` as a block of lines between `⟦label⟧` and `⟦end⟧`, each on its own line."""
    return f"{OPEN}{_label(label)}{CLOSE}\n{neutral(text)}\n{END}"


def inline(label: str, text: str) -> str:
    """`text` fenced within a line (its line breaks made spaces)."""
    flat = " ".join(neutral(text).split())
    return f"{OPEN}{_label(label)}{CLOSE}{flat}{END}"


@dataclass(frozen=True)
class Quoted:
    label: str
    text: str  # as it stands between the marks (a block's has a line break at each end)

    @property
    def body(self) -> str:
        """The quoted words, without the line breaks a block fence adds."""
        if self.text.startswith("\n") and self.text.endswith("\n") and len(self.text) > 1:
            return self.text[1:-1]
        return self.text


def placeholder(index: int) -> str:
    return f"{OPEN}#{index}{CLOSE}"


def split(text: str) -> tuple[str, list[Quoted]]:
    """The renderer's own words in `text`, with the i-th fenced block replaced by
    `placeholder(i)`, and the blocks. A fence left open quotes the rest of the text; a
    stray `⟦end⟧` outside a fence stays in the renderer's words as written."""
    own: list[str] = []
    blocks: list[Quoted] = []
    at = 0
    opened: tuple[str, int] | None = None
    for mark in _MARK.finditer(text):
        label = mark.group(1)
        if opened is None and label != "end":
            own.append(text[at : mark.start()])
            opened = (label, mark.end())
        elif opened is not None and label == "end":
            blocks.append(Quoted(opened[0], text[opened[1] : mark.start()]))
            own.append(placeholder(len(blocks) - 1))
            opened, at = None, mark.end()
    if opened is not None:
        blocks.append(Quoted(opened[0], text[opened[1] :]))
        own.append(placeholder(len(blocks) - 1))
    else:
        own.append(text[at:])
    return "".join(own), blocks
