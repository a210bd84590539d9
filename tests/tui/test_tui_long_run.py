"""A 2,000-round transcript opens lazily: one scan, one round parsed and drawn at a time.

The timing is measured by bench/tui.py; this test checks the structure that makes it
fast, so it does not depend on how busy the machine is.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tui_helpers import make_settings, wait_for

from record.pages import TranscriptPages
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.blocks import TurnBlock

pytestmark = pytest.mark.anyio
BENCH = Path(__file__).resolve().parents[2] / "bench" / "tui.py"


def synthetic(path: Path, rounds: int) -> Path:
    spec = importlib.util.spec_from_file_location("bench_tui", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_transcript(path, rounds)


@pytest.mark.slow
def test_pages_index_rounds_and_parse_one_on_demand(tmp_path: Path) -> None:
    pages = TranscriptPages.open(synthetic(tmp_path / "long.jsonl", 2000))
    assert len(pages.pages) == 2001 and pages.lines == 9003
    assert pages.pages[1].label == "round 1 · 1 exp · 1 py"
    assert pages.pages[2].label == "round 2 · 1 exp"
    assert [e.kind for e in pages.head] == ["run_started", "run_finished"]
    events = pages.events(pages.page_of_round(1234))
    assert [e.kind for e in events] == [
        "meta_turn_started",
        "meta_turn_finished",
        "expert_call_started",
        "expert_call_finished",
    ]
    assert events[0].round == 1234


def test_a_cut_short_transcript_opens_up_to_the_bad_line(tmp_path: Path) -> None:
    path = synthetic(tmp_path / "cut.jsonl", 3)
    text = path.read_text()
    path.write_text(text[: text.rindex('{"v"')] + '{"v": 1, "kind": "run_finished", "run')
    pages = TranscriptPages.open(path)
    assert pages.problem is not None and "line" in str(pages.problem)
    assert len(pages.pages) == 4 and pages.run.finished is None


@pytest.mark.slow
async def test_only_the_shown_round_is_drawn(tmp_path: Path) -> None:
    path = synthetic(tmp_path / "long.jsonl", 2000)
    app = ConductorApp(make_settings(), open_run=str(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        detail = app.screen
        assert detail.query_one("#rounds").count == 2001
        await pilot.press("end")
        page = detail.query_one("#page")
        await wait_for(pilot, lambda: [t.round_no for t in page.query(TurnBlock)] == [2000])
        await pilot.press("pageup")
        await wait_for(pilot, lambda: detail.current < 2000 and len(page.query(TurnBlock)) == 1)
        assert len(list(detail.walk_children())) < 100
