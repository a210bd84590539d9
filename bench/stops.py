"""How soon a sandbox hands back a cell that it had to stop, on each backend.

The tests assert that these cells are stopped (the result says timed out, or that the
output cap was hit, before the cell's own timeout); how long after the limit the result
arrives depends on the machine's load, so it is measured here instead:

* timeout: `while True: pass` with a 1 s timeout, the seconds past that timeout;
* output cap: `while True: print(...)` with a 20 s timeout, the seconds to the result.

Prints a table, then (last line) one JSON object with every figure.
    .venv/bin/python bench/stops.py [--tries 5]
Figures taken on a shared, loaded machine: compare backends and runs, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.registry import backend_class, probe

TIMEOUT_S = 1.0
CELLS = {
    "timeout": ("while True: pass", TIMEOUT_S, lambda r: r.timed_out),
    "output cap": ("while True: print('y' * 4096)", 20.0, lambda r: r.output_limit_hit),
}


def measure(backend: str, tries: int) -> dict[str, list[float]]:
    box = backend_class(backend)()
    try:
        box.run("pass", timeout=30)  # warm-up, not counted
        figures: dict[str, list[float]] = {}
        for name, (code, timeout, stopped) in CELLS.items():
            samples = []
            for _ in range(tries):
                started = time.perf_counter()
                result = box.run(code, timeout=timeout)
                seconds = time.perf_counter() - started
                if not stopped(result):
                    raise SystemExit(f"{backend}: {name} did not stop the cell: {result}")
                samples.append(seconds - TIMEOUT_S if name == "timeout" else seconds)
            figures[name] = samples
        return figures
    finally:
        box.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    args = parser.parse_args()
    report: dict[str, object] = {}
    print("timeout: seconds past a 1 s timeout; output cap: seconds to the capped result")
    print(f"{'backend':<8}{'figure':<12}{'median s':>10}{'max s':>8}")
    for backend in ("docker", "bwrap"):
        why_not = probe(backend)
        if why_not:
            print(f"{backend:<8}not measured: {why_not}")
            report[backend] = {"skipped": why_not}
            continue
        figures = measure(backend, args.tries)
        report[backend] = figures
        for name, samples in figures.items():
            median, worst = statistics.median(samples), max(samples)
            print(f"{backend:<8}{name:<12}{median:>10.2f}{worst:>8.2f}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
