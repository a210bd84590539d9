"""Solve: type a question, watch the run live, Esc to interrupt.

`Session.solve` is a blocking generator, so it is iterated in a thread of its own; each
event is posted to the screen as a message and drawn by the shared renderers in order.

Leaving the app (ctrl+q, a stop signal, a closed terminal) stops the run in flight
first: it ends `interrupted`, recorded, before the process goes. The thread is a daemon,
not a Textual worker, whose threads the event loop joins on the way out: a run (or its
learning) left going kept the process alive, unseen, until it ended by itself.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widget import MountError
from textual.widgets import Collapsible, Input, Static

from conductor_kernel.errors import ModelUnreachable, UserFacingError
from conductor_kernel.events import Event, RunFinished, RunStarted
from tui.widgets.key_bar import KeyBar
from tui.widgets.run_view import RunView
from tui.widgets.status_bar import StatusBar
from tui.widgets.typed_input import TypedInput

OFFER_DEMO = "Press F6 to use the offline demo model instead, then Enter to ask again."
# On the way out, how long a stopped run may take to record its end. A cancel ends a run
# within a fraction of a second; only a hung sink (a locked runs.db) waits this long.
STOP_WAIT_S = 30.0


@dataclass
class _Prepared:
    """A session being started in a thread: `done` is set when `session` or `error` is."""

    session: Session | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def discard(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None


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
            "f6",
            "use_demo",
            "Demo",
            id="solve.demo",
            show=False,
            tooltip="Use the offline demo model for the next runs (no key or server needed).",
        ),
        Binding(
            "pageup",
            "scroll_live(-1)",
            "Page up",
            id="solve.page_up",
            tooltip="Scroll the run up a page, even while typing a question.",
            show=False,
        ),
        Binding(
            "pagedown",
            "scroll_live(1)",
            "Page down",
            id="solve.page_down",
            tooltip="Scroll the run down a page, even while typing a question.",
            show=False,
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
        offer_demo: bool = False  # the model could not be reached: the demo can run

    app: ConductorApp

    def __init__(self) -> None:
        super().__init__()
        self.session: Session | None = None
        self.running = False
        self.last_run_id: str | None = None
        self.finished: RunFinished | None = None
        self.events_seen = 0
        # The next run's session, started ahead of the question (the sandbox takes
        # seconds to start): set by a thread, taken by the next run.
        self._next = _Prepared()
        self._stop_before_start = threading.Event()
        self._leaving = False
        # Set while no run is in flight, and once a run's end is recorded.
        self._recorded = threading.Event()
        self._recorded.set()

    def compose(self) -> ComposeResult:
        yield Static(id="notice")
        yield TypedInput(placeholder="Ask a question and press Enter", id="question")
        yield RunView(follow=True, id="live")
        yield StatusBar(self.app.clock, id="status-bar")
        yield KeyBar()

    def on_mount(self) -> None:
        self.refresh_notice()
        for question in self.query("#question").results(Input):
            question.focus()
        self.probe_sandbox()
        self.app.solve_screen = self
        self.prepare_session()

    # -- the next run's session, started ahead --------------------------------
    @work(thread=True, group="prepare")
    def prepare_session(self) -> None:
        prepared = self._next
        try:
            prepared.session = self.app.make_session()
        except UserFacingError as exc:
            prepared.error = str(exc)
        except Exception as exc:  # shown when a run needs it, never a crash here
            prepared.error = f"The session could not start: {type(exc).__name__}: {exc}"
        finally:
            prepared.done.set()
            if prepared is not self._next or self._leaving:
                prepared.discard()  # the settings changed meanwhile, or the app is closing

    def settings_changed(self) -> None:
        """The user picked another model, sandbox or notebook: start a session for it."""
        if self.running:
            return  # the next one is prepared when this run ends
        old, self._next = self._next, _Prepared()
        if old.done.is_set():
            old.discard()
        self.prepare_session()

    def on_unmount(self) -> None:
        self.stop_for_exit()
        if self._next.done.is_set():
            self._next.discard()

    def closing(self) -> None:
        """The app is closing: stop the run in flight (it ends `interrupted`) and draw
        nothing more."""
        self._leaving = True
        self._stop_before_start.set()
        session = self.session
        if session is not None:
            session.cancel()

    def stop_for_exit(self, wait_s: float = STOP_WAIT_S) -> bool:
        """Stop the run in flight and wait until its end is recorded (True), or until
        `wait_s` has passed. Learning after the end is not waited for: it is dropped
        with the process, like a Ctrl-C during learning in `conductor solve`."""
        self.closing()
        return self._recorded.wait(wait_s)

    @work(thread=True, exclusive=True, group="probe")
    def probe_sandbox(self) -> None:
        self.app.check_sandbox()
        self.app.call_from_thread(self.refresh_notice)

    def refresh_notice(self) -> None:
        lines = [self.app.model_notice()]
        if self.app.sandbox_problem:
            lines.append(self.app.sandbox_problem)
        # The screen may be gone already (quitting at start-up): nothing to update then.
        for notice in self.query("#notice").results(Static):
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
        self._stop_before_start.clear()
        bar = self.query_one("#status-bar", StatusBar)
        bar.begin("starting" if self._next.session is None else "running")
        self.run_question(question)

    def run_question(self, question: str) -> None:
        self._recorded.clear()  # here, not in the thread: leaving now waits for it
        threading.Thread(
            target=self._run_question, args=(question,), name="conductor-solve", daemon=True
        ).start()

    def _run_question(self, question: str) -> None:
        try:
            self._solve(question)
        finally:
            self._recorded.set()

    def _solve(self, question: str) -> None:
        prepared = self._next
        while not prepared.done.wait(0.05):
            if self._stop_before_start.is_set():
                return  # Esc while the sandbox was starting: it is kept for the next run
        if self._stop_before_start.is_set():
            return
        self._next = _Prepared()
        if prepared.session is None:
            self.post_message(self.Problem(prepared.error or "The session could not start."))
            self._prepare_next()
            return
        session = prepared.session
        self.session = session
        if self._leaving:  # the app began to close while the session was handed over
            session.cancel()
        try:
            for event in session.solve(question):
                if isinstance(event, RunFinished):
                    self._recorded.set()  # written to the transcript and runs.db
                self.post_message(self.EventArrived(event))
        except ModelUnreachable as exc:
            self.post_message(self.Problem(str(exc), offer_demo=True))
        except UserFacingError as exc:
            self.post_message(self.Problem(str(exc)))
        except Exception as exc:  # a crash must not take the TUI with it
            self.post_message(
                self.Problem(f"The run failed ({exc}); its transcript keeps what happened.")
            )
        finally:
            self._recorded.set()  # whatever ended it, nothing more will be recorded
            # Learning runs after RunFinished: a new run may have started meanwhile.
            if self.session is session:
                self.session = None
            session.close()
            if not self._stop_before_start.is_set():
                self._prepare_next()

    def _prepare_next(self) -> None:
        """Start the next run's session from the run's thread (the app may be closing)."""
        try:
            self.app.call_from_thread(self.prepare_session)
        except RuntimeError:
            pass  # the app's loop has stopped: there is no next run

    async def on_solve_screen_event_arrived(self, message: EventArrived) -> None:
        if self._leaving:
            return  # the app is closing: its widgets are going, the transcript has it all
        event = message.event
        view = self.query_one("#live", RunView)
        try:
            if isinstance(event, RunStarted):
                await view.clear()
                self.last_run_id = event.run_id
            self.events_seen += 1
            self.query_one("#status-bar", StatusBar).observe(event)
            await view.add(event)
        except MountError:
            if not self._leaving:
                raise
            return  # the app began to close (a signal) while this event was drawn
        if isinstance(event, RunFinished):
            self.running, self.finished = False, event

    def on_solve_screen_problem(self, message: Problem) -> None:
        self.running = False
        self.query_one("#status-bar", StatusBar).state = "stopped"
        notice = self.query_one("#notice", Static)
        text = message.text
        if message.offer_demo and self.app.settings.model != "demo":
            text += "\n" + OFFER_DEMO
        notice.update(text)
        notice.add_class("problem")

    # -- actions ---------------------------------------------------------------
    def action_interrupt(self) -> None:
        bar = self.query_one("#status-bar", StatusBar)
        if self.session is not None and self.running:
            self.session.cancel()
            bar.state = "interrupting"
        elif self.running:
            # Still starting the sandbox: stop now; the next question reuses it.
            self._stop_before_start.set()
            self.running = False
            bar.state = "stopped"
            self.notify("Stopped before the run began.")
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

    def action_scroll_live(self, pages: int) -> None:
        live = self.query_one("#live", RunView)
        if pages < 0:
            live.scroll_page_up(animate=False)
        else:
            live.scroll_page_down(animate=False)

    def action_use_demo(self) -> None:
        self.app.set_model("demo")

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
