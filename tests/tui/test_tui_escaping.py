"""The TUI shows model and sandbox text with its control characters made visible.

A hostile run (every untrusted field full of escape sequences and markup) is opened in
the real app through Pilot; every page of it is drawn with every expert expanded, and
what the screen holds must contain no raw ESC, C1, bidi control or NUL.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_runs import MARKUP, SEQUENCES, hostile_events, hostile_text
from hypothesis import HealthCheck, given, settings
from tui_helpers import make_settings, wait_for

from conductor_kernel.text.display import UNSAFE
from record.writer import TranscriptWriter
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.blocks import ExpertBlock, SandboxBlock


def write(path: Path, text: str) -> Path:
    with TranscriptWriter(path) as writer:
        for event in hostile_events(text):
            writer.handle(event)
    return path


def screen_text(app) -> str:
    """Everything the compositor would send to the terminal, as one string."""
    return "".join(
        segment.text for strip in app.screen._compositor.render_strips() for segment in strip
    )


async def shown_pages(path: Path) -> list[str]:
    app = ConductorApp(make_settings(), open_run=str(path))
    pages: list[str] = []
    async with app.run_test(size=(160, 80)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        detail = app.screen
        for _ in range(3):  # the start, round 1, the end
            for block in detail.query(ExpertBlock):
                block.collapsed = False
            await pilot.pause(0.2)
            pages.append(screen_text(app))
            await pilot.press("n")
        assert detail.query(SandboxBlock) or pages
    return pages


def assert_clean(pages: list[str]) -> None:
    for page in pages:
        bad = UNSAFE.search(page)
        assert bad is None, (
            f"raw {bad.group()!r} on screen near {page[max(0, bad.start() - 30) : bad.end() + 30]!r}"
        )


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_known_sequence_is_drawn_visible(tmp_path: Path) -> None:
    pages = await shown_pages(write(tmp_path / "hostile.jsonl", "".join(SEQUENCES + MARKUP)))
    assert_clean(pages)
    joined = "".join(pages)
    assert "\\x1b]52;c;cHduZWQ=" in joined  # shown, as text
    assert "\\u202e" in joined


@pytest.mark.slow
@given(hostile_text)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_hostile_runs_are_drawn_visible(tmp_path_factory, text: str) -> None:
    import asyncio

    path = write(tmp_path_factory.mktemp("hostile") / "run.jsonl", text)
    assert_clean(asyncio.run(shown_pages(path)))


HOSTILE = "".join(SEQUENCES + MARKUP)
LIVE_TURNS = (
    f"{HOSTILE}\n\nExpert Python:\n" + '"""\n' + f"Print the escapes. {HOSTILE}\n" + '"""',
    f'{HOSTILE}\n\n>> FINAL ANSWER:\n"""\n{HOSTILE}\n"""',
)


def live_expert(name: str, instruction: str) -> str:
    # Real code in a real (subprocess) sandbox, printing raw escapes to stdout and stderr.
    code = (
        "import sys\n"
        "print('\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x9b31m\\u202eevil\\x00')\n"
        "print('\\x1b[1A\\x1b[2K fake', file=sys.stderr)\n"
    )
    return f"{HOSTILE}\n```python\n{code}```\nPlease run this code!"


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_live_run_streams_hostile_text_visible() -> None:
    """The Solve screen while the model streams in 8-character pieces, which split the
    escape sequences across fragments, and while the sandbox prints raw escapes."""
    from tui_helpers import scripted_factory

    from tui.screens.solve import SolveScreen

    app = ConductorApp(make_settings(), session_factory=scripted_factory(LIVE_TURNS, live_expert))
    pages: list[str] = []
    async with app.run_test(size=(160, 80)) as pilot:
        assert isinstance(app.screen, SolveScreen)
        box = app.screen.query_one("#question")
        # The user's own question stays plain: the Input widget shows what they typed.
        box.value = "Print the escapes"
        box.focus()
        await pilot.press("enter")
        screen = app.screen
        while screen.finished is None:
            pages.append(screen_text(app))
            await pilot.pause(0.05)
        for block in screen.query(ExpertBlock):
            block.collapsed = False
        await pilot.pause(0.3)
        pages.append(screen_text(app))
        assert screen.query(SandboxBlock), "the code did not run"
    assert_clean(pages)
    assert "\\x1b]52;c;cHduZWQ=" in pages[-1]


@pytest.mark.anyio
async def test_streamed_fragments_are_shown_visible_before_the_turn_settles() -> None:
    """Fragments split escape sequences and CRLF pairs; what is drawn mid-stream is clean."""
    from textual.app import App

    from tui.widgets.blocks import StreamedMarkdown

    class Host(App[None]):
        def compose(self):
            yield StreamedMarkdown()

    text = "\r\n".join(SEQUENCES) + "\n"
    app = Host()
    async with app.run_test(size=(160, 40)) as pilot:
        widget = app.query_one(StreamedMarkdown)
        for start in range(0, len(text), 3):
            await widget.stream(text[start : start + 3])
        await pilot.pause(0.3)
        page = screen_text(app)
        assert "\\x1b[2J" in page, "the streamed text is not on screen yet"
        assert_clean([page])
