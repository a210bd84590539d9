"""The blocks a run is drawn with: a meta turn, an expert call, a sandbox run, a line.

They hold no logic about runs: a renderer (tui/renderers.py) decides what goes where.
Streamed text goes through `MarkdownStream`, which batches fragments that arrive faster
than the widget can draw.

Every text a block shows may come from a model or a sandbox, so each block passes it
through `visible()` (control characters as escapes) itself: whatever a renderer hands
in, nothing reaches the terminal raw.
"""

from __future__ import annotations

from typing import cast

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from conductor_kernel.text.display import visible, visible_line

QUOTE_FENCE = "~~~"  # not ``` : a quoted instruction may itself hold ``` code fences


def protocol_line(line: str) -> str:
    """One line of a model turn as Markdown: triple quotes become fences, `>>` stays text."""
    stripped = line.strip()
    if stripped == '"""':
        return QUOTE_FENCE
    if stripped.startswith('"""'):
        line = QUOTE_FENCE + "\n" + stripped[3:]
    if stripped.endswith('"""') and len(stripped) > 3:
        line = line.rstrip()[:-3] + "\n" + QUOTE_FENCE
    if line.lstrip().startswith(">>"):
        line = "\\" + line.lstrip()
    return line


def protocol_markdown(text: str) -> str:
    return "\n".join(protocol_line(line) for line in visible(text).split("\n"))


def shown_text(text: str | Text) -> Text:
    """Untrusted text (or a `Text` built from it) with its control characters visible."""
    if isinstance(text, str):
        return Text(visible(text))
    if visible(text.plain) == text.plain:
        return text
    return Text(visible(text.plain), style=text.style)  # spans would no longer line up


def shown_title(title: str | Content | Text) -> Content:
    """A one-line title: escapes visible, never read as markup."""
    plain = title if isinstance(title, str) else title.plain
    return Content(visible_line(plain))


class StreamedMarkdown(Markdown):
    """Markdown streamed line by line, then set to its final text.

    Model turns use triple quotes, not Markdown, so each complete line is translated
    (`protocol_line`) before it is shown; a partial line waits for its newline.
    """

    def __init__(self, text: str = "", **kwargs: object) -> None:
        super().__init__(protocol_markdown(text), **kwargs)  # type: ignore[arg-type]
        self._stream: MarkdownStream | None = None
        self.received = ""
        self._partial = ""

    async def stream(self, fragment: str) -> None:
        self.received += fragment
        *lines, self._partial = (self._partial + fragment).split("\n")
        if not lines:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(
            "".join(protocol_line(visible(line.removesuffix("\r"))) + "\n" for line in lines)
        )

    async def settle(self, text: str) -> None:
        """Stop streaming and show exactly `text` (the model's whole reply)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.received, self._partial = text, ""
        await self.update(protocol_markdown(text))


class TurnBlock(Vertical):
    """One meta-model turn: its streamed text, then the expert calls it made."""

    def __init__(self, round_no: int, **kwargs: object) -> None:
        super().__init__(classes="turn", **kwargs)  # type: ignore[arg-type]
        self.round_no = round_no
        self.border_title = f"round {round_no} · meta model"

    def compose(self) -> ComposeResult:
        yield StreamedMarkdown(classes="turn-text")
        yield Vertical(classes="turn-calls")

    @property
    def text(self) -> StreamedMarkdown:
        return self.query_one(".turn-text", StreamedMarkdown)

    @property
    def calls(self) -> Vertical:
        return self.query_one(".turn-calls", Vertical)


class ExpertBlock(Collapsible):
    """One expert call: a one-line summary that expands to instruction, reply and runs."""

    def __init__(self, title: str | Content, instruction: str, **kwargs: object) -> None:
        super().__init__(
            Static(shown_text(instruction), classes="expert-instruction"),
            StreamedMarkdown(classes="expert-reply"),
            Vertical(classes="expert-runs"),
            title=_collapsible_title(title),
            collapsed=True,
            classes="expert",
            **kwargs,  # type: ignore[arg-type]
        )

    def validate_title(self, title: str | Content) -> Content:
        # The title names the expert and quotes its instruction: the model wrote both.
        return shown_title(title)

    def retitle(self, title: str | Content) -> None:
        self.title = _collapsible_title(title)

    @property
    def contents(self) -> Collapsible.Contents:
        return self.query_one(Collapsible.Contents)

    @property
    def reply(self) -> StreamedMarkdown:
        return self.query_one(".expert-reply", StreamedMarkdown)

    @property
    def runs(self) -> Vertical:
        return self.query_one(".expert-runs", Vertical)


def _collapsible_title(title: str | Content) -> str:
    """The escaped title, as `Collapsible` takes it.

    textual types `Collapsible.title` as `str`, yet only hands it on to
    `CollapsibleTitle.label`, which takes `Content`. It must stay a `Content`: a `str`
    there would be parsed as markup, and the title quotes what the model wrote.
    """
    return cast(str, shown_title(title))


class SandboxBlock(Vertical):
    """One program run: highlighted code, its output streams and how it ended."""

    def __init__(self, code: str, stdout: str, stderr: str, status: str, ok: bool) -> None:
        super().__init__(classes="sandbox " + ("ok" if ok else "failed"))
        self.border_title = shown_title(f"sandbox · {status}")
        self._parts = (code, stdout, stderr)

    def compose(self) -> ComposeResult:
        code, stdout, stderr = self._parts
        yield Static(Syntax(visible(code.rstrip("\n")), "python", word_wrap=True), classes="code")
        if stdout:
            yield Static(shown_text(stdout.rstrip("\n")), classes="stdout")
        if stderr:
            yield Static(shown_text(stderr.rstrip("\n")), classes="stderr")


class EventLine(Static):
    """A one-line event (recall, note to the model, limit, notes written, summary)."""

    def __init__(self, text: str | Text, kind: str) -> None:
        super().__init__(shown_text(text), classes=f"line {kind}")


class BoxedText(Static):
    """A titled box of plain text (the question, the final answer, an error)."""

    def __init__(self, text: str, title: str, kind: str) -> None:
        super().__init__(shown_text(text), classes=f"boxed {kind}")
        self.border_title = shown_title(title)
