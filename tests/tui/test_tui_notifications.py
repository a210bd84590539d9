"""Notifications quote paths, errors and transcripts: they are shown as text (a `[/q]`
in a path must not crash the app, an escape must not reach the terminal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_runs import hostile_events
from tui_helpers import make_settings, wait_for

from conductor_kernel.text.display import UNSAFE
from record.writer import TranscriptWriter
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen


def _toasts(app) -> str:
    """What the terminal is sent for the screen, toasts included, as one string."""
    strips = app.screen._compositor.render_strips()
    return "".join(segment.text for strip in strips for segment in strip)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_transcript_problem_in_an_odd_path_is_notified_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "[" / "q]\x1b]52;c;cHduZWQ=\x07"  # the path reads "[/q]..."
    folder.mkdir(parents=True)
    path = folder / "run.jsonl"
    with TranscriptWriter(path) as writer:
        for event in hostile_events("x"):
            writer.handle(event)
    with path.open("a") as fh:
        fh.write("not json\n")  # a bad line: the detail screen notifies its problem
    app = ConductorApp(make_settings(), open_run=str(path))
    async with app.run_test(size=(160, 60), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        await wait_for(pilot, lambda: "[/q]" in _toasts(app))
        shown = _toasts(app)
        assert not UNSAFE.search(shown), shown
        assert "\\x1b]52;c;cHduZWQ=\\x07" in shown
        app.notify("[bold]b[/] [/x]\u202e", title="t[/y]")
        await wait_for(pilot, lambda: "[/x]" in _toasts(app))
