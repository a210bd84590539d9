"""Solve: type a question, watch the run live, Esc to interrupt.

`Session.solve` is a blocking generator, so it is iterated in a thread worker; each
event is posted to the screen as a message and drawn by the shared renderers in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Collapsible, Footer, Input, Static

from conductor.errors import UserFacingError
from conductor.events import Event, RunFinished, RunStarted
from tui.widgets.run_view import RunView
from tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from conductor.session import Session
    from tui.app import ConductorApp


class SolveScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "interrupt",
            "Interrupt",
            id="solve.interrupt",
            tooltip="Stop the run at its next step; the transcript keeps what happened.",
        ),
        Binding(
            "ctrl+n",
            "new_question",
            "New",
            id="solve.new",
            tooltip="Clear the view and type a new question.",
        ),
        Binding(
            "ctrl+t",
            "toggle_experts",
            "Experts",
            id="solve.toggle_experts",
            tooltip="Expand or collapse every expert call.",
        ),
        Binding(
            "ctrl+o",
            "open_in_runs",
            "Audit",
            id="solve.open_in_runs",
            tooltip="Open the last run in the Runs screen to audit it.",
        ),
    ]

    @dataclass
    class EventArrived(Message, bubble=False):
        event: Event

    @dataclass
    class Problem(Message, bubble=False):
        text: str

    app: ConductorApp  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.session: Session | None = None
        self.running = False
        self.last_run_id: str | None = None
        self.finished: RunFinished | None = None
        self.events_seen = 0

    def compose(self) -> ComposeResult:
        yield Static(id="notice")
        yield Input(placeholder="Ask a question and press Enter", id="question")
        yield RunView(follow=True, id="live")
        yield StatusBar(self.app.clock, id="status-bar")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_notice()
        self.query_one("#question", Input).focus()
        self.probe_sandbox()

    @work(thread=True, exclusive=True, group="probe")
    def probe_sandbox(self) -> None:
        self.app.check_sandbox()
        self.app.call_from_thread(self.refresh_notice)

    def refresh_notice(self) -> None:
        lines = [self.app.model_notice()]
        if self.app.sandbox_problem:
            lines.append(self.app.sandbox_problem)
        notice = self.query_one("#notice", Static)
        notice.update("\n".join(lines))
        notice.set_class(bool(self.app.sandbox_problem), "problem")

    # -- running -------------------------------------------------------------
    @on(Input.Submitted, "#question")
    def submit(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        if self.running:
            self.notify("A run is going: press Esc to interrupt it first.", severity="warning")
            return
        self.running, self.finished = True, None
        self.run_question(question)

    @work(thread=True, exclusive=True, group="solve")
    def run_question(self, question: str) -> None:
        try:
            session = self.app.make_session()
        except UserFacingError as exc:
            self.post_message(self.Problem(str(exc)))
            return
        self.session = session
        try:
            for event in session.solve(question):
                self.post_message(self.EventArrived(event))
        except UserFacingError as exc:
            self.post_message(self.Problem(str(exc)))
        except Exception as exc:  # a crash must not take the TUI with it
            self.post_message(
                self.Problem(f"The run failed ({exc}); its transcript keeps what happened.")
            )
        finally:
            # Learning runs after RunFinished: a new run may have started meanwhile.
            if self.session is session:
                self.session = None
            if session.sandbox is not None:
                session.sandbox.close()

    async def on_solve_screen_event_arrived(self, message: EventArrived) -> None:
        event = message.event
        view = self.query_one("#live", RunView)
        if isinstance(event, RunStarted):
            await view.clear()
            self.last_run_id = event.run_id
        self.events_seen += 1
        self.query_one("#status-bar", StatusBar).observe(event)
        await view.add(event)
        if isinstance(event, RunFinished):
            self.running, self.finished = False, event

    def on_solve_screen_problem(self, message: Problem) -> None:
        self.running = False
        self.query_one("#status-bar", StatusBar).state = "stopped"
        notice = self.query_one("#notice", Static)
        notice.update(message.text)
        notice.add_class("problem")

    # -- actions ---------------------------------------------------------------
    def action_interrupt(self) -> None:
        if self.session is not None and self.running:
            self.session.cancel()
            self.query_one("#status-bar", StatusBar).state = "interrupting"
        else:
            self.notify("Nothing is running.")

    async def action_new_question(self) -> None:
        if self.running:
            self.notify("A run is going: press Esc to interrupt it first.", severity="warning")
            return
        await self.query_one("#live", RunView).clear()
        question = self.query_one("#question", Input)
        question.value = ""
        question.focus()

    def action_toggle_experts(self) -> None:
        blocks = list(self.query(Collapsible))
        expand = any(b.collapsed for b in blocks)
        for block in blocks:
            block.collapsed = not expand

    def action_open_in_runs(self) -> None:
        if self.last_run_id is None:
            self.notify("No run yet: ask a question first.")
            return
        self.app.open_run(self.last_run_id)
