"""One run end to end: build the parts from settings, drive the loop, feed every sink.

The CLI, the batch runner and the TUI all start runs through `Session`, so a run is
recorded the same way whoever started it. The transcript is written event by event and
closed in `finally`: an interrupted or crashed run keeps everything it did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor.config import RunConfig, Settings, runs_dir
from conductor.events import Event, Recall, RunFinished, RunStarted
from conductor.interfaces import ChatModel, EventSink, Sandbox
from conductor.loop import Conductor
from transcripts.index import RunIndex
from transcripts.writer import TranscriptWriter

log = logging.getLogger("conductor")


@dataclass
class Session:
    """Everything a run needs; `solve` runs one question and yields its events."""

    meta_model: ChatModel
    expert_model: ChatModel | None = None
    sandbox: Sandbox | None = None
    config: RunConfig = field(default_factory=RunConfig)
    index: RunIndex | None = None
    runs_path: Path | None = None
    recall: Callable[[str], Recall | None] | None = None
    # Called with the finished run's events (the notebook's write path hooks in here).
    after_run: list[Callable[[list[Event]], list[Event]]] = field(default_factory=list)
    conductor: Conductor | None = None

    def __post_init__(self) -> None:
        self.conductor = Conductor(
            self.meta_model, self.expert_model, self.sandbox, self.config, recall=self.recall
        )

    def cancel(self) -> None:
        assert self.conductor is not None
        self.conductor.cancel()

    def solve(
        self,
        question: str,
        *,
        sinks: tuple[EventSink, ...] = (),
        run_id: str | None = None,
        task: str = "",
        target: str | None = None,
        tags: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        assert self.conductor is not None
        directory = self.runs_path or runs_dir()
        writer: TranscriptWriter | None = None
        events: list[Event] = []
        try:
            for event in self.conductor.run(
                question, run_id=run_id, task=task, target=target, tags=tags
            ):
                if isinstance(event, RunStarted):
                    writer = TranscriptWriter(directory / f"{event.run_id}.jsonl")
                    if self.index is not None:
                        self.index.attach(event.run_id, writer.path)
                extra = self._after([*events, event]) if isinstance(event, RunFinished) else []
                for item in [event, *extra]:
                    self._deliver(item, writer, sinks)
                    if not item.transient:
                        events.append(item)
                    yield item
        finally:
            if writer is not None:
                writer.close()

    def _after(self, events: list[Event]) -> list[Event]:
        produced: list[Event] = []
        for hook in self.after_run:
            try:
                produced.extend(hook(events))
            except Exception:  # learning must never cost the user the run
                log.exception("an after-run hook failed; the run itself is saved")
        return produced

    def _deliver(
        self, event: Event, writer: TranscriptWriter | None, sinks: tuple[EventSink, ...]
    ) -> None:
        if writer is not None:
            writer.handle(event)
        if self.index is not None and not event.transient:
            self.index.handle(event)
        for sink in sinks:
            sink.handle(event)


def build_session(
    settings: Settings, *, sandbox: Sandbox | None = None, index: bool = True
) -> Session:
    """A session from user settings: models by name, the sandbox, the runs index."""
    from experts.registry import get_model
    from sandbox.registry import open_sandbox

    meta = get_model(settings.model)
    expert = get_model(settings.expert_model) if settings.expert_model else meta
    if sandbox is None and settings.run.python:
        sandbox = open_sandbox(settings.sandbox)
    session = Session(
        meta_model=meta,
        expert_model=expert,
        sandbox=sandbox,
        config=settings.run,
        index=RunIndex() if index else None,
    )
    if settings.recall or settings.learn:
        # The notebook: recall before round 1, distill after every run.
        from notebook.hooks import NotebookHooks

        hooks = NotebookHooks.open(settings.notebook or None, model=meta)
        hooks.attach(session, recall=settings.recall, learn=settings.learn)
    return session
