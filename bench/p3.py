"""P3: every reference solution of P3_Test.jsonl scored by our rule in the real sandbox,
and adversarial answers that must all score as wrong.

Each answer takes two sandbox runs (the answer's value, then the puzzle's check; see
conductor/scoring/puzzles.py). The baseline, measured in the same run and sandboxes,
is two trivial runs per puzzle (`print(1)`): the sandbox's own floor. Prints a table,
every puzzle that did not pass with the reason, then one JSON object.

    .venv/bin/python bench/p3.py [--sandbox docker|bwrap] [--jobs 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from conductor.replay.runner import SandboxPool  # noqa: E402
from conductor.scoring import score  # noqa: E402
from conductor.scoring.puzzles import SANDBOX_OPTIONS  # noqa: E402
from conductor.tasks.files import TaskItem, read_task_file  # noqa: E402
from sandbox.registry import open_sandbox  # noqa: E402
from tests.p3_cases import ADVERSARIAL, CONTROL, reference_answers  # noqa: E402

ATTACK_PUZZLES = 10  # adversarial answers run against this many puzzles, spread out


def task_file() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    root = (Path(env) if env else REPO.parent / "shared") / "data" / "meta-prompting"
    path = root / "tasks" / "P3_Test.jsonl"
    if not path.is_file():
        sys.exit(f"no {path}; set CONDUCTOR_SHARED_DIR")
    return path


def run_all(pool: SandboxPool, jobs: int, work: list, fn) -> tuple[list, float]:
    def one(job):
        box = pool.acquire()
        try:
            return fn(job, box)
        finally:
            pool.release(box)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as executor:
        results = list(executor.map(one, work))
    return results, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a run (default 60)")
    args = parser.parse_args()
    items: list[TaskItem] = read_task_file(task_file()).items[: args.limit]
    pool = SandboxPool(lambda: open_sandbox(args.sandbox, **SANDBOX_OPTIONS))
    try:
        run_all(pool, args.jobs, items[: args.jobs], lambda item, box: box.run("print(1)"))  # warm
        # Baseline: the sandbox's floor, two trivial runs per puzzle.
        _, floor_s = run_all(
            pool, args.jobs, items, lambda item, box: (box.run("print(1)"), box.run("print(1)"))
        )
        jobs = [(item, answer) for item in items for answer in reference_answers(item)]

        def judge(job, box):
            item, answer = job
            return item, score(
                "P3_Test", answer, item, sandbox=box, timeout_s=args.timeout, with_paper=False
            )

        results, scored_s = run_all(pool, args.jobs, jobs, judge)
        # Attack puzzles: spread over the file, and not solved by the honest `None`.
        spread = items[:: max(1, len(items) // (3 * ATTACK_PUZZLES))]

        def control(item, box):
            return item, score(
                "P3_Test", CONTROL, item, sandbox=box, timeout_s=args.timeout, with_paper=False
            )

        controls, _ = run_all(pool, args.jobs, spread, control)
        targets = [item for item, r in controls if not r.correct][:ATTACK_PUZZLES]
        trivial = [item for item, r in controls if r.correct]
        attacks = [(item, name) for item in targets for name in sorted(ADVERSARIAL)]

        def attack(job, box):
            item, name = job
            return (
                item,
                name,
                score(
                    "P3_Test", ADVERSARIAL[name], item, sandbox=box, timeout_s=3.0, with_paper=False
                ),
            )

        attacked, attack_s = run_all(pool, args.jobs, attacks, attack)
        backend = pool.name
    finally:
        pool.close()

    no_reference = [i for i in items if not reference_answers(i)]
    failed = [(item, r) for item, r in results if not r.correct]
    failed_puzzles = {item.id for item, _ in failed}
    with_reference = [i for i in items if reference_answers(i)]
    passed_puzzles = sum(i.id not in failed_puzzles for i in with_reference)
    fooled = [(item, name, r) for item, name, r in attacked if r.correct]

    table = Table(
        title=f"P3_Test reference solutions, our rule, {backend} sandbox, {args.jobs} jobs"
    )
    for column in ("what", "count", "seconds", "per item (ms)"):
        table.add_column(column, justify="left" if column == "what" else "right")
    table.add_row("puzzles in the file", str(len(items)), "", "")
    table.add_row("puzzles without a reference solution", str(len(no_reference)), "", "")
    table.add_row(
        "reference solutions passed / scored",
        f"{len(results) - len(failed)}/{len(results)}",
        f"{scored_s:.1f}",
        f"{1000 * scored_s / max(1, len(results)):.1f}",
    )
    table.add_row(
        "puzzles with a reference: all pass", f"{passed_puzzles}/{len(with_reference)}", "", ""
    )
    table.add_row(
        "baseline: 2 x print(1) per puzzle",
        str(len(items)),
        f"{floor_s:.1f}",
        f"{1000 * floor_s / max(1, len(items)):.1f}",
    )
    table.add_row(
        "adversarial answers scored wrong",
        f"{len(attacked) - len(fooled)}/{len(attacked)}",
        f"{attack_s:.1f}",
        "",
    )
    Console(width=120).print(table)
    for item in no_reference:
        print(f"no reference solution: {item.metadata.get('name')} (sol_bodies is empty)")
    for item, r in failed:
        print(f"FAILED {item.metadata.get('name')}: {r.detail}")
    for item in trivial:
        print(f"not attacked: {item.metadata.get('name')} accepts the honest `return None`")
    for item, name, r in fooled:
        print(f"FOOLED by {name!r} on {item.metadata.get('name')}: {r.detail}")
    print(
        json.dumps(
            {
                "sandbox": backend,
                "jobs": args.jobs,
                "puzzles": len(items),
                "no_reference_solution": len(no_reference),
                "reference_solutions": len(results),
                "reference_passed": len(results) - len(failed),
                "puzzles_with_reference_all_passed": passed_puzzles,
                "failed": [item.metadata.get("name") for item, _ in failed],
                "scoring_s": round(scored_s, 2),
                "baseline_s": round(floor_s, 2),
                "ratio_to_baseline": round(scored_s / floor_s, 2) if floor_s else None,
                "adversarial_runs": len(attacked),
                "adversarial_fooled": len(fooled),
            }
        )
    )


if __name__ == "__main__":
    main()
