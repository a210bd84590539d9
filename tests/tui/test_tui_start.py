"""Start-up of a run: the sandbox is started ahead, progress shows at once, Esc works.

The session factory here blocks until the test lets it go, standing in for a sandbox
that takes seconds to start (the real one is timed in bench/first_run.py).
"""

from __future__ import annotations

import threading

import pytest
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, scripted_factory, wait_for

from tui.app import ConductorApp

pytestmark = pytest.mark.anyio


def gated_factory(gate: threading.Event, calls: list[int]):
    inner = scripted_factory(GAME24_TURNS, game24_expert)

    def make(settings):
        calls.append(1)
        gate.wait(30)
        return inner(settings)

    return make


def status(app) -> str:
    return str(app.screen.query_one("#status-bar").render())


async def test_the_session_starts_before_the_first_question() -> None:
    gate, calls = threading.Event(), []
    gate.set()
    app = ConductorApp(make_settings(), session_factory=gated_factory(gate, calls))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: len(calls) == 1)  # no question asked yet


@pytest.mark.slow
async def test_enter_shows_progress_at_once_and_esc_stops_the_start_up() -> None:
    gate, calls = threading.Event(), []
    app = ConductorApp(make_settings(), session_factory=gated_factory(gate, calls))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            box = screen.query_one("#question")
            box.value = "Use 4 5 6 10 to make 24"
            await pilot.press("enter")
            await pilot.pause()
            assert "starting the sandbox" in status(app)
            await pilot.press("escape")
            await pilot.pause()
            assert "stopped" in status(app)
            assert not screen.running
            # The sandbox that was starting is kept: the next question runs on it.
            gate.set()
            box.value = "Use 4 5 6 10 to make 24"
            box.focus()
            await pilot.press("enter")
            await wait_for(pilot, lambda: screen.finished is not None)
            assert screen.finished.status == "answered"
            assert len(calls) <= 2  # the kept one, and the one prepared for next time
    finally:
        gate.set()


@pytest.mark.slow
async def test_the_status_bar_time_is_the_runs_own_duration() -> None:
    app = ConductorApp(
        make_settings(), session_factory=scripted_factory(GAME24_TURNS, game24_expert)
    )
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        screen.query_one("#question").value = "Use 4 5 6 10 to make 24"
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.finished is not None)
        await pilot.pause(0.6)  # a tick of the clock after the end must not change it
        assert f"{screen.finished.duration_s:.1f} s" in status(app)


async def test_an_unreachable_model_is_said_in_full_and_the_demo_is_offered() -> None:
    from conductor_kernel.errors import ModelUnreachable

    why = (
        "Cannot reach the model server at http://127.0.0.1:9/v1: the connection was "
        "refused. Start the server (vLLM, Ollama, llama.cpp) or set OPENAI_BASE_URL to "
        "where it listens; nothing was retried. " + "More detail. " * 12 + "THE END."
    )

    def unreachable(messages):
        raise ModelUnreachable(why)

    app = ConductorApp(
        make_settings(model="openai:llama3"), session_factory=scripted_factory(unreachable)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.query_one("#question").value = "Use 4 5 6 10 to make 24"
        await pilot.press("enter")
        notice = screen.query_one("#notice")
        await wait_for(pilot, lambda: notice.has_class("problem"))
        shown = " ".join(str(notice.render()).split())
        assert " ".join(why.split()) in shown  # the whole message, not cut
        assert "F6" in shown
        assert notice.region.height >= 6 and notice.max_scroll_y == 0  # all of it visible
        await pilot.press("f6")
        assert app.settings.model == "demo"


async def test_the_first_screen_with_the_demo_shows_questions_it_answers() -> None:
    from experts.demo import HOW_TO_ASK

    app = ConductorApp(make_settings(), session_factory=scripted_factory(GAME24_TURNS))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        notice = app.screen.query_one("#notice")
        shown = " ".join(str(notice.render()).split())
        assert "Use 4 5 6 10 to make 24" in HOW_TO_ASK and " ".join(HOW_TO_ASK.split()) in shown
        assert notice.max_scroll_y == 0  # all of it visible at 80x24
