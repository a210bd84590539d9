"""How fast the protocol parser reads meta-model turns: every published turn.

Parses every meta turn of the paper's published runs (with and without Python) with our
`parse_turn`, and, as a baseline in the same run, with the original harness's simpler
split-on-quotes rule (`harness_calls`). Prints a table, then one JSON object.

    .venv/bin/python bench/parse.py [--passes N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from conductor_kernel.protocol import parse_turn  # noqa: E402
from record.published import harness_calls, read_published  # noqa: E402


def shared_dir() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    root = Path(env) if env else REPO.parent / "shared"
    return root / "data" / "meta-prompting"


def published_turns() -> list[str]:
    folder = shared_dir() / "transcripts"
    if not folder.is_dir():
        sys.exit(f"no published transcripts at {folder}; set CONDUCTOR_SHARED_DIR")
    return [
        turn.text
        for path in sorted(folder.glob("*/*.jsonl"))
        for record in read_published(path).records
        for turn in record.turns
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(fn: Callable[[str], object], turns: list[str], passes: int) -> dict[str, float]:
    """Throughput per pass (median over passes) and per-turn latency (median, p90)."""
    rates = []
    for _ in range(passes):
        started = time.perf_counter()
        for text in turns:
            fn(text)
        rates.append(len(turns) / (time.perf_counter() - started))
    latencies = []
    for text in turns:
        t0 = time.perf_counter_ns()
        fn(text)
        latencies.append((time.perf_counter_ns() - t0) / 1000)
    return {
        "turns_per_s": statistics.median(rates),
        "us_median": statistics.median(latencies),
        "us_p90": percentile(latencies, 0.9),
        "us_max": max(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5, help="timed passes over all turns")
    args = parser.parse_args()
    turns = published_turns()
    chars = sum(len(t) for t in turns)
    ours = measure(parse_turn, turns, args.passes)
    baseline = measure(harness_calls, turns, args.passes)

    table = Table(title=f"Parsing {len(turns):,} published meta turns ({chars / 1e6:.1f} M chars)")
    for column in ("parser", "turns/s (median)", "µs/turn median", "µs/turn p90", "µs max"):
        table.add_column(column, justify="left" if column == "parser" else "right")
    for name, figures in (
        ("conductor_kernel.protocol.parse_turn", ours),
        ("harness split (baseline)", baseline),
    ):
        table.add_row(
            name,
            f"{figures['turns_per_s']:,.0f}",
            f"{figures['us_median']:.1f}",
            f"{figures['us_p90']:.1f}",
            f"{figures['us_max']:.0f}",
        )
    Console().print(table)
    print(
        json.dumps(
            {
                "bench": "parse",
                "turns": len(turns),
                "passes": args.passes,
                "turns_per_s_median": round(ours["turns_per_s"]),
                "us_per_turn_median": round(ours["us_median"], 2),
                "us_per_turn_p90": round(ours["us_p90"], 2),
                "baseline_turns_per_s_median": round(baseline["turns_per_s"]),
                "baseline_us_per_turn_median": round(baseline["us_median"], 2),
                "ratio_vs_baseline": round(ours["turns_per_s"] / baseline["turns_per_s"], 3),
            }
        )
    )


if __name__ == "__main__":
    main()
