"""Benchmark: a new user's first demo puzzle, from Enter to the first visible sign and the answer.

For each sandbox backend that works here (docker, bwrap; subprocess as the
no-isolation reference), with the offline demo model and a fresh CONDUCTOR_HOME:

* CLI: `conductor solve "Use 4 5 6 10 to make 24" --sandbox B` as a user runs it; time
  to its first line of output and to its exit (wall time, interpreter start included).
* TUI (the real app, headless, driven by Textual's Pilot): Enter pressed as soon as the
  screen shows ("cold": the sandbox is still starting) and again once it has started
  ahead ("warm"); time to the first visible change (the status bar leaving `ready`),
  to the run's first event drawn, and to the answer.

Baselines in the same run: `python -c pass` (the least a CLI can cost) and, in the
TUI, a keypress echoed into the question box (the least a visible change can cost).
Goals (issue 10): first visible event within 0.3 s; a warm demo solve within 2 s.

Prints a table, then one JSON object (the figures) as its last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTION = "Use 4 5 6 10 to make 24"
REPEATS = int(os.environ.get("BENCH_FIRST_RUN_REPEATS", "3"))
CONDUCTOR = str(Path(sys.executable).with_name("conductor"))


def backends() -> list[str]:
    from sandbox.registry import probe

    return [name for name in ("docker", "bwrap") if probe(name) is None] + ["subprocess"]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def cli_once(backend: str, home: Path) -> tuple[float, float]:
    """(seconds to the first line of output, seconds to exit) of one `conductor solve`."""
    env = {**os.environ, "CONDUCTOR_HOME": str(home), "COLUMNS": "100"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [CONDUCTOR, "solve", QUESTION, "--sandbox", backend, "--model", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - started
    proc.stdout.read()
    code = proc.wait()
    if code != 0:
        raise SystemExit(f"conductor solve --sandbox {backend} exited {code}")
    return first, time.perf_counter() - started


def python_baseline() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


async def tui_once(backend: str, warm: bool) -> dict[str, float]:
    from conductor.config import load_settings
    from tui.app import ConductorApp
    from tui.screens.solve import SolveScreen

    settings = load_settings({"model": "demo", "sandbox": backend})
    app = ConductorApp(settings)
    marks: dict[str, float] = {}
    seen: dict[str, float] = {}

    def hook(message: object) -> None:
        # The moment each kind of change reaches the screen, whatever Pilot does after.
        if isinstance(message, SolveScreen.EventArrived):
            seen.setdefault(message.event.kind, time.perf_counter())

    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        screen = app.screen
        await pilot.pause()
        if warm:
            while not screen._next.done.is_set():
                await pilot.pause(0.02)
        bar = screen.query_one("#status-bar")
        begin = bar.begin

        def timed_begin(state: str) -> None:
            seen.setdefault("visible", time.perf_counter())
            begin(state)

        bar.begin = timed_begin
        box = screen.query_one("#question")
        # Baseline: one key echoed into the question box.
        t0 = time.perf_counter()
        await pilot.press("x")
        while box.value != "x":
            await pilot.pause(0)
        marks["echo_s"] = time.perf_counter() - t0
        box.value = QUESTION
        await pilot.pause()
        t0 = time.perf_counter()
        await pilot.press("enter")
        while screen.finished is None:
            await pilot.pause(0.005)
        marks["visible_s"] = seen["visible"] - t0
        marks["first_event_s"] = seen["run_started"] - t0
        marks["answer_s"] = seen["final_answer"] - t0
        marks["run_s"] = screen.finished.duration_s
        assert screen.finished.status == "answered", screen.finished.status
        t0 = time.perf_counter()
    marks["quit_s"] = time.perf_counter() - t0
    return marks


def main() -> int:
    os.environ.setdefault("CONDUCTOR_SANDBOX_CACHE", str(Path.home() / ".cache/conductor-sandbox"))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONDUCTOR_HOME"] = str(Path(tmp) / "home")
        os.environ.pop("ANTHROPIC_API_KEY", None)
        os.environ.pop("OPENAI_API_KEY", None)
        os.environ.pop("OPENAI_BASE_URL", None)
        baseline = _median([python_baseline() for _ in range(REPEATS)])
        for backend in backends():
            cli = [cli_once(backend, Path(tmp) / "home") for _ in range(REPEATS)]
            row = {
                "backend": backend,
                "cli_first_output_s": _median([c[0] for c in cli]),
                "cli_wall_s": _median([c[1] for c in cli]),
            }
            for warm in (False, True):
                runs = [asyncio.run(tui_once(backend, warm)) for _ in range(REPEATS)]
                tag = "warm" if warm else "cold"
                for key in ("visible_s", "first_event_s", "answer_s", "run_s", "echo_s", "quit_s"):
                    row[f"tui_{tag}_{key}"] = _median([r[key] for r in runs])
            rows.append(row)
    header = (
        f"{'backend':<11}{'CLI 1st line':>13}{'CLI wall':>10}{'TUI visible':>12}"
        f"{'cold 1st ev':>12}{'cold answer':>12}{'warm 1st ev':>12}{'warm answer':>12}"
        f"{'run':>7}{'quit':>7}"
    )
    print(f"medians of {REPEATS} (seconds); baselines: python -c pass {baseline:.3f}")
    print(header)
    for r in rows:
        print(
            f"{r['backend']:<11}{r['cli_first_output_s']:>13.3f}{r['cli_wall_s']:>10.3f}"
            f"{r['tui_warm_visible_s']:>12.3f}{r['tui_cold_first_event_s']:>12.3f}"
            f"{r['tui_cold_answer_s']:>12.3f}{r['tui_warm_first_event_s']:>12.3f}"
            f"{r['tui_warm_answer_s']:>12.3f}{r['tui_warm_run_s']:>7.3f}{r['tui_warm_quit_s']:>7.3f}"
        )
    echo = _median([r["tui_warm_echo_s"] for r in rows])
    print(f"TUI baseline: a key echoed into the question box {echo:.3f}")
    print(
        json.dumps(
            {
                "benchmark": "first_run",
                "repeats": REPEATS,
                "python_start_s": round(baseline, 4),
                "tui_key_echo_s": round(echo, 4),
                "rows": [
                    {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                    for r in rows
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
