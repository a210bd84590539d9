"""The batch benchmark's equipment: the wire server's scripted replies, the task file,
`conductor batch` in a subprocess against the server, and what its results file and the
server's request log say afterwards. Used by bench/batch.py and bench/support/batch_on_ray.py.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from conductor_kernel import prompts
from equipment.wire_server import WireServer

REPO = Path(__file__).resolve().parents[2]
LATENCY_S = 1.0
ROUNDS = 4  # meta turns per item; the first ROUNDS - 1 consult one expert each
CALLS_PER_ITEM = ROUNDS + (ROUNDS - 1)
TARGET_RATIO = 1.25
_ITEM = re.compile(r"bench item (\d+)")


def responder(body: dict[str, Any]) -> str:
    """Meta turns by how many the conversation already has; experts confirm."""
    messages = body.get("messages") or []
    text = "\n".join(str(m.get("content", "")) for m in messages)
    found = _ITEM.search(text)
    n = int(found.group(1)) if found else -1
    if messages and messages[0].get("content") == prompts.META_SYSTEM:
        turns = sum(m.get("role") == "assistant" for m in messages)
        if turns < ROUNDS - 1:
            return (
                f'Expert Checker:\n"""\nCheck step {turns + 1} of bench item {n}: {n} + {n}.\n"""'
            )
        return f'>> FINAL ANSWER:\n"""\n{2 * n}\n"""'
    return f"Step checked for bench item {n}: {n} + {n} = {2 * n}."


def write_tasks(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for n in range(count):
            record = {"id": f"item-{n:03d}", "input": f"bench item {n}: add {n} to itself."}
            fh.write(json.dumps({**record, "target": str(2 * n)}) + "\n")


def batch_command(tasks: Path, concurrency: int, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        str(REPO / ".venv" / "bin" / "python"),
        "-m",
        "conductor.cli",
        "batch",
        str(tasks),
        "--scorer",
        "numeric",
        "--description",
        "Add the number to itself.",
        "--model",
        "openai:bench",
        "--no-python",
        "--no-recall",
        "--no-learn",
        "--concurrency",
        str(concurrency),
        "--json",
        *extra,
    ]


def environment(server: WireServer, home: Path) -> dict[str, str]:
    # An empty config file of its own: the user's settings never leak into the figures
    # (and conductor refuses a CONDUCTOR_CONFIG that names no file).
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDUCTOR_", "ANTHROPIC_"))}
    env.update(
        CONDUCTOR_HOME=str(home),
        CONDUCTOR_CONFIG=str(home / "config.toml"),
        OPENAI_BASE_URL=server.openai_url,
        OPENAI_API_KEY="bench",
    )
    return env


def run_batch(
    server: WireServer, tasks: Path, home: Path, concurrency: int, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One whole batch in a subprocess; its report, the process's wall time and CPU."""
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    done = subprocess.run(
        batch_command(tasks, concurrency, extra),
        env=environment(server, home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"batch failed ({done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["process_wall_s"] = wall
    report["process_cpu_s"] = _children_cpu() - cpu0
    return report


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def results_path(home: Path) -> Path:
    found = list((home / "batches").glob("*/results.jsonl"))
    return found[0] if found else home / "missing"


def final_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a line cut by the kill
        if record.get("final"):
            lines.append(record)
    return lines


def items_asked(server: WireServer, since: int, until: int | None = None) -> Counter[int]:
    """How many model requests mention each item, among requests `since` to `until`."""
    counts: Counter[int] = Counter()
    for request in server.requests[since:until]:
        messages = (request.body or {}).get("messages") or []
        found = _ITEM.search("\n".join(str(m.get("content", "")) for m in messages))
        if found:
            counts[int(found.group(1))] += 1
    return counts
