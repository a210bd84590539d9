"""The Markdown export draws each event kind with one renderer of its own, as the
terminal and the TUI do: every kind the terminal shows (but the verdict, which a page
leaves to its listing) has one, and a kind without one is left out, never guessed at."""

from __future__ import annotations

from conductor.export import markdown, terminal
from conductor_kernel.events import RunScored, TextDelta


def test_every_kind_the_terminal_draws_has_a_markdown_renderer() -> None:
    assert set(terminal.RENDERERS) - {RunScored} <= set(markdown.RENDERERS)


def test_a_kind_without_a_renderer_is_left_out() -> None:
    assert TextDelta not in markdown.RENDERERS
    assert markdown._md(TextDelta(run_id="r", text="x")) is None
