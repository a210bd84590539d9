"""Benchmark: a demo batch under load, on Docker and bubblewrap (issue 27).

`conductor batch` runs the demo model (offline; its turns run code in the sandbox) on a
GameOf24 task file in a subprocess with a fresh CONDUCTOR_HOME, at concurrency 8, 32
and 64 on each sandbox backend this machine has. For each row: items a minute, the
most sandboxes alive at once (Docker: the batch's containers, by label; bubblewrap: its
`bwrap` processes), the peak RSS of the batch's process tree (sampled from /proc), and
how long the process took to exit after a SIGINT sent once its first item finished,
and after one sent during warm-up (as soon as its first sandbox is alive, before any
item finished). A trivial baseline (the same batch without code, `--no-python`) is
measured beside it in the same run.

Goals: throughput at 64 no worse than at 32; sandboxes alive at most the pool size
(`--sandbox-cells`, else sized to the host); exit within 2 s of SIGINT.

    python bench/batch_load.py [--items 12] [--concurrency 8,32,64] [--backends docker,bwrap]
        [--baseline-src DIR]

With --baseline-src, the same measurements are made with the conductor whose sources
are in DIR too (e.g. `git archive main | tar -x -C /tmp/base`), rows marked
"baseline", so a change's numbers are printed beside the code it changes.

Keep the default run short; prints a table, then one JSON object as its last line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conductor.batch.cells import host_cells

CONDUCTOR = str(Path(sys.executable).with_name("conductor"))
# Runs `conductor` from the sources in argv[1] instead of the installed (editable) ones.
FROM_SOURCES = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
    "str(getattr(f, '__module__', ''))]; sys.path.insert(0, sys.argv.pop(1)); "
    "from conductor.cli import main; sys.argv[0] = 'conductor'; sys.exit(main())"
)
PUZZLES = ["1 2 3 4", "4 4 6 8", "2 3 5 12", "1 1 4 6", "3 3 8 8", "1 5 5 5", "2 2 6 6"]


def task_file(folder: Path, items: int) -> Path:
    path = folder / "GameOf24.jsonl"
    lines = [json.dumps({"id": f"p{n}", "input": PUZZLES[n % len(PUZZLES)]}) for n in range(items)]
    path.write_text("\n".join(lines) + "\n")
    return path


def tree(root: int) -> list[int]:
    """The process `root` and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def alive_sandboxes(backend: str, pids: list[int]) -> int:
    if backend == "bwrap":
        # bwrap forks itself (an outer monitor, an inner pid 1): count the outer ones.
        def comm(pid: int) -> str:
            try:
                return Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                return ""

        def parent(pid: int) -> int:
            try:
                return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                return 0

        return sum(1 for pid in pids if comm(pid) == "bwrap" and comm(parent(pid)) != "bwrap")
    if backend == "docker":
        # Only this batch's containers (sandbox/docker/sweeper.py labels each with its
        # owner's pid): other programs on the machine may run sandboxes of their own.
        out = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=conductor.owner_pid={pids[0]}"],
            capture_output=True, text=True, timeout=30,
        ).stdout  # fmt: skip
        return len(out.split())
    return 0


