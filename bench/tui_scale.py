"""Benchmark: the TUI with large inputs (issue 24).

* final status: a run's events posted to the Solve screen as a live run's are, and the
  time from its `RunFinished` being posted to the screen holding it (the final status
  drawn), for a 21 KB question (3,000 words) and for a run whose expert wrote 1 MB;
  baseline: the same for a run with a one-line question and a one-line expert reply.
* Runs screen: a runs.db of 10,000 runs (`BENCH_TUI_RUNS`); the time from opening the
  screen to its first rows drawn, and to scroll from the top to the end and back with
  `end`/`home` and 20 `pagedown`s (the last run is checked to be the one under the
  cursor after `end`). Baselines, measured in the same run: reading every run's row from
  SQLite (`list_runs(limit=None)`: what a list holding all of them would read first),
  reading what the screen reads to open (the count and one page), the app opening
  its Solve screen, and the same Runs screen open and scroll with 100 runs (what a
  virtual list should cost at any size: Textual drawing a screen per key).

Goals: final status under 2 s; Runs screen open and scroll under 0.5 s.
Prints a table, then one JSON object (the figures) as its last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tui"))

RUNS = int(os.environ.get("BENCH_TUI_RUNS", "10000"))


def run_events(question: str, expert_text: str) -> list:
    from conductor_kernel.events import (
        ExpertCallFinished,
        ExpertCallStarted,
        FinalAnswer,
        MetaTurnFinished,
        MetaTurnStarted,
        RunFinished,
        RunStarted,
    )

    run_id = "bench-scale"
    turn = MetaTurnStarted(run_id=run_id, round=1, user_message=question)
    call = ExpertCallStarted(
        run_id=run_id, parent_id=turn.id, round=1, name="Expert Writer", instruction="Write."
    )
    return [
        RunStarted(run_id=run_id, question=question, model="synthetic"),
        turn,
        MetaTurnFinished(run_id=run_id, parent_id=turn.id, round=1, text="Expert Writer: ..."),
        call,
        ExpertCallFinished(
            run_id=run_id, parent_id=call.id, name="Expert Writer", text=expert_text
        ),
        FinalAnswer(run_id=run_id, answer="done"),
        RunFinished(run_id=run_id, status="answered", final_answer="done", rounds=1),
    ]


async def final_status_s(question: str, expert_text: str) -> tuple[float, float]:
    """(from the run's end to its final status drawn, from its first event to that)."""
    from tui_helpers import make_settings

    from tui.app import ConductorApp
    from tui.screens.solve import SolveScreen

    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        *body, last = run_events(question, expert_text)
        for event in body:
            screen.post_message(SolveScreen.EventArrived(event))
        begun = time.perf_counter()
        await pilot.pause()
        while screen.events_seen < len(body):
            await pilot.pause(0.01)
        drawn = time.perf_counter()
        screen.post_message(SolveScreen.EventArrived(last))
        while screen.finished is None:
            await pilot.pause(0.005)
        await pilot.pause()  # the status drawn
        end = time.perf_counter()
        return end - drawn, end - begun


def fill_index(path: Path, runs: int) -> None:
    from conductor_kernel.events import RunFinished, RunScored, RunStarted
    from transcripts.index import RunIndex

    index = RunIndex(path)

    def fill() -> None:
        for n in range(runs):
            run_id = f"bench-{n:05d}"
            started = RunStarted(
                run_id=run_id, question=f"question {n} " * 8, task="bench", ts=1e9 + n
            )
            index.handle(started)
            index.handle(RunFinished(run_id=run_id, status="answered", final_answer=str(n)))
            index.handle(RunScored(run_id=run_id, correct=n % 3 == 0, scorer="exact"))

    index.all_at_once(fill)
    index.close()


async def runs_screen_s() -> tuple[float, float, int, bool]:
    """(open, scroll, runs the list holds, whether `end` reached the oldest run)."""
    from tui_helpers import make_settings

    from tui.app import ConductorApp

    start = time.perf_counter()
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        while not app.screen.query("#runs") or app.screen.query_one("#runs").row_count == 0:
            await pilot.pause(0.005)
        await pilot.pause()  # the first rows drawn
        opened = time.perf_counter() - start
        table = app.screen.query_one("#runs")
        shown = table.row_count
        start = time.perf_counter()
        await pilot.press("end")
        reached = table.cursor_key == "bench-00000"  # the oldest run, last in the list
        await pilot.press("home")
        for _ in range(20):
            await pilot.press("pagedown")
        await pilot.pause()
        scrolled = time.perf_counter() - start
    return opened, scrolled, shown, reached


async def app_open_s() -> None:
    from tui_helpers import make_settings

    from tui.app import ConductorApp

    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-tui-scale-"))
    os.environ["CONDUCTOR_HOME"] = str(home)
    words = " ".join(f"word{n:04d}" for n in range(3000))  # ~ 27 KB; cut to 21 KB
    question = "Sort these words: " + words[: 21 * 1024]
    big = ("x" * 99 + "\n") * (1024 * 1024 // 100)
    figures: dict[str, float] = {}
    for name, (q, reply) in {
        "baseline": ("1 2 3 4", "fine"),
        "21kb_question": (question, "fine"),
        "1mb_expert": ("1 2 3 4", big),
    }.items():
        end_to_status, whole = asyncio.run(final_status_s(q, reply))
        figures[f"final_status_{name}_s"] = end_to_status
        figures[f"whole_run_drawn_{name}_s"] = whole

    fill_index(home / "runs.db", RUNS)
    from transcripts.index import RunIndex
    from tui.widgets.paged_table import PAGE

    index = RunIndex(home / "runs.db")
    start = time.perf_counter()
    every = index.list_runs(limit=None)
    figures["read_all_rows_baseline_s"] = time.perf_counter() - start
    assert len(every) == RUNS
    start = time.perf_counter()
    index.count_runs()
    index.list_runs(limit=PAGE)
    figures["read_count_and_page_baseline_s"] = time.perf_counter() - start
    index.close()
    # Baseline for the screen: the same app opening the notebook-less Solve screen.
    start = time.perf_counter()
    asyncio.run(app_open_s())
    figures["app_open_baseline_s"] = time.perf_counter() - start
    small = home / "small"
    small.mkdir()
    fill_index(small / "runs.db", 100)
    os.environ["CONDUCTOR_HOME"] = str(small)
    opened, scrolled, _, _ = asyncio.run(runs_screen_s())
    figures["runs_screen_open_100_runs_baseline_s"] = opened
    figures["runs_screen_scroll_100_runs_baseline_s"] = scrolled
    os.environ["CONDUCTOR_HOME"] = str(home)
    opened, scrolled, shown, reached = asyncio.run(runs_screen_s())
    figures["runs_screen_open_s"] = opened
    figures["runs_screen_scroll_s"] = scrolled
    figures["runs_in_index"] = RUNS
    figures["runs_in_list"] = shown
    figures["last_run_reached"] = float(reached)

    print(f"{'measure':40} {'value':>10}")
    for name, value in figures.items():
        print(f"{name:40} {value:10.3f}")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
