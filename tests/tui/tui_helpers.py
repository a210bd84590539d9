"""Helpers for the TUI tests: scripted sessions, recorded runs, waiting in a Pilot.

Sessions are real (`conductor.session.Session` with the real loop, transcript writer,
runs index and subprocess sandbox); only the model is scripted or replayed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from conductor.config import Settings, load_settings
from conductor.session import Session
from conductor_kernel.events import Event
from experts.scripted import ScriptedModel
from sandbox.subprocess_backend import SubprocessSandbox
from transcripts.index import RunIndex

GAME24_TURNS = (
    'I will ask for a program, then have it checked.\n\nExpert Python:\n"""\n'
    "Print an expression over 4 5 6 10 that equals 24.\n"
    '"""',
    'Expert Arithmetic Checker:\n"""\nCheck that (4 + 5 * 6) - 10 equals 24 and uses each number once.\n"""',
    'Both agree.\n\n>> FINAL ANSWER:\n"""\n(4 + 5 * 6) - 10\n"""',
)


def game24_expert(name: str, instruction: str) -> str:
    if name == "Expert Python":
        return "```python\nprint('(4 + 5 * 6) - 10')\n```\nPlease run this code!"
    return "It equals 24: 5*6 = 30, 4 + 30 = 34, 34 - 10 = 24. Each number once: (4 + 5 * 6) - 10 is right."


SORT_TURNS = (
    'Expert Lexicographer:\n"""\nSort these words: pear apple fig\n"""',
    'Expert Reviewer:\n"""\nCheck the above list once more.\n"""',
    '>> FINAL ANSWER:\n"""\napple fig pear\n"""',
)


def sort_expert(name: str, instruction: str) -> str:
    return "apple fig pear" if "Lexicographer" in name else "Looks fine."


def make_settings(**changes: object) -> Settings:
    settings = load_settings({"model": "demo", "sandbox": "subprocess"})
    return settings.model_copy(update=changes) if changes else settings


def scripted_factory(
    meta: Sequence[str] | Callable, experts: Callable | Sequence[str] | None = None
) -> Callable[[Settings], Session]:
    """A session factory: a fresh scripted model per run, the real loop and stores."""

    def make(settings: Settings) -> Session:
        return Session(
            meta_model=ScriptedModel(meta, experts, chunk_chars=8),
            sandbox=SubprocessSandbox(),
            config=settings.run,
            index=RunIndex(),
        )

    return make


def record_run(question: str, meta: Sequence[str], experts: Callable | None = None, **kw) -> str:
    """Run one scripted question outside the TUI; returns its run id."""
    session = scripted_factory(meta, experts)(make_settings())
    run_id = ""
    try:
        for event in session.solve(question, **kw):
            run_id = event.run_id
    finally:
        assert session.sandbox is not None
        session.sandbox.close()
    return run_id


def fixed(events: list[Event], run_id: str = "20250101-120000-abc123") -> list[Event]:
    """Real events made deterministic: ids, times and durations fixed (for snapshots)."""
    ids: dict[str, str] = {}
    out = []
    for i, event in enumerate(events):
        ids[event.id] = f"e{i:04d}"
    for i, event in enumerate(events):
        event.id = ids[event.id]
        event.parent_id = ids.get(event.parent_id or "", event.parent_id)
        event.run_id = run_id
        event.ts = 1_735_732_800.0 + i
        for name in ("duration_s",):
            if hasattr(event, name):
                setattr(event, name, 0.5)
        result = getattr(event, "result", None)
        if result is not None:
            result.duration_s = 0.01
        out.append(event)
    return out


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Let the app run until `condition()` holds; fail with a clear message if it never does."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.05)
    await pilot.pause()


def home() -> Path:
    return Path(os.environ["CONDUCTOR_HOME"])
