"""Does learning make the next run cheaper? The demo model on generated Game of 24
puzzles of one kind ("Use a b c d to make 24", solvable, fixed seed), run in order twice:
learning on (recall and learning, a fresh notebook) and learning off (no notebook, the
baseline). Per arm: the scorer's accuracy, rounds and tokens of the first puzzle and of
the later ones, expert calls, and learning's own model calls. The programs run in the
subprocess sandbox (the demo's own code; rounds and tokens do not depend on the backend).
"""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any

SEED = 2026


def puzzles(count: int, seed: int = SEED) -> list[tuple[int, ...]]:
    """`count` distinct solvable puzzles of four numbers from 1 to 13."""
    from experts.demo import game24_solutions

    rng = random.Random(seed)
    found: list[tuple[int, ...]] = []
    while len(found) < count:
        numbers = tuple(rng.randint(1, 13) for _ in range(4))
        if numbers not in found and next(game24_solutions(numbers), None) is not None:
            found.append(numbers)
    return found


def _arm(workdir: Path, asked: list[tuple[int, ...]], learning: bool) -> dict[str, Any]:
    from conductor.scoring.notebook import open_notebook
    from conductor.session import Session
    from conductor.session.notebook_hooks import NotebookHooks
    from conductor_kernel.events import NotesWritten, RunFinished, RunScored
    from conductor_kernel.limits.run_config import RunConfig
    from experts.demo import demo_model
    from sandbox.subprocess_backend import SubprocessSandbox

    model = demo_model()
    sandbox = SubprocessSandbox()
    name = "on" if learning else "off"
    session = Session(
        meta_model=model,
        expert_model=model,
        sandbox=sandbox,
        config=RunConfig(max_rounds=6, python_timeout_s=30),
        runs_path=workdir / f"demo-ab-{name}" / "runs",
    )
    book = None
    if learning:
        book = open_notebook(workdir / f"demo-ab-{name}" / "notebook.db")
        NotebookHooks(book, model=model).attach(session)
    rows = []
    try:
        for numbers in asked:
            events = list(session.solve("Use {} {} {} {} to make 24".format(*numbers)))
            finished = next(e for e in events if isinstance(e, RunFinished))
            scored = next((e for e in events if isinstance(e, RunScored)), None)
            learned = [e for e in events if isinstance(e, NotesWritten)]
            rows.append(
                {
                    "rounds": finished.rounds,
                    "tokens": finished.usage.total_tokens,
                    "expert_calls": finished.expert_calls,
                    "correct": bool(scored is not None and scored.correct),
                    "learning_calls": sum(e.usage.calls for e in learned),
                }
            )
    finally:
        sandbox.close()
        if book is not None:
            book.close()
    later = rows[1:] or rows
    return {
        "puzzles": len(rows),
        "correct": sum(r["correct"] for r in rows),
        "rounds_first": rows[0]["rounds"],
        "rounds_later": statistics.fmean(r["rounds"] for r in later),
        "tokens_first": rows[0]["tokens"],
        "tokens_later": statistics.fmean(r["tokens"] for r in later),
        "tokens_total": sum(r["tokens"] for r in rows),
        "expert_calls": sum(r["expert_calls"] for r in rows),
        "learning_calls": sum(r["learning_calls"] for r in rows),
    }


def demo_ab(workdir: Path, count: int, seed: int = SEED) -> dict[str, Any]:
    asked = puzzles(count, seed)
    return {
        "seed": seed,
        "puzzles": [" ".join(map(str, p)) for p in asked],
        "on": _arm(workdir, asked, learning=True),
        "off": _arm(workdir, asked, learning=False),
    }
