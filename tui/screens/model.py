"""Choose any meta model by name, and optionally an OpenAI-compatible server's URL.

The palette offers a few fixed models; here the user types one (`openai:qwen2.5`,
`anthropic:claude-sonnet-4-6`) and a base URL. Before it is used it gets the checks a
run makes first (`conductor.session.check_model`: a known name, its key, a server that
answers), in a thread; a problem is shown here, in the checker's words, and nothing
changes. A model that passes is used for the next runs and saved to the config file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.display import visible
from tui.widgets.typed_input import TypedInput

if TYPE_CHECKING:
    from tui.app import ConductorApp

SPEC_HINT = "openai:qwen2.5 · anthropic:claude-sonnet-4-6 · demo · auto"
URL_HINT = "server URL (optional): http://127.0.0.1:8080/v1"


class ModelSpecError(ValueError):
    """What the user typed cannot name a model; the message says what to write."""


def model_spec(name: str, url: str) -> str:
    """The model setting for a typed name and base URL: `NAME@URL` when a URL is given
    (a bare name, or none, then means an OpenAI-compatible server's model)."""
    name, url = name.strip(), url.strip()
    if not url:
        if not name:
            raise ModelSpecError(f"Type a model, e.g. {SPEC_HINT}.")
        return name
    if not url.startswith(("http://", "https://")) or any(c.isspace() for c in url):
        raise ModelSpecError(
            f"The base URL must start with http:// or https:// and hold no spaces, "
            f"e.g. http://127.0.0.1:8080/v1 (not {url!r})."
        )
    if "@" in name:
        raise ModelSpecError("Give the server once: in the URL field, not after @ in the name.")
    if ":" not in name:
        name = f"openai:{name}"  # a server at a URL speaks the OpenAI protocol
    return f"{name}@{url.rstrip('/')}"


def split_spec(spec: str) -> tuple[str, str]:
    """The name and URL fields for a model setting (as typed, if it cannot be split)."""
    from experts.registry import split_endpoint

    try:
        name, url = split_endpoint(spec)
    except UserFacingError:
        return spec, ""
    return name, url or ""


class ModelScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="model.cancel",
            tooltip="Close without changing the model.",
        ),
    ]

    @dataclass
    class Checked(Message):
        spec: str
        problem: str | None = None  # why it cannot be used
        saved: Path | None = None
        not_saved: str | None = None  # why it was used but not saved

    app: ConductorApp

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current
        self.checking: str | None = None  # the spec being checked

    def compose(self) -> ComposeResult:
        name, url = split_spec(self.current)
        with Vertical(id="model-box"):
            yield Static("Meta model for the next runs", id="model-title")
            yield TypedInput(value=name, placeholder=SPEC_HINT, id="model-spec")
            yield TypedInput(value=url, placeholder=URL_HINT, id="model-url")
            yield Static(id="model-problem")
            yield Static(
                "Enter checks that the model answers, then uses it and saves it to the "
                "config file · Esc cancels",
                id="model-help",
            )

    def on_mount(self) -> None:
        self.query_one("#model-spec", Input).focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        try:
            spec = model_spec(
                self.query_one("#model-spec", Input).value,
                self.query_one("#model-url", Input).value,
            )
        except ModelSpecError as exc:
            self._say(str(exc))
            return
        self.checking = spec
        self._say(f"checking {spec} …", style="dim")
        self.check(spec)

    @work(thread=True, exclusive=True, group="model-check")
    def check(self, spec: str) -> None:
        from conductor.config.saving import save_setting
        from conductor.session import check_model

        try:
            check_model(spec, timeout=self.app.settings.model_timeout_s)
        except UserFacingError as exc:
            self.post_message(self.Checked(spec, problem=str(exc)))
            return
        try:
            saved = save_setting("model", spec)
        except (UserFacingError, OSError) as exc:
            self.post_message(self.Checked(spec, not_saved=str(exc)))
            return
        self.post_message(self.Checked(spec, saved=saved))

    def on_model_screen_checked(self, message: Checked) -> None:
        if message.spec != self.checking:
            return  # an older check, overtaken by a newer one
        self.checking = None
        if message.problem is not None:
            self._say(f"Not changed: {message.problem}")
            return
        self.app.set_model(message.spec, saved=message.saved, not_saved=message.not_saved)
        self.dismiss(message.spec)

    def _say(self, text: str, style: str = "bold red") -> None:
        self.query_one("#model-problem", Static).update(Text(visible(text), style=style))

    def action_cancel(self) -> None:
        self.dismiss(None)
