"""How long one cell takes in each sandbox, against bare host Python in the same run.

Methods: bare host `python -c` (the baseline), Docker cold one-shot (create + start +
wait + remove), Docker warm exec (`docker exec` into a running container), the
pre-forked runner in Docker (our DockerSandbox) and the same runner in bubblewrap (our
BwrapSandbox). Each runs `print(1)` and a sympy solve, --runs times (30 by default).
The warm runners are measured twice: with a 0.5 s pause before each cell (in a
conductor run cells are seconds apart, a model call between them; the runner forks and
warms the next child in that pause), and back to back.

Prints a table, then (last line) one JSON object with every figure.
    .venv/bin/python bench/sandbox.py [--runs 30] [--skip-cold]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CELLS = {
    "print": "print(1)",
    "sympy": "import sympy as sp; x = sp.symbols('x'); print(sp.solve(x**2 - 2, x))",
}
EXPECTED = {"print": "1", "sympy": "[-sqrt(2), sqrt(2)]"}
TARGET_MS = {"print": 10.0, "sympy": 15.0}
PAUSE_S = 0.5


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def measure(
    fn: Callable[[str], str], code: str, expected: str, runs: int, pause: float
) -> list[float]:
    """Milliseconds per run; a wrong answer aborts (a fast wrong sandbox proves nothing)."""
    fn(code)  # warm-up, not counted
    samples = []
    for _ in range(runs):
        if pause:
            time.sleep(pause)
        started = time.perf_counter()
        out = fn(code)
        samples.append((time.perf_counter() - started) * 1000)
        if out.strip() != expected:
            raise SystemExit(f"wrong output {out!r}, expected {expected!r}")
    return samples


def host_python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def make_bwrap() -> tuple[Callable[[str], str] | None, Callable[[], None], str]:
    if importlib.util.find_spec("sandbox.bwrap.backend") is None:
        return None, lambda: None, "sandbox.bwrap.backend not present"
    from sandbox.bwrap.backend import BwrapSandbox

    why_not = BwrapSandbox.probe()
    if why_not:
        return None, lambda: None, why_not
    box = BwrapSandbox()

    def run(code: str) -> str:
        result = box.run(code, timeout=30)
        if not result.ok:
            raise SystemExit(f"bubblewrap runner failed: {result.to_dict()}")
        return result.stdout

    return run, box.close, ""


Cleanup = Callable[[], None]


def docker_methods(skip_cold: bool) -> tuple[dict[str, Callable[[str], str]], Cleanup, str]:
    from sandbox import image
    from sandbox.docker.backend import ContainerLimits, DockerSandbox, docker_client

    why_not = DockerSandbox.probe()
    if why_not:
        return {}, lambda: None, why_not
    client, tag, limits = docker_client(), image.image_tag(), ContainerLimits()

    def one_shot(command: list[str]) -> str:
        """A hardened container (our settings) running `command` as an unprivileged uid."""
        kwargs = limits.create_kwargs(tag)
        kwargs.update(command=command, stdin_open=False, detach=True, user="65534:65534")
        kwargs["host_config"]["AutoRemove"] = False
        return client.api.create_container(**kwargs)["Id"]

    def cold(code: str) -> str:
        container = one_shot(["python3", "-I", "-c", code])
        try:
            client.api.start(container)
            client.api.wait(container, timeout=60)
            return client.api.logs(container, stdout=True, stderr=False).decode()
        finally:
            client.api.remove_container(container, force=True)

    warm_container = one_shot(["sleep", "3600"])
    client.api.start(warm_container)

    def warm_exec(code: str) -> str:
        exec_id = client.api.exec_create(warm_container, ["python3", "-I", "-c", code])
        return client.api.exec_start(exec_id, demux=True)[0].decode()

    box = DockerSandbox(pool_size=1)

    def prefork(code: str) -> str:
        result = box.run(code, timeout=30)
        if not result.ok:
            raise SystemExit(f"pre-forked runner failed: {result.to_dict()}")
        return result.stdout

    methods = {} if skip_cold else {"docker cold one-shot": cold}
    methods["docker warm exec"] = warm_exec
    methods["pre-forked runner"] = prefork
    methods["pre-forked runner, back to back"] = prefork

    def cleanup() -> None:
        client.api.remove_container(warm_container, force=True)
        box.close()

    return methods, cleanup, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--skip-cold", action="store_true", help="leave out Docker cold starts")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    methods: dict[str, Callable[[str], str]] = {"host python -c": host_python}
    skipped: dict[str, str] = {}
    bwrap, close_bwrap, why = make_bwrap()
    if bwrap:
        methods["bubblewrap warm runner"] = bwrap
        methods["bubblewrap warm runner, back to back"] = bwrap
    else:
        skipped["bubblewrap warm runner"] = why
    docker, cleanup, why = docker_methods(args.skip_cold)
    methods.update(docker)
    if why:
        skipped["docker"] = why

    figures: dict[str, dict[str, dict[str, float]]] = {}
    for method, fn in methods.items():
        pause = 0.0 if "back to back" in method else PAUSE_S
        for cell, code in CELLS.items():
            console.print(f"[dim]measuring {method} / {cell} ({args.runs} runs)[/]")
            samples = measure(fn, code, EXPECTED[cell], args.runs, pause)
            figures.setdefault(method, {})[cell] = {
                "p50_ms": round(statistics.median(samples), 2),
                "p90_ms": round(percentile(samples, 0.9), 2),
            }
    cleanup()
    close_bwrap()

    base = figures["host python -c"]
    for cells in figures.values():
        for cell, numbers in cells.items():
            numbers["p50_vs_host"] = round(numbers["p50_ms"] / base[cell]["p50_ms"], 3)
            numbers["p90_vs_host"] = round(numbers["p90_ms"] / base[cell]["p90_ms"], 3)

    table = Table(title=f"sandbox latency per cell ({args.runs} runs each; ratio = / host p50)")
    table.add_column("method")
    for cell in CELLS:
        table.add_column(f"{cell} p50 ms", justify="right")
        table.add_column(f"{cell} p90 ms", justify="right")
        table.add_column(f"{cell} ×host", justify="right")
    for method, cells in figures.items():
        row = [method]
        for cell in CELLS:
            numbers = cells[cell]
            row += [
                f"{numbers['p50_ms']:.1f}",
                f"{numbers['p90_ms']:.1f}",
                f"{numbers['p50_vs_host']:.2f}",
            ]
        table.add_row(*row)
    Console(width=160).print(table)
    for name, reason in skipped.items():
        Console().print(f"skipped {name}: {reason}")

    targets: dict[str, bool] = {}
    for label, method in (("prefork", "pre-forked runner"), ("bwrap", "bubblewrap warm runner")):
        warm = figures.get(method, {})
        for cell in CELLS:
            if cell in warm:
                p50 = warm[cell]["p50_ms"]
                targets[f"{label}_{cell}_p50_le_{TARGET_MS[cell]:g}ms"] = p50 <= TARGET_MS[cell]
                targets[f"{label}_{cell}_p50_below_host"] = p50 < base[cell]["p50_ms"]
    print(
        json.dumps(
            {
                "benchmark": "sandbox",
                "runs": args.runs,
                "pause_before_each_s": PAUSE_S,
                "cells": CELLS,
                "figures": figures,
                "targets_met": targets,
                "skipped": skipped,
            }
        )
    )


if __name__ == "__main__":
    main()
