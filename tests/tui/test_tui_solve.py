"""Pilot tests of the Solve screen: live runs streamed to an answer, interrupts, choices."""

from __future__ import annotations

import threading

import pytest
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, scripted_factory, wait_for

from conductor.session import Session
from conductor_kernel.events import TextDelta
from record.home import runs_dir
from record.reader import read_transcript
from sandbox.subprocess_backend import SubprocessSandbox
from transcripts.index import RunIndex
from tui.app import ConductorApp
from tui.widgets.blocks import BoxedText, ExpertBlock, SandboxBlock, TurnBlock

pytestmark = pytest.mark.anyio


async def ask(pilot, question: str) -> None:
    box = pilot.app.screen.query_one("#question")
    box.value = question
    box.focus()
    await pilot.press("enter")


async def test_a_full_solve_streams_to_the_final_answer() -> None:
    app = ConductorApp(
        make_settings(), session_factory=scripted_factory(GAME24_TURNS, game24_expert)
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await ask(pilot, "Use 4 5 6 10 to make 24")
        screen = app.screen
        await wait_for(pilot, lambda: screen.finished is not None)

        assert screen.finished.status == "answered"
        assert [t.round_no for t in screen.query(TurnBlock)] == [1, 2, 3]
        assert [str(b.title).split(" · ")[0] for b in screen.query(ExpertBlock)] == [
            "Expert Python",
            "Expert Arithmetic Checker",
        ]
        sandbox = screen.query_one(SandboxBlock)
        assert "exit 0" in str(sandbox.border_title)
        final = screen.query_one(".final", BoxedText)
        assert "(4 + 5 * 6) - 10" in str(final.render())
        # The text was streamed in pieces (text deltas) and then settled to the whole turn.
        transcript = read_transcript(runs_dir() / f"{screen.last_run_id}.jsonl")
        assert screen.events_seen > len(transcript.events)
        assert screen.query(TurnBlock).last().text.received == GAME24_TURNS[-1]
        assert (
            transcript.finished is not None
            and transcript.finished.final_answer == "(4 + 5 * 6) - 10"
        )
        status = str(screen.query_one("#status-bar").render())
        assert "answered" in status and "round 3" in status


async def test_text_arrives_in_deltas_as_the_model_streams() -> None:
    arrived: list[str] = []

    def hook(message) -> None:
        event = getattr(message, "event", None)
        if isinstance(event, TextDelta):
            arrived.append(event.text)

    app = ConductorApp(make_settings(), session_factory=scripted_factory(GAME24_TURNS[-1:]))
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await ask(pilot, "anything")
        await wait_for(pilot, lambda: app.screen.finished is not None)
    assert len(arrived) == -(-len(GAME24_TURNS[-1]) // 8)  # 8-character chunks
    assert "".join(arrived) == GAME24_TURNS[-1]


async def test_escape_interrupts_and_the_transcript_keeps_what_happened() -> None:
    gate = threading.Event()

    def slow_meta(messages):
        gate.wait(20)  # held until the test lets go (after the interrupt)
        return GAME24_TURNS[-1]

    app = ConductorApp(make_settings(), session_factory=scripted_factory(slow_meta))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await ask(pilot, "a question that takes long")
            screen = app.screen
            await wait_for(pilot, lambda: len(screen.query(TurnBlock)) == 1)
            await pilot.press("escape")
            await wait_for(pilot, lambda: screen.finished is not None)
            assert screen.finished.status == "interrupted"
            assert "interrupted" in str(screen.query_one("#status-bar").render())
    finally:
        gate.set()
    transcript = read_transcript(runs_dir() / f"{screen.last_run_id}.jsonl")
    kinds = [e.kind for e in transcript.events]
    assert kinds[0] == "run_started" and "meta_turn_started" in kinds
    assert transcript.finished.status == "interrupted"
    assert RunIndex().get(screen.last_run_id)["status"] == "interrupted"


async def test_quitting_during_a_run_ends_it_interrupted_before_the_app_is_gone() -> None:
    gate = threading.Event()

    def slow_meta(messages):
        gate.wait(60)  # a model still generating when the user quits
        return GAME24_TURNS[-1]

    app = ConductorApp(make_settings(), session_factory=scripted_factory(slow_meta))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await ask(pilot, "a question that takes long")
            screen = app.screen
            await wait_for(pilot, lambda: len(screen.query(TurnBlock)) == 1)
            await pilot.press("ctrl+q")
        # The app has gone; the run it had in flight is already recorded as stopped.
        transcript = read_transcript(runs_dir() / f"{screen.last_run_id}.jsonl")
        assert transcript.finished is not None and transcript.finished.status == "interrupted"
        assert RunIndex().get(screen.last_run_id)["status"] == "interrupted"
    finally:
        gate.set()


async def test_quitting_while_the_session_starts_records_nothing_and_waits_for_nothing() -> None:
    started = threading.Event()
    release = threading.Event()
    make = scripted_factory(GAME24_TURNS[-1:])

    def slow_start(settings):
        started.set()
        release.wait(60)  # a sandbox that takes long to start
        return make(settings)

    app = ConductorApp(make_settings(), session_factory=slow_start)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await ask(pilot, "asked while the sandbox starts")
            await wait_for(pilot, lambda: started.is_set())
            await pilot.press("ctrl+q")
        assert app.stop_runs(), "leaving waited for a run that never began"
    finally:
        release.set()
    runs = runs_dir()
    assert not runs.exists() or not list(runs.glob("*.jsonl"))  # no run began


@pytest.mark.slow
async def test_a_replayed_published_run_streams_to_its_recorded_answer(shared_dir) -> None:
    from conductor.replay.runner import question_of, replay_config
    from experts.replay import ReplayModel
    from record.published import read_published

    record = read_published(shared_dir / "transcripts/with-python/GameOf24.jsonl", limit=1).records[
        0
    ]

    def factory(settings):
        model = ReplayModel(record)
        return Session(
            model, model, SubprocessSandbox(), replay_config(record.notice_round), RunIndex()
        )

    app = ConductorApp(make_settings(), session_factory=factory)
    async with app.run_test(size=(100, 30)) as pilot:
        await ask(pilot, question_of(record))
        await wait_for(pilot, lambda: app.screen.finished is not None, timeout=30)
        finished = app.screen.finished
        assert finished.status == "answered"
        assert finished.final_answer.strip() == record.final_answer.strip()
        assert len(app.screen.query(TurnBlock)) == record.rounds


@pytest.mark.slow
async def test_no_sandbox_shows_why_and_subprocess_can_be_picked_from_the_palette(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sandbox.registry

    monkeypatch.setattr(sandbox.registry, "AUTO_ORDER", ())  # as on a host with neither
    app = ConductorApp(make_settings(sandbox="auto"))  # the real build_session
    async with app.run_test(size=(100, 30)) as pilot:
        notice = app.screen.query_one("#notice")
        await wait_for(pilot, lambda: notice.has_class("problem"))
        assert "No sandbox can run Python here" in str(notice.render())
        assert "Demo model" in str(notice.render())

        await pilot.press("ctrl+p")
        await pilot.press(*"Sandbox: subprocess")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.settings.sandbox == "subprocess")
        await wait_for(pilot, lambda: not notice.has_class("problem"))

        await ask(pilot, "Use 4 5 6 10 to make 24")  # the offline demo model, for real
        await wait_for(pilot, lambda: app.screen.finished is not None, timeout=30)
        assert app.screen.finished.status == "answered"
        assert app.screen.query(SandboxBlock)


async def test_a_system_failure_is_shown_not_raised() -> None:
    def broken(settings):
        from conductor_kernel.interfaces import SandboxUnavailable

        raise SandboxUnavailable("sandbox 'docker' cannot run here: daemon down; start it.")

    app = ConductorApp(make_settings(), session_factory=broken)
    async with app.run_test(size=(100, 30)) as pilot:
        await ask(pilot, "anything")
        notice = app.screen.query_one("#notice")
        await wait_for(pilot, lambda: "daemon down" in str(notice.render()))
        assert app.screen.running is False


async def pick(pilot, entry: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.press(*entry)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await pilot.pause()


@pytest.mark.slow
async def test_model_and_notebook_are_chosen_from_the_palette() -> None:
    app = ConductorApp(make_settings(model="auto"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pick(pilot, "Notebook: off")
        assert (app.settings.recall, app.settings.learn) == (False, False)
        await pick(pilot, "Model: anthropic:claude")
        assert app.settings.model == "anthropic:claude-sonnet-4-6"
        assert "anthropic claude-sonnet-4-6" in str(app.screen.query_one("#notice").render())
        await pick(pilot, "Notebook: default")
        assert (app.settings.recall, app.settings.learn) == (True, True)
