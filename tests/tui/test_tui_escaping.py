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

from conductor.display import UNSAFE
from transcripts.writer import TranscriptWriter
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


@pytest.mark.anyio
async def test_every_known_sequence_is_drawn_visible(tmp_path: Path) -> None:
    pages = await shown_pages(write(tmp_path / "hostile.jsonl", "".join(SEQUENCES + MARKUP)))
    assert_clean(pages)
    joined = "".join(pages)
    assert "\\x1b]52;c;cHduZWQ=" in joined  # shown, as text
    assert "\\u202e" in joined


@given(hostile_text)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_hostile_runs_are_drawn_visible(tmp_path_factory, text: str) -> None:
    import asyncio

    path = write(tmp_path_factory.mktemp("hostile") / "run.jsonl", text)
    assert_clean(asyncio.run(shown_pages(path)))
