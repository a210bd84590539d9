"""The conductor TUI: solve live, audit runs, browse the notebook, watch a batch.

The app holds the user's settings and how to start a session; the screens render
events and read the stores. With no model key it runs the offline demo model and
says so; when no sandbox can run Python here it shows why and lets the user choose
the unsafe subprocess backend from the palette.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.console import RenderableType
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel

from conductor.config import Settings, load_settings
from conductor.methods import METHODS, label
from conductor.session import Session, build_session
from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.display import visible, visible_line
from experts.registry import DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL
from tui.commands import ConductorCommands, PaletteEntry
from tui.screens.batch import BatchScreen
from tui.screens.help import HelpScreen
from tui.screens.notebook import NotebookScreen
from tui.screens.run_detail import RunDetailScreen
from tui.screens.runs import RunsScreen
from tui.screens.solve import SolveScreen

SessionFactory = Callable[[Settings], Session]

MODEL_CHOICES = (
    "auto",
    "demo",
    f"anthropic:{DEFAULT_ANTHROPIC_MODEL}",
    f"openai:{DEFAULT_OPENAI_MODEL}",
)
SANDBOX_CHOICES = {
    "auto": "Docker, else bubblewrap",
    "docker": "a hardened container",
    "bwrap": "bubblewrap namespaces",
    "subprocess": "UNSAFE: code runs on this host as you",
}


class ConductorApp(App[None]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # also for subclasses elsewhere
    TITLE = "conductor"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {ConductorCommands}
    MODES: ClassVar[dict[str, Any]] = {
        "solve": SolveScreen,
        "runs": RunsScreen,
        "notebook": NotebookScreen,
        "batch": BatchScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "f1,question_mark",
            "help",
            "Help",
            id="app.help",
            tooltip="List every key of this screen and of the app, and what it does.",
        ),
        Binding(
            "f5",
            "switch_mode('solve')",
            "Solve",
            id="app.solve",
            tooltip="Ask a question and watch the run live.",
        ),
        Binding(
            "f2",
            "switch_mode('runs')",
            "Runs",
            id="app.runs",
            tooltip="Search, open and audit recorded runs.",
        ),
        Binding(
            "f3",
            "switch_mode('notebook')",
            "Notebook",
            id="app.notebook",
            tooltip="Task types and notes the conductor has learned.",
        ),
        Binding(
            "f4",
            "switch_mode('batch')",
            "Batch",
            id="app.batch",
            tooltip="Watch a running or finished batch.",
        ),
        Binding(
            "ctrl+q",
            "quit",
            "Quit",
            id="app.quit",
            tooltip="Leave the TUI; every run is saved as it goes.",
        ),
    ]

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        session_factory: SessionFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        start_mode: str = "solve",
        open_run: str | None = None,
        batch_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings or load_settings()
        self.session_factory = session_factory or (lambda s: build_session(s))
        self.clock = clock
        self.start_mode = start_mode
        self.run_to_open = open_run
        self.batch_dir = batch_dir
        self.sandbox_problem: str | None = None
        self.solve_screen: SolveScreen | None = None  # set when it mounts

    def on_mount(self) -> None:
        self.switch_mode(self.start_mode)
        if self.run_to_open:
            self.open_run(self.run_to_open)

    # -- starting runs --------------------------------------------------------
    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        """Close the app (ctrl+q, a stop signal): the run in flight is stopped first."""
        if self.solve_screen is not None:
            self.solve_screen.closing()
        super().exit(result, return_code, message)

    def stop_runs(self) -> bool:
        """Stop the run in flight, if any, and wait until its end is recorded (False if
        it was not within the wait: the next start repairs it, as after kill -9)."""
        screen = self.solve_screen
        return screen.stop_for_exit() if screen is not None else True

    def make_session(self) -> Session:
        """A session for the current settings; raises `UserFacingError` with what to do."""
        return self.session_factory(self.settings)

    def model_notice(self) -> str:
        from experts.registry import choose

        try:
            choice = choose(self.settings.model)
        except UserFacingError as exc:
            return str(exc)
        method = "" if self.settings.method == "meta" else f" Method: {self.settings.method}."
        if choice.provider == "demo":
            from experts.demo import HOW_TO_ASK

            return (
                f"Demo model ({choice.reason}): recorded Game of 24 and word-sorting sessions. "
                f"{HOW_TO_ASK} For a real model set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL "
                "(vLLM, Ollama, llama.cpp), or pick one with ctrl+p." + method
            )
        return (
            f"Model: {choice.provider} {choice.model or '(served default)'} ({choice.reason})."
            + method
        )

    def check_sandbox(self) -> None:
        """Probe the chosen sandbox (slow: call from a thread); keeps why it cannot run."""
        from sandbox.registry import why_unusable

        self.sandbox_problem = (
            why_unusable(self.settings.sandbox) if self.settings.run.python else None
        )

    # -- choices without a key (palette) --------------------------------------
    def palette_choices(self) -> list[PaletteEntry]:
        entries = [
            PaletteEntry(
                f"Model: {name}",
                "Use this meta model for the next run.",
                partial(self.set_model, name),
            )
            for name in MODEL_CHOICES
        ]
        entries.append(
            PaletteEntry(
                "Model: type a name and server URL…",
                "Any model (openai:NAME, anthropic:NAME) and an OpenAI-compatible server's "
                "URL; checked that it answers, then used and saved to the config file.",
                self.action_choose_model,
            )
        )
        entries += [
            PaletteEntry(f"Sandbox: {name}", why, partial(self.set_sandbox, name))
            for name, why in SANDBOX_CHOICES.items()
        ]
        entries += [
            PaletteEntry(
                f"Method: {name}",
                f"Ask the model as {label(name)} does in the next runs (docs/methods.md).",
                partial(self.set_method, name),
            )
            for name in METHODS
        ]
        entries += [
            PaletteEntry(
                "Notebook: default",
                "Recall from and learn into notebook.db.",
                lambda: self.set_notebook(""),
            ),
            PaletteEntry(
                "Notebook: off",
                "No recall and no learning for the next runs.",
                lambda: self.set_notebook(None),
            ),
        ]
        return entries

    def _settings_changed(self, message: str) -> None:
        self.notify(message, title="settings")
        if self.solve_screen is not None:
            self.solve_screen.refresh_notice()
            self.solve_screen.settings_changed()

    def set_model(
        self, name: str, *, saved: Path | None = None, not_saved: str | None = None
    ) -> None:
        """The meta model of the next runs; `saved`: the config file that now names it
        too, `not_saved`: why it could not be written there."""
        self.settings = self.settings.model_copy(update={"model": name})
        said = f"meta model: {name}"
        if saved is not None:
            said += f" (saved in {saved})"
        if not_saved is not None:
            said += f" (for this session only: {not_saved})"
        self._settings_changed(said)

    def action_choose_model(self) -> None:
        """Type a model name and a server's URL (tui/screens/model.py)."""
        from tui.screens.model import ModelScreen

        if not isinstance(self.screen, ModelScreen):
            self.push_screen(ModelScreen(self.settings.model))

    def set_method(self, name: str) -> None:
        """How the next runs ask the model (conductor/methods)."""
        self.settings = self.settings.model_copy(update={"method": name})
        self._settings_changed(f"method: {name} ({label(name)})")

    def set_sandbox(self, name: str) -> None:
        self.settings = self.settings.model_copy(update={"sandbox": name})
        self.sandbox_problem = None
        if name != "subprocess":
            self.run_worker(self.check_sandbox, thread=True, group="probe", exclusive=True)
        self._settings_changed(f"sandbox: {name}")

    def set_notebook(self, path: str | None) -> None:
        if path is None:
            self.settings = self.settings.model_copy(update={"recall": False, "learn": False})
            self._settings_changed("notebook off: no recall, no learning")
        else:
            self.settings = self.settings.model_copy(
                update={"notebook": path, "recall": True, "learn": True}
            )
            self._settings_changed(f"notebook: {path or 'default'}")

    # -- jumping between screens ----------------------------------------------
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification as plain text, control characters visible: they quote
        paths, errors and transcripts (a `[/q]` in a path would crash rich's markup)."""
        super().notify(
            visible(message),
            title=visible_line(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def open_run(self, run: str) -> None:
        """Show one run (id, prefix or transcript path) in the Runs screen's detail view."""
        try:
            path = RunDetailScreen.resolve(run)
        except UserFacingError as exc:
            self.notify(str(exc), severity="error", title="cannot open run")
            return
        if self.current_mode != "runs":
            self.switch_mode("runs")
        self.push_screen(RunDetailScreen(path))

    def open_note(self, note_id: str) -> None:
        self.switch_mode("notebook")
        show = getattr(self.screen, "show_note", None)
        if show is not None:
            show(note_id)
