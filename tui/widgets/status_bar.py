"""The Solve screen's status bar: state, round, tokens, cost and elapsed time."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    MetaTurnFinished,
    MetaTurnStarted,
    RunFinished,
    RunStarted,
)

# What a state is shown as: the phases before round 1 say what is being waited for.
STATE_LABELS = {"starting": "starting the sandbox…", "recall": "recalling notes…"}


class StatusBar(Static):
    """Tallies the events of the current run; elapsed time comes from the app's clock."""

    state: reactive[str] = reactive("ready")
    round: reactive[int] = reactive(0)
    tokens: reactive[int] = reactive(0)
    cost: reactive[float] = reactive(0.0)
    elapsed: reactive[float] = reactive(0.0)

    def __init__(self, clock: Callable[[], float], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.clock = clock
        self.started_at: float | None = None
        self.model = ""
        self.sandbox = ""

    def on_mount(self) -> None:
        self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        if self.started_at is not None and self.state in ("running", "starting", "recall"):
            self.elapsed = self.clock() - self.started_at

    def begin(self, state: str) -> None:
        """Enter was pressed: show it at once, before the run's first event."""
        self.state, self.round, self.tokens, self.cost = state, 0, 0, 0.0
        self.started_at, self.elapsed = self.clock(), 0.0

    def observe(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.state, self.round, self.tokens, self.cost = "recall", 0, 0, 0.0
            self.started_at, self.elapsed = self.clock(), 0.0
            self.model, self.sandbox = event.model, event.sandbox
            self.model += f" · {event.protocol}" if event.protocol else ""
        elif isinstance(event, MetaTurnStarted):
            self.state, self.round = "running", event.round
        elif isinstance(event, MetaTurnFinished | ExpertCallFinished):
            self.tokens += event.usage.total_tokens
            self.cost += event.usage.cost_usd
        elif isinstance(event, RunFinished):
            # The run's own duration, as its summary says (learning after it not counted).
            self.state, self.elapsed = event.status, event.duration_s

    def render(self) -> Text:
        text = Text()
        text.append(f" {STATE_LABELS.get(self.state, self.state)} ", style="reverse")
        text.append(f" round {self.round} · {self.tokens:,} tok · ${self.cost:.4f}")
        text.append(f" · {self.elapsed:.1f} s")
        if self.model:
            text.append(f" · {self.model}", style="dim")
        if self.sandbox:
            text.append(f" · {self.sandbox}", style="dim")
        return text
