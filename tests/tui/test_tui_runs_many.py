"""The Runs screen with thousands of runs (issue 24): the list is virtual (it reads only
the pages in view), so nothing caps it: the last run is reached with End, every run is
listed once in order across pages (ties in time included), and the filters, sort and
search still narrow the whole set. The runs are generated at random (seeded), and what
the screen should hold is computed here from the same list, not from runs.db."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from textual.widgets import Input, Select
from tui_helpers import make_settings, wait_for

from conductor_kernel.events import RunFinished, RunScored, RunStarted
from transcripts.index import RunIndex
from tui.app import ConductorApp
from tui.widgets.paged_table import PAGE

pytestmark = pytest.mark.anyio
SLOW = pytest.mark.slow  # each fills runs.db anew: one case of each kind runs in `make test`

RUNS = 2500
STATUSES = ("answered", "declined", "error", "no_answer")
TASKS = ("GameOf24", "word_sorting", "MGSM_ES")
MODELS = ("demo", "openai:qwen2.5", "anthropic:claude")


@dataclass(frozen=True)
class Made:
    run_id: str
    ts: float
    status: str
    correct: bool | None
    task: str
    model: str
    question: str


def make_runs(seed: int) -> list[Made]:
    rng = random.Random(seed)
    made = []
    for n in range(RUNS):
        made.append(
            Made(
                run_id=f"run-{rng.randrange(10**9):09d}-{n:05d}",
                ts=1.7e9 + rng.randrange(RUNS // 3),  # many runs share a second
                status=rng.choice(STATUSES),
                correct=rng.choice((True, False, None)),
                task=rng.choice(TASKS),
                model=rng.choice(MODELS),
                question=f"question {n}" + (" needle" if rng.random() < 0.1 else ""),
            )
        )
    return made


def index_runs(made: list[Made]) -> None:
    index = RunIndex()

    def fill() -> None:
        for run in made:
            index.handle(
                RunStarted(
                    run_id=run.run_id,
                    ts=run.ts,
                    question=run.question,
                    task=run.task,
                    model=run.model,
                )
            )
            index.handle(RunFinished(run_id=run.run_id, status=run.status, final_answer="x"))
            if run.correct is not None:
                index.handle(RunScored(run_id=run.run_id, correct=run.correct, scorer="exact"))

    index.all_at_once(fill)
    index.close()


def newest_first(runs: list[Made]) -> list[str]:
    """The screen's order: newest first, ties by run id."""
    ordered = sorted(runs, key=lambda r: r.run_id)
    return [r.run_id for r in sorted(ordered, key=lambda r: r.ts, reverse=True)]


@pytest.fixture
def many() -> list[Made]:
    made = make_runs(seed=24)
    index_runs(made)
    return made


async def test_the_last_of_thousands_of_runs_is_reached_and_each_is_listed_once(
    many: list[Made],
) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        table = screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == RUNS)
        assert f"{RUNS:,} runs" in str(screen.query_one("#runs-info").render())
        # Few pages were read to open it: the list is virtual.
        assert len(table.loaded()) <= 2 * PAGE
        expected = newest_first(many)
        table.focus()
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor == RUNS - 1
        assert table.cursor_key == expected[-1]
        # The last run's line is on screen, under the cursor.
        last_line = table.render_line(table.cursor - round(table.scroll_y) + 1).text
        question = next(r.question for r in many if r.run_id == expected[-1])
        assert question.split()[1] in last_line
        await pilot.press("home", "pagedown", "pagedown")
        assert 0 < table.cursor < RUNS - 1
        # Read through every page: each run once, in the screen's order.
        assert table.row_keys() == expected


@pytest.mark.parametrize(
    ("choices", "keep"),
    [
        pytest.param({"status": "declined"}, lambda r: r.status == "declined", id="status"),
        pytest.param({"correctness": "wrong"}, lambda r: r.correct is False, id="wrong", marks=SLOW),
        pytest.param({"correctness": "unscored", "task": "MGSM_ES"}, lambda r: r.correct is None and r.task == "MGSM_ES", id="unscored-task", marks=SLOW),
        pytest.param({"model": "openai:qwen2.5", "status": "error"}, lambda r: r.model == "openai:qwen2.5" and r.status == "error", id="model-status", marks=SLOW),
    ],
)  # fmt: skip
async def test_filters_narrow_the_whole_set(many: list[Made], choices: dict, keep) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        table = screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == RUNS)
        for name, value in choices.items():
            screen.query_one(f"#filter-{name}", Select).value = value
        expected = newest_first([r for r in many if keep(r)])
        assert 0 < len(expected) < RUNS
        await wait_for(pilot, lambda: table.row_count == len(expected))
        assert table.row_keys() == expected
        await pilot.press("end")
        assert table.cursor_key == expected[-1]


@pytest.mark.slow
async def test_sort_and_search_reach_the_whole_set(many: list[Made]) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        table = screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == RUNS)
        screen.query_one("#sort", Select).value = "status"
        by_status = sorted(many, key=lambda r: r.status)
        await wait_for(pilot, lambda: table.cursor_key == newest_first(many_of(by_status))[0])
        statuses = {r.run_id: r.status for r in many}
        shown = [statuses[k] for k in table.row_keys()]
        assert shown == sorted(shown) and len(shown) == RUNS

        search = screen.query_one("#search", Input)
        search.value = "needle"
        search.focus()
        await pilot.press("enter")
        needles = {r.run_id for r in many if "needle" in r.question}
        await wait_for(pilot, lambda: table.row_count == len(needles))
        listed = table.row_keys()
        assert len(listed) == len(set(listed)) and set(listed) == needles


def many_of(runs: list[Made]) -> list[Made]:
    """The runs of the first status in `runs` (sorted by status)."""
    return [r for r in runs if r.status == runs[0].status]
