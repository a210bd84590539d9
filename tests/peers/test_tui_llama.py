"""The TUI's Solve screen driven by Pilot against llama-server (SmolLM2), through the
real `build_session`: the turns stream in, the run ends recorded, and Esc during a
stream stops the server's generation."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from conftest import spec
from servers import LlamaServer

from conductor.config import load_settings
from record.home import runs_dir
from record.reader import read_transcript
from transcripts.index import RunIndex
from tui.app import ConductorApp
from tui.widgets.blocks import TurnBlock

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("peers")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings_for(llama: LlamaServer, provider: str, **run: object):
    # The text protocol, as the peers tests written for it pin (conftest.py's SHORT).
    values = {"python": False, "max_rounds": 2, "meta_max_tokens": 48, "protocol": "text", **run}
    return load_settings(
        {
            "model": spec(provider, "smollm2", llama),
            "sandbox": "subprocess",
            "recall": False,
            "learn": False,
            "run": values,
        }
    )


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.05)
    await pilot.pause()


async def ask(pilot, question: str) -> None:
    box = pilot.app.screen.query_one("#question")
    box.value = question
    box.focus()
    await pilot.press("enter")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_solve_screen_streams_a_real_model_to_a_recorded_end(
    provider: str, llama: LlamaServer
) -> None:
    app = ConductorApp(settings_for(llama, provider))
    async with app.run_test(size=(100, 30)) as pilot:
        await ask(pilot, "What is 2+2?")
        screen = app.screen
        await wait_for(pilot, lambda: screen.finished is not None)
        assert screen.finished.status == "limit" and screen.finished.rounds == 2
        turns = list(screen.query(TurnBlock))
        assert [t.round_no for t in turns] == [1, 2]
        transcript = read_transcript(runs_dir() / f"{screen.last_run_id}.jsonl")
        recorded = [e for e in transcript.events if e.kind == "meta_turn_finished"]
        # What the screen shows is what the server sent, streamed in pieces.
        assert [t.text.received for t in turns] == [e.text for e in recorded]
        assert screen.events_seen > len(transcript.events)
        assert all(0 < e.usage.output_tokens <= 48 and e.usage.known for e in recorded)
        status = str(screen.query_one("#status-bar").render())
        assert "limit" in status
    assert RunIndex().get(screen.last_run_id)["status"] == "limit"


async def test_escape_during_a_stream_stops_the_servers_generation(llama: LlamaServer) -> None:
    app = ConductorApp(settings_for(llama, "openai", meta_max_tokens=400, max_rounds=1))
    log_before = len(llama.log())
    predicted_before = llama.metric("tokens_predicted_total")
    async with app.run_test(size=(100, 30)) as pilot:
        await ask(pilot, "Write a very long story about a cat who sails around the world.")
        screen = app.screen
        await wait_for(
            pilot,
            lambda: (
                bool(screen.query(TurnBlock))
                and len(screen.query(TurnBlock).first().text.received) > 20
            ),
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.finished is not None)
        assert screen.finished.status == "interrupted"
        assert screen.finished.usage.calls == 1  # the partial turn's usage is kept
    assert llama.wait_idle(timeout=30)
    assert "cancel task" in llama.log()[log_before:]
    assert llama.metric("tokens_predicted_total") - predicted_before < 200
    transcript = read_transcript(runs_dir() / f"{screen.last_run_id}.jsonl")
    assert transcript.finished is not None and transcript.finished.status == "interrupted"
