"""Benchmark: opening and scrolling a 2,000-round transcript in the TUI's run view.

A synthetic transcript of 2,000 rounds (each: the meta model's prompt and turn, one
expert call, a sandbox run every other round; about 10,000 events) is written with the
real transcript writer. The TUI opens it in a headless Textual app (the same app as
`conductor tui`), and we measure:

* open: from pushing the run screen to its first round drawn (target: under 1 s);
* step: pressing `n` (next round) 100 times, each until the new round is drawn;
* jump: `end` to the last round and `home` back;
* what is mounted: the number of drawn meta turns, which must stay at one.

Baselines measured in the same run: parsing the whole transcript (`read_transcript`,
the least an eager view must do) and drawing rounds eagerly, all in one scroll view,
timed over the first 20 rounds and scaled to 2,000.

Prints a table, then one JSON object (the figures) as its last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("BENCH_TUI_ROUNDS", "2000"))
STEPS = min(100, ROUNDS - 1)
EAGER_SAMPLE = 20
OPENS = 5


def synthetic_transcript(path: Path, rounds: int = ROUNDS) -> Path:
    """A long but ordinary run: every round consults one expert; half run code."""
    from conductor_kernel.events import (
        ExpertCallFinished,
        ExpertCallStarted,
        FinalAnswer,
        MetaTurnFinished,
        MetaTurnStarted,
        RunFinished,
        RunStarted,
        SandboxExec,
    )
    from conductor_kernel.interfaces import ExecResult, Usage
    from record.writer import TranscriptWriter

    run_id = "bench-2000-rounds"
    prompt = "ROUND {n}:\n\n" + 'Expert Python\'s output:\n"""\n' + "x = 1\n" * 60 + '"""'
    with TranscriptWriter(path) as writer:
        writer.handle(
            RunStarted(run_id=run_id, question="A long synthetic run.", model="synthetic")
        )
        for n in range(1, rounds + 1):
            start = MetaTurnStarted(run_id=run_id, round=n, user_message=prompt.format(n=n))
            turn = f'Round {n}: I will check once more.\n\nExpert Python:\n"""\nCompute {n} squared.\n"""'
            writer.handle(start)
            usage = Usage(input_tokens=500 + n, output_tokens=40, calls=1)
            writer.handle(
                MetaTurnFinished(run_id=run_id, parent_id=start.id, round=n, text=turn, usage=usage)
            )
            call = ExpertCallStarted(
                run_id=run_id, parent_id=start.id, round=n, name="Expert Python",
                instruction=f"Compute {n} squared.", is_python=True,
            )  # fmt: skip
            writer.handle(call)
            if n % 2:
                result = ExecResult(stdout=f"{n * n}\n", exit_code=0, backend="synthetic")
                writer.handle(
                    SandboxExec(
                        run_id=run_id, parent_id=call.id, code=f"print({n}**2)", result=result
                    )
                )
            reply = f"```python\nprint({n}**2)\n```\nPlease run this code!"
            writer.handle(
                ExpertCallFinished(
                    run_id=run_id, parent_id=call.id, name="Expert Python", text=reply
                )
            )
        writer.handle(FinalAnswer(run_id=run_id, round=rounds, answer="done"))
        writer.handle(
            RunFinished(run_id=run_id, status="answered", final_answer="done", rounds=rounds)
        )
    return path


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


async def measure(path: Path) -> dict[str, float]:
    from conductor.config import load_settings
    from conductor_kernel.events import MetaTurnStarted
    from record.reader import read_transcript
    from tui.app import ConductorApp
    from tui.screens.run_detail import RunDetailScreen
    from tui.widgets.blocks import TurnBlock
    from tui.widgets.run_view import RunView

    figures: dict[str, float] = {}
    parse = []
    for _ in range(3):
        t0 = time.perf_counter()
        events = read_transcript(path).events
        parse.append(time.perf_counter() - t0)
    figures["events"] = len(events)
    figures["parse_all_s"] = statistics.median(parse)

    app = ConductorApp(load_settings({"model": "demo", "sandbox": "subprocess"}), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        opens = []
        for _ in range(OPENS):
            t0 = time.perf_counter()
            screen = RunDetailScreen(path)
            await app.push_screen(screen)
            page = screen.query_one("#page", RunView)
            while not page.children:
                await asyncio.sleep(0.002)
            opens.append(time.perf_counter() - t0)
            last_open = screen
            if _ < OPENS - 1:
                await app.pop_screen()
        figures["open_p50_s"] = statistics.median(opens)
        figures["open_p90_s"] = _pct(opens, 0.9)
        figures["open_max_s"] = max(opens)

        screen = last_open
        page = screen.query_one("#page", RunView)

        async def shown(round_no: int) -> None:
            while True:
                turns = page.query(TurnBlock)
                if turns and turns.first().round_no == round_no:
                    return
                await asyncio.sleep(0.001)

        steps = []
        for n in range(1, STEPS + 1):
            t0 = time.perf_counter()
            await pilot.press("n")
            await shown(n)
            steps.append(time.perf_counter() - t0)
        figures["step_p50_s"] = statistics.median(steps)
        figures["step_p90_s"] = _pct(steps, 0.9)
        t0 = time.perf_counter()
        await pilot.press("end")
        await shown(ROUNDS)
        figures["jump_end_s"] = time.perf_counter() - t0
        figures["turns_mounted"] = len(page.query(TurnBlock))
        figures["widgets_in_screen"] = len(list(screen.walk_children()))
        figures["rounds_listed"] = screen.query_one("#rounds").count

        # Baseline: every round drawn eagerly into one view (first EAGER_SAMPLE rounds).
        await page.clear()
        upto = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, MetaTurnStarted) and e.round > EAGER_SAMPLE
        )
        t0 = time.perf_counter()
        for event in events[:upto]:
            await page.add(event)
        await pilot.pause()
        eager = time.perf_counter() - t0
        figures["eager_per_round_s"] = eager / EAGER_SAMPLE
        figures["eager_2000_estimate_s"] = figures["eager_per_round_s"] * ROUNDS
    figures["open_vs_parse_all"] = figures["open_p50_s"] / figures["parse_all_s"]
    figures["open_vs_eager_estimate"] = figures["open_p50_s"] / figures["eager_2000_estimate_s"]
    return figures


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    with tempfile.TemporaryDirectory(prefix="conductor-bench-tui-") as tmp:
        os.environ["CONDUCTOR_HOME"] = tmp
        path = synthetic_transcript(Path(tmp) / "runs" / "bench-2000-rounds.jsonl")
        size_mb = path.stat().st_size / 1e6
        figures = asyncio.run(measure(path))
    figures["transcript_mb"] = size_mb
    figures["rounds"] = ROUNDS
    figures["open_under_1s"] = figures["open_max_s"] < 1.0

    table = Table(
        title=f"TUI run view: a {ROUNDS:,}-round transcript ({size_mb:.1f} MB, {figures['events']:,} events)"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        (
            "open, p50 / p90 / max",
            f"{figures['open_p50_s'] * 1000:.0f} / {figures['open_p90_s'] * 1000:.0f} / {figures['open_max_s'] * 1000:.0f} ms",
        ),
        (
            f"next round (n), p50 / p90 over {STEPS}",
            f"{figures['step_p50_s'] * 1000:.1f} / {figures['step_p90_s'] * 1000:.1f} ms",
        ),
        ("jump to the last round (end)", f"{figures['jump_end_s'] * 1000:.1f} ms"),
        ("meta turns drawn at once", f"{figures['turns_mounted']:.0f}"),
        ("widgets on the run screen", f"{figures['widgets_in_screen']:.0f}"),
        ("rounds in the list (virtual)", f"{figures['rounds_listed']:.0f}"),
        ("baseline: parse the whole transcript", f"{figures['parse_all_s'] * 1000:.0f} ms"),
        ("baseline: eager drawing, per round", f"{figures['eager_per_round_s'] * 1000:.1f} ms"),
        (
            "baseline: eager drawing of 2,000 rounds (est.)",
            f"{figures['eager_2000_estimate_s']:.1f} s",
        ),
        ("open / parse-all", f"{figures['open_vs_parse_all']:.2f}x"),
        ("open / eager estimate", f"{figures['open_vs_eager_estimate']:.3f}x"),
    ]
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    print(json.dumps({k: round(v, 5) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
