"""Benchmark: how long the short commands take to start and answer, beside `--version`.

A home with one real run (the offline demo model, so its transcript and notebook are
real) and runs.db filled with synthetic runs to 1k and then 10k; each command is run
`--repeat` times in a fresh process, interleaved with `conductor --version`, the
baseline of the same moment (the machine's load moves both). Wall times are medians.
Python's bytecode cache is on, as on a user's machine (PYTHONDONTWRITEBYTECODE, set on
some machines, would have every start compile its modules again: a third of a second),
and each command runs once untimed first.

    .venv/bin/python bench/startup.py [--sizes 1000,10000] [--repeat 5]

Prints a table, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUESTION = "Sort these words: pear apple fig"


def _env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    config = home.parent / "config.toml"  # empty: the defaults
    config.touch()
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **inherited,
        "CONDUCTOR_HOME": str(home),
        "CONDUCTOR_CONFIG": str(config),
        "PYTHONPATH": str(REPO),
    }


def _conductor(env: dict[str, str], *args: str) -> float:
    """Seconds `conductor ARGS` took, start to exit (it must succeed)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "conductor.cli", *args],
        env=env,
        cwd=REPO,  # `-m` puts the working folder first on the path, before PYTHONPATH
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # A plain wait: `subprocess.run(timeout=...)` polls in sleeps of up to 50 ms, which
    # rounded every figure up to the next 50 ms. A watchdog stands in for the timeout.
    watchdog = threading.Timer(600, process.kill)
    watchdog.start()
    try:
        code = process.wait()
    finally:
        watchdog.cancel()
    elapsed = time.perf_counter() - started
    if code != 0:
        raise subprocess.CalledProcessError(code, ["conductor", *args])
    return elapsed


def fill(path: Path, upto: int) -> None:
    """Synthetic finished runs in runs.db until it holds `upto` (one transaction)."""
    from conductor_kernel.events import RunFinished, RunScored, RunStarted
    from transcripts.index import RunIndex

    index = RunIndex(path)
    have = index.count_runs()

    def add() -> None:
        for n in range(have, upto):
            run_id = f"bench-{n:06d}"
            index.handle(RunStarted(run_id=run_id, question=f"question {n} " * 8, ts=1e9 + n))
            index.handle(RunFinished(run_id=run_id, status="answered", final_answer=str(n)))
            index.handle(RunScored(run_id=run_id, correct=n % 3 == 0, scorer="exact"))

    index.all_at_once(add)
    index.close()


def commands(run_id: str) -> dict[str, tuple[str, ...]]:
    return {
        "solve --help": ("solve", "--help"),
        "notebook search": ("notebook", "search", "sort words"),
        "runs show": ("runs", "show", run_id[:12]),
        "runs list": ("runs", "list"),
        "runs search": ("runs", "search", "question"),
    }


def measure(env: dict[str, str], run_id: str, repeat: int) -> dict[str, dict[str, float]]:
    """Per command: its median wall, the baseline's median over the same rounds, ratio."""
    walls: dict[str, list[float]] = {name: [] for name in commands(run_id)}
    baseline: list[float] = []
    for args in commands(run_id).values():
        _conductor(env, *args)  # untimed: the bytecode written, the files in the cache
    for _ in range(repeat):
        for name, args in commands(run_id).items():
            baseline.append(_conductor(env, "--version"))
            walls[name].append(_conductor(env, *args))
    base = statistics.median(baseline)
    out = {"--version": {"wall_s": base, "ratio": 1.0}}
    for name, values in walls.items():
        median = statistics.median(values)
        out[name] = {"wall_s": median, "ratio": median / base}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="runs in runs.db, ascending")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = _env(home)
        solve = ("solve", QUESTION, "--sandbox", "subprocess", "--quiet")
        subprocess.run([sys.executable, "-m", "conductor.cli", *solve], env=env, check=True,
                       cwd=REPO, capture_output=True, timeout=600)  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "conductor.cli", "runs", "list", "--json"],
            env=env, check=True, capture_output=True, text=True, timeout=600, cwd=REPO,
        )  # fmt: skip
        run_id = json.loads(done.stdout.splitlines()[0])["run_id"]
        for size in sizes:
            fill(home / "runs.db", size)
            results[str(size)] = measure(env, run_id, args.repeat)
    print(f"{'command':<18}" + "".join(f"{f'{s} runs':>22}" for s in sizes))
    for name in results[str(sizes[0])]:
        cells = "".join(
            f"{results[str(s)][name]['wall_s']:>12.3f} s {results[str(s)][name]['ratio']:>5.1f}x"
            for s in sizes
        )
        print(f"{name:<18}{cells}")
    print("(median wall over --repeat fresh processes; x: times `conductor --version`)")
    print(json.dumps({"repeat": args.repeat, "runs": results}))


if __name__ == "__main__":
    main()