def run_batch(
    backend: str,
    concurrency: int,
    items: int,
    *,
    python: bool,
    interrupt: str = "",
    sources: str | None = None,
) -> dict[str, Any]:
    """One batch; `interrupt` is "" (run to the end), "item" (SIGINT once an item has
    finished) or "warmup" (SIGINT once a sandbox is alive and no item has finished)."""
    with tempfile.TemporaryDirectory(prefix="batch-load-") as tmp:
        folder = Path(tmp)
        config = folder / "config.toml"
        config.touch()
        env = {
            **os.environ,
            "CONDUCTOR_HOME": str(folder / "home"),
            "CONDUCTOR_CONFIG": str(config),
        }
        command = [sys.executable, "-c", FROM_SOURCES, sources] if sources else [CONDUCTOR]
        args = [
            *command, "batch", str(task_file(folder, items)), "--model", "demo",
            "--concurrency", str(concurrency), "--no-learn", "--no-recall", "--json",
            "--python" if python else "--no-python",
        ]  # fmt: skip
        if python:
            args += ["--sandbox", backend]
        started = time.monotonic()
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak_rss = peak_alive = 0
        sent_at: float | None = None
        results = folder / "home"
        while proc.poll() is None:
            pids = tree(proc.pid)
            peak_rss = max(peak_rss, rss_kib(pids))
            alive = alive_sandboxes(backend, pids) if python else 0
            peak_alive = max(peak_alive, alive)
            if interrupt and sent_at is None:
                finished = any(results.rglob("results.jsonl"))
                if interrupt == "item":
                    due = finished
                else:  # warm-up: a sandbox up, nothing finished (no sandbox: 1 s in)
                    due = not finished and (alive > 0 or (not python and ended_s(started) > 1))
                if due:
                    proc.send_signal(signal.SIGINT)
                    sent_at = time.monotonic()
            time.sleep(0.05)
        ended = time.monotonic()
        _out, err = proc.communicate()
        row: dict[str, Any] = {
            "backend": backend if python else "none",
            "concurrency": concurrency,
            "items": items,
            "exit_code": proc.returncode,
            "wall_s": round(ended - started, 2),
            "peak_rss_mib": round(peak_rss / 1024, 1),
            "alive_max": peak_alive,
        }
        if interrupt:
            row["exit_after_sigint_s"] = round(ended - sent_at, 2) if sent_at else None
            row["leftover_sandboxes"] = leftovers(backend, proc.pid) if python else 0
        else:
            row["items_per_min"] = round(items / (ended - started) * 60, 1)
            if proc.returncode not in (0, 1):
                row["stderr"] = err.decode(errors="replace")[-300:]
        return row


def ended_s(started: float) -> float:
    return time.monotonic() - started


def leftovers(backend: str, pid: int, wait_s: float = 15.0) -> int:
    """Sandboxes of the exited batch still alive after `wait_s` (the reaper's job)."""
    if backend != "docker":
        return 0  # bubblewrap's die with their parent
    deadline = time.monotonic() + wait_s
    while (left := alive_sandboxes("docker", [pid])) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def backends_here(wanted: list[str]) -> list[str]:
    found = []
    for name in wanted:
        if name == "docker" and shutil.which("docker"):
            ok = subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode
            if ok == 0:
                found.append(name)
        elif name == "bwrap" and shutil.which("bwrap"):
            found.append(name)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--concurrency", default="8,32,64")
    parser.add_argument("--backends", default="docker,bwrap")
    parser.add_argument("--baseline-src", default=None, help="sources to measure beside")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    runs = [(b, True) for b in backends_here(args.backends.split(","))] + [("none", False)]
    builds = [("this", None)] + ([("baseline", args.baseline_src)] if args.baseline_src else [])
    # Backend "none" is the trivial baseline: the same batch with no sandbox at all.
    for (backend, python), level, (build, src) in itertools.product(runs, levels, builds):
        row = {"build": build, **run_batch(backend, level, args.items, python=python, sources=src)}
        row["pool_size"] = host_cells() if python else 0
        row["leftover_sandboxes"] = 0
        for when, key in (("item", "exit_after_sigint_s"), ("warmup", "warmup_exit_s")):
            stop = run_batch(backend, level, args.items, python=python, interrupt=when, sources=src)
            row[key] = stop["exit_after_sigint_s"]
            row["alive_max"] = max(row["alive_max"], stop["alive_max"])
            row["leftover_sandboxes"] += stop["leftover_sandboxes"]
        rows.append(row)
    header = ("build", "backend", "concurrency", "items_per_min", "pool_size", "alive_max",
              "peak_rss_mib", "exit_after_sigint_s", "warmup_exit_s", "leftover_sandboxes",
              "exit_code")  # fmt: skip
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(row.get(key)) for key in header))
    print(json.dumps({"rows": rows, "goals": {
        "throughput_64_vs_32": "no worse", "alive_max": "<= pool size", "exit_s": 2.0,
    }}))  # fmt: skip


if __name__ == "__main__":
    main()
