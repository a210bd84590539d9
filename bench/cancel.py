"""Cancel latency: `stop()` during a streamed meta turn, through the real SDKs.

Each try starts a run whose first meta turn streams for about 5 s (200 pieces 25 ms
apart from the wire server, or up to 400 tokens from llama-server when it is
installed), cancels it 0.5 s into the stream, and measures the time from `cancel()` to
the run's `RunFinished`; it also checks that the partial call's usage was kept
(`usage.calls == 1`). The baseline, measured in the same run, is the same stream left
to finish: what a cancel used to cost (it waited for the whole turn).

Prints a table, then (last line) one JSON object with every figure.
    .venv/bin/python bench/cancel.py [--tries 20] [--server wire|llama|both]
Figures taken on a shared, loaded machine: compare the two columns, not absolute values.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test equipment (wire server)
sys.path.insert(0, str(ROOT / "tests" / "peers"))

from conductor.session import Session  # noqa: E402
from conductor_kernel.events import RunFinished, TextDelta  # noqa: E402
from conductor_kernel.limits.run_config import RunConfig  # noqa: E402
from equipment.wire_server import WireServer  # noqa: E402
from experts.anthropic_model import AnthropicModel  # noqa: E402
from experts.openai_model import OpenAIModel  # noqa: E402

TARGET_S = 0.3
CANCEL_AFTER_S = 0.5
STORY = "Write a very long story about a cat who sails around the world, chapter by chapter."


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def one_try(model: Any, runs: Path, *, cancel: bool) -> tuple[float, RunFinished]:
    """Seconds from cancel() to RunFinished (or, without cancel, the whole run)."""
    session = Session(
        meta_model=model,
        config=RunConfig(meta_max_tokens=400, max_rounds=1, python=False),
        runs_path=runs,
    )
    timer: threading.Timer | None = None
    marks: dict[str, float] = {}

    def stop() -> None:
        marks["cancel"] = time.perf_counter()
        session.cancel()

    start = time.perf_counter()
    finished: RunFinished | None = None
    for event in session.solve(STORY):
        if isinstance(event, TextDelta) and timer is None and cancel:
            timer = threading.Timer(CANCEL_AFTER_S, stop)
            timer.start()
        if isinstance(event, RunFinished):
            finished = event
    end = time.perf_counter()
    assert finished is not None
    return end - marks.get("cancel", start), finished


def measure(label: str, make_model: Any, tries: int, runs: Path) -> dict[str, Any]:
    one_try(make_model(), runs, cancel=True)  # warm-up: connections, the tokenizer
    latencies, kept = [], 0
    for _ in range(tries):
        seconds, finished = one_try(make_model(), runs, cancel=True)
        latencies.append(seconds)
        kept += finished.status == "interrupted" and finished.usage.calls == 1
    baseline, _ = one_try(make_model(), runs, cancel=False)
    return {
        "server": label,
        "tries": tries,
        "p50_s": round(statistics.median(latencies), 4),
        "p90_s": round(percentile(latencies, 0.9), 4),
        "max_s": round(max(latencies), 4),
        "usage_kept": kept,
        "baseline_full_turn_s": round(baseline, 3),
        "target_p90_s": TARGET_S,
        "ok": percentile(latencies, 0.9) <= TARGET_S and kept == tries,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--server", choices=["wire", "llama", "both"], default="both")
    args = parser.parse_args()
    os.environ.setdefault("CONDUCTOR_HOME", tempfile.mkdtemp(prefix="bench-cancel-"))
    runs = Path(tempfile.mkdtemp(prefix="bench-cancel-runs-"))
    rows: list[dict[str, Any]] = []
    if args.server in ("wire", "both"):
        text = "word " * 200
        with WireServer(responder=lambda _: text, chunk_chars=5, chunk_delay_s=0.025) as wire:
            for provider in ("openai", "anthropic"):

                def make(provider: str = provider) -> Any:
                    if provider == "openai":
                        return OpenAIModel("gpt-4o", base_url=wire.openai_url, api_key="k")
                    return AnthropicModel("claude-haiku-4-5", base_url=wire.url, api_key="k")

                rows.append(measure(f"wire server ({provider})", make, args.tries, runs))
    if args.server in ("llama", "both"):
        from servers import find_llama_server, start_llama_server

        found = find_llama_server()
        if found is None:
            print("llama-server not installed: skipped (see docs/models.md)", file=sys.stderr)
        else:
            server = start_llama_server(*found, runs, slots=1)
            try:
                for provider in ("openai", "anthropic"):

                    def make(provider: str = provider) -> Any:
                        if provider == "openai":
                            return OpenAIModel("smollm2", base_url=server.openai_url, api_key="k")
                        return AnthropicModel("smollm2", base_url=server.root, api_key="k")

                    rows.append(measure(f"llama-server ({provider})", make, args.tries, runs))
            finally:
                server.stop()
    header = f"{'server':<26}{'p50 s':>8}{'p90 s':>8}{'max s':>8}{'kept':>7}{'full turn s':>13}"
    print(header)
    for row in rows:
        print(
            f"{row['server']:<26}{row['p50_s']:>8.3f}{row['p90_s']:>8.3f}{row['max_s']:>8.3f}"
            f"{row['usage_kept']:>4}/{row['tries']:<2}{row['baseline_full_turn_s']:>13.2f}"
        )
    print(json.dumps({"bench": "cancel", "target_p90_s": TARGET_S, "results": rows}))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
