"""Benchmark: is the notebook useful? Figures that can fail, each beside trivial baselines
measured in the same run, then recall latency.

- verified: over every published run (../shared: with and without Python, and the five
  baseline methods' runs), targets
  withheld: the share of runs labelled verified that the task scorer accepts (target
  >= 0.95) and the share of right answers that get the label (>= 0.5), beside the base
  rate and the label the notebook used to give (a program printed it / two replies
  hold it). Two folds by question: one learned with targets, the other labelled.
- tools: the first halves of GameOf24, word_sorting and multistep_arithmetic_two
  learned; the best-tested recalled tool run on every held-back question in the real
  sandbox and scored (>= 0.95 each), beside the newest code note run unchanged and a
  random tool of the notebook.
- kin: MGSM learned in one language, asked in another (ES as the pivot, both
  directions, all ten): the same problem's note ranked first (>= 0.8), beside plain
  bm25 over past questions, shape-only matching and a random note.
- paraphrase: the English rewordings of each MGSM problem in the published runs' first
  expert instructions (ES and FR, with and without Python): one run set's learned,
  another's asked; the same problem's note first, beside the same baselines. With
  `paraphrase-semantic` and `kin-semantic`, the same with the semantic index fused in.
- near-miss: ten variant tasks of our own (bench/support/nb_variants.py): the share of their
  questions shown the old task's tool, code or pitfall (<= 0.1), beside bm25 and the
  old task's own questions (so "shown nothing" is not how it passes).
- generated (bench/support/nb_generated.py): near misses of five question forms over 23
  perturbation kinds (tests/equipment/perturb.py), fixed seed: tools offered and built-in
  tasks recognised where the task changed (0), beside the old rules; recall's notes of a
  different question presented as fitting (<= 0.01), beside bm25 over the rarest terms
  and a random note.
- demo-ab (bench/support/nb_demo_ab.py): the demo model on generated Game of 24 puzzles
  of one kind, learning on against learning off (the baseline): rounds and tokens of the
  first puzzle and of the later ones, with the same accuracy.
- kin-transcripts: MGSM kin learned from every published run of one language (targets
  known and withheld), asked in the other languages, beside bm25.
- latency-real: recall p50/p99 on a notebook learned from every published run, beside
  a bm25 query over each question's rarest terms in the same process.
- latency (bench/support/nb_latency.py): a synthetic notebook at each size; recall p50/p99
  beside one plain FTS5 query, lexical and with the semantic index, wall and CPU time.

Prints tables, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the test equipment (synthetic notebooks)

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from equipment.synthetic_notes import concurrent_writes  # noqa: E402

TARGETS = {"verified_precision": 0.95, "verified_coverage": 0.5, "tool_accuracy": 0.95,
           "kin_first": 0.8, "near_miss_shown": 0.1, "p50_ms_100k": 5.0,
           "semantic_p50_ms_100k": 15.0, "generated_misled": 0.01}  # fmt: skip
# Piped output keeps whole columns (a terminal wraps to its own width).
console = Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 150)


def shared_dir() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    root = Path(env) if env else REPO.parent / "shared"
    return root / "data" / "meta-prompting"


def support_module(name: str) -> Any:
    """bench/support/NAME.py, loaded by path (this file's name shadows the package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "support" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def figures_module() -> Any:
    return support_module("nb_figures")


def share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="notes, comma-separated")
    parser.add_argument("--queries", type=int, default=300, help="recalls timed per size")
    parser.add_argument("--writes", type=int, default=200, help="runs learned for throughput")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writer processes")
    parser.add_argument("--runs", type=int, default=400, help="runs the concurrent writers learn")
    parser.add_argument("--sandbox", default="auto", help="sandbox for tools: auto, docker, bwrap")
    parser.add_argument(
        "--only",
        default="verified,tools,kin,near,latency",
        help="sections, comma-separated; kin-semantic and paraphrase-semantic need the semantic extra",
    )
    parser.add_argument("--generated", type=int, default=2000, help="generated near misses")
    parser.add_argument("--puzzles", type=int, default=12, help="demo-ab: puzzles per arm")
    parser.add_argument("--keep", help="keep the notebooks in this directory")
    args = parser.parse_args()
    only = set(args.only.split(","))
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="bench-notebook-"))
    workdir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    data = shared_dir()
    if only - {"latency", "generated", "demo-ab"} and not (data / "tasks").is_dir():
        console.print(f"[red]no published data at {data}[/]; set CONDUCTOR_SHARED_DIR")
        return 2
    f = figures_module()
    sandbox = None
    if only & {"verified", "tools"}:
        from conductor_kernel.interfaces import SandboxUnavailable
        from sandbox.registry import open_sandbox

        try:
            sandbox = open_sandbox(args.sandbox)
        except SandboxUnavailable as exc:
            console.print(f"[yellow]no sandbox, so no tool figures[/]: {exc}")
            only -= {"tools"}
    try:
        for name, run in (
            ("verified", lambda: f.verified(data, workdir, sandbox)),
            ("tools", lambda: f.tool_accuracy(data, workdir, sandbox)),
            ("kin", lambda: f.kin(data, workdir)),
            ("kin-semantic", lambda: f.kin(data, workdir, semantic=True)),
            ("kin-transcripts", lambda: f.kin_transcripts(data, workdir)),
            ("latency-real", lambda: support_module("nb_latency").latency_real(data, workdir)),
            ("paraphrase", lambda: f.paraphrase(data, workdir)),
            ("paraphrase-semantic", lambda: f.paraphrase(data, workdir, semantic=True)),
            ("near", lambda: f.near_miss(data, workdir)),
            (
                "generated",
                lambda: support_module("nb_generated").generated(workdir, args.generated),
            ),
            ("demo-ab", lambda: support_module("nb_demo_ab").demo_ab(workdir, args.puzzles)),
        ):
            if name in only:
                t0 = time.perf_counter()
                figures[name] = run()
                figures[name + "_seconds"] = time.perf_counter() - t0
                PRINTERS[name](figures[name])
    finally:
        if sandbox is not None:
            sandbox.close()
    if "latency" in only:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        t0 = time.perf_counter()
        figures["latency"] = support_module("nb_latency").latency(
            sizes, args.queries, args.writes, workdir
        )
        figures["latency"]["concurrent"] = concurrent_writes(workdir, args.writers, args.runs)
        figures["latency"]["seconds"] = time.perf_counter() - t0
        print_latency(figures["latency"], sizes)
    figures["targets_met"] = targets_met(figures)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, default=float))
    return 0


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def print_verified(result: dict[str, Any]) -> None:
    table = _table(
        "Verified labels, targets withheld, every published run",
        ["task", "runs", "base rate", "labelled", "precision", "coverage", "old precision",
         "old coverage"],
    )  # fmt: skip
    rows = [*result["per_task"].items(), ("all", result["total"])]
    for name, c in rows:
        table.add_row(
            name, str(c["runs"]), f"{share(c['right'], c['runs']):.3f}", str(c["label"]),
            f"{share(c['label_right'], c['label']):.3f}", f"{share(c['label_right'], c['right']):.3f}",
            f"{share(c['old_right'], c['old']):.3f}", f"{share(c['old_right'], c['right']):.3f}",
        )  # fmt: skip
    console.print(table)
    console.print(f"evidence of the labels: {result['levels']} (sandbox: {result['sandbox']})")
    trust = _table(
        "Trust names, targets withheld: precision (and the share of right answers covered)",
        ["task", "runs", "base rate", "checked", "precision", "corroborated", "precision",
         "covers"],
    )  # fmt: skip
    for name, c in rows:
        trust.add_row(
            name, str(c["runs"]), f"{share(c['right'], c['runs']):.3f}",
            str(c.get("checked", 0)), f"{share(c.get('checked_right', 0), c.get('checked', 0)):.3f}",
            str(c.get("corroborated", 0)),
            f"{share(c.get('corroborated_right', 0), c.get('corroborated', 0)):.3f}",
            f"{share(c.get('checked_right', 0) + c.get('corroborated_right', 0), c['right']):.3f}",
        )  # fmt: skip
    console.print(trust)
    by_folder = _table(
        "Trust names by the method that made the runs",
        ["runs of", "runs", "base rate", "checked", "precision", "corroborated", "precision"],
    )
    for name, c in result.get("per_folder", {}).items():
        by_folder.add_row(
            name, str(c["runs"]), f"{share(c['right'], c['runs']):.3f}",
            str(c.get("checked", 0)), f"{share(c.get('checked_right', 0), c.get('checked', 0)):.3f}",
            str(c.get("corroborated", 0)),
            f"{share(c.get('corroborated_right', 0), c.get('corroborated', 0)):.3f}",
        )  # fmt: skip
    console.print(by_folder)


def print_tools(result: dict[str, Any]) -> None:
    table = _table(
        "Tool accuracy on held-back questions (run in the sandbox, scored)",
        ["task", "questions", "with a tool", "accuracy", "copy of code", "random tool",
         "tools", "tests"],
    )  # fmt: skip
    for name, c in result.items():
        n = c["questions"]
        table.add_row(
            name, str(n), str(c.get("with_tool", 0)), f"{share(c.get('right', 0), n):.3f}",
            f"{share(c.get('copy_right', 0), n):.3f}", f"{share(c.get('random_right', 0), n):.3f}",
            str(c["tools"]), str(c["tested"]),
        )  # fmt: skip
    console.print(table)


def print_kin(result: dict[str, Any], title: str = "Translated kin") -> None:
    table = _table(
        f"{title}: same problem's note first",
        ["learned -> asked", "questions", "ours", "bm25", "shape only", "random"],
    )
    total: dict[str, int] = {}
    for c in result.values():
        for key, value in c.items():
            total[key] = total.get(key, 0) + value
    for name, c in [*result.items(), ("all", total)]:
        n = c["questions"]
        table.add_row(
            name, str(n), f"{share(c['first'], n):.3f}", f"{share(c['bm25'], n):.3f}",
            f"{share(c['shape'], n):.3f}", f"{share(c['random'], n):.3f}",
        )  # fmt: skip
    console.print(table)


def print_kin_transcripts(result: dict[str, Any]) -> None:
    table = _table(
        "Kin learned from published runs (MGSM, every method), asked in the other languages",
        ["learned", "runs", "questions", "same first", "other first", "of it unmarked",
         "nothing", "bm25 first"],
    )  # fmt: skip
    shares = ("first", "other_first", "other_first_unmarked", "nothing", "bm25")
    for name, c in result.items():
        n = c["questions"]
        cells = [f"{share(c.get(key, 0), n):.3f}" for key in shares]
        table.add_row(name, str(c["runs_learned"]), str(n), *cells)
    console.print(table)


def print_latency_real(result: dict[str, Any]) -> None:
    table = _table(
        "Recall on a notebook learned from every published run (task files' questions)",
        ["runs", "notes", "question chars p50", "recall p50 ms", "p99", "cpu p50",
         "rarest-terms bm25 p50 ms", "p99", "cpu p50"],
    )  # fmt: skip
    r = result
    table.add_row(
        str(r["runs_learned"]), str(r["notes"]), f"{r['question_chars_p50']:.0f}",
        f"{r['recall_p50_ms']:.2f}", f"{r['recall_p99_ms']:.2f}", f"{r['recall_cpu_p50_ms']:.2f}",
        f"{r['rarest_bm25_p50_ms']:.2f}", f"{r['rarest_bm25_p99_ms']:.2f}",
        f"{r['rarest_bm25_cpu_p50_ms']:.2f}",
    )  # fmt: skip
    console.print(table)


def print_near(result: dict[str, Any]) -> None:
    table = _table(
        "Near-miss tasks: the old task's tool, code or pitfall shown",
        ["variant", "of task", "questions", "ours", "bm25 top note", "own task shown"],
    )
    for name, c in result.items():
        n = c["questions"]
        table.add_row(
            name, c["task"], str(n), f"{share(c['shown_old'], n):.3f}",
            f"{share(c['bm25_old'], n):.3f}", f"{share(c['own_task_shown'], n):.3f}",
        )  # fmt: skip
    console.print(table)


def print_demo_ab(result: dict[str, Any]) -> None:
    table = _table(
        f"The demo on {len(result['puzzles'])} generated Game of 24 puzzles of one kind "
        f"(seed {result['seed']}): learning on against off",
        ["learning", "correct", "rounds first", "rounds later", "tokens first",
         "tokens later", "tokens all", "expert calls", "learning calls"],
    )  # fmt: skip
    for arm in ("on", "off"):
        r = result[arm]
        table.add_row(
            arm, f"{r['correct']} of {r['puzzles']}", str(r["rounds_first"]),
            f"{r['rounds_later']:.2f}", f"{r['tokens_first']:,}", f"{r['tokens_later']:,.0f}",
            f"{r['tokens_total']:,}", str(r["expert_calls"]), str(r["learning_calls"]),
        )  # fmt: skip
    console.print(table)


def print_generated(result: dict[str, Any]) -> None:
    table = _table(
        f"Generated near misses (seed {result['seed']}, {result['questions']} questions, "
        f"{result['kinds']} kinds)",
        ["kind", "effect", "n", "tool ours", "tool old", "recog ours", "recog old",
         "misled ours", "other shown", "bm25 other", "random other"],
    )  # fmt: skip
    total: Counter[str] = Counter()
    for kind, c in result["rules"].items():
        r = result["recall"].get(kind, {})
        total.update(c)
        total.update({"r_" + k: v for k, v in r.items()})
        effect = next(e for e in ("task", "data", "same") if c.get(f"effect_{e}"))
        n, rn = c["questions"], r.get("questions", 0)
        table.add_row(
            kind, effect, str(n),
            f"{share(c.get('offered_ours', 0), c.get('tool_ours', 0)):.3f}",
            f"{share(c.get('offered_old', 0), c.get('tool_old', 0)):.3f}",
            f"{share(c.get('recognised_ours', 0), n):.3f}",
            f"{share(c.get('recognised_old', 0), n):.3f}",
            f"{share(r.get('misled', 0), rn):.3f}", f"{share(r.get('other_shown', 0), rn):.3f}",
            f"{share(r.get('bm25_other', 0), rn):.3f}", f"{share(r.get('random_other', 0), rn):.3f}",
        )  # fmt: skip
    rn = total["r_questions"]
    table.add_row(
        "all", "", str(total["questions"]), "", "", "", "",
        f"{share(total['r_misled'], rn):.3f}", f"{share(total['r_other_shown'], rn):.3f}",
        f"{share(total['r_bm25_other'], rn):.3f}", f"{share(total['r_random_other'], rn):.3f}",
    )  # fmt: skip
    console.print(table)
    for effect in ("task", "data"):
        kinds = [c for c in result["rules"].values() if c.get(f"effect_{effect}")]
        sums = Counter()
        for c in kinds:
            sums.update(c)
        console.print(
            f"{effect} changed: tool offered ours {sums['offered_ours']} of {sums['tool_ours']}, "
            f"old {sums['offered_old']} of {sums['tool_old']}; recognised ours "
            f"{sums['recognised_ours']} of {sums['questions']}, old {sums['recognised_old']}; "
            f"bases recognised ours {sums['base_recognised_ours']}, old "
            f"{sums['base_recognised_old']}; own question offered its tool ours "
            f"{sums['own_ours']} of {sums['tool_ours']}, old {sums['own_old']} of {sums['tool_old']}"
        )


PRINTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "verified": print_verified,
    "tools": print_tools,
    "kin": print_kin,
    "kin-semantic": lambda r: print_kin(r, "Translated kin, semantic index on"),
    "kin-transcripts": print_kin_transcripts,
    "latency-real": print_latency_real,
    "paraphrase": lambda r: print_kin(r, "English paraphrases"),
    "paraphrase-semantic": lambda r: print_kin(r, "English paraphrases, semantic index on"),
    "near": print_near,
    "generated": print_generated,
    "demo-ab": print_demo_ab,
}


def print_latency(result: dict[str, Any], sizes: list[int]) -> None:
    timing = support_module("nb_latency")
    table = _table("Recall latency on a synthetic notebook (ms)", timing.LATENCY_COLUMNS)
    for row in timing.latency_rows(result, sizes):
        table.add_row(*row)
    console.print(table)
    encoders = {result[size].get("semantic_encoder") for size in sizes} - {None}
    console.print(
        f"semantic encoder: {', '.join(sorted(encoders)) or 'not installed'}; load average "
        f"(1 min) {result['load_before'][0]:.1f} before, {result['load_after'][0]:.1f} after"
    )
    together = result["concurrent"]
    console.print(
        f"write path: {result['write_runs_per_s']:.1f} runs/s at {result['write_at_notes']:,} "
        f"notes; {together['writers']} writer processes: {together['runs_per_s']:.1f} runs/s "
        f"together, all {together['runs']} runs learned: {together['all_learned']}, "
        f"integrity ok: {together['integrity_ok']}"
    )


def targets_met(figures: dict[str, Any]) -> dict[str, bool]:
    met = {}
    if "verified" in figures:
        t = figures["verified"]["total"]
        met["verified_precision"] = share(t["label_right"], t["label"]) >= 0.95
        met["verified_coverage"] = share(t["label_right"], t["right"]) >= 0.5
        met["checked_precision"] = share(t.get("checked_right", 0), t.get("checked", 0)) >= 0.99
    if "tools" in figures:
        met["tool_accuracy"] = all(
            share(c.get("right", 0), c["questions"]) >= TARGETS["tool_accuracy"]
            for c in figures["tools"].values()
        )
    if "kin" in figures:
        first = sum(c["first"] for c in figures["kin"].values())
        asked = sum(c["questions"] for c in figures["kin"].values())
        met["kin_first"] = share(first, asked) >= TARGETS["kin_first"]
    if "near" in figures:
        met["near_miss"] = all(
            share(c["shown_old"], c["questions"]) <= TARGETS["near_miss_shown"]
            for c in figures["near"].values()
        )
    if "generated" in figures:
        g = figures["generated"]
        task = [c for c in g["rules"].values() if c.get("effect_task")]
        met["generated_tool_on_changed_task"] = sum(c.get("offered_ours", 0) for c in task) == 0
        met["generated_recognised_near_miss"] = sum(c.get("recognised_ours", 0) for c in task) == 0
        asked = sum(c["questions"] for c in g["recall"].values())
        misled = sum(c.get("misled", 0) for c in g["recall"].values())
        met["generated_misled"] = share(misled, asked) <= TARGETS["generated_misled"]
    if "latency" in figures and 100_000 in figures["latency"]:
        p50 = figures["latency"][100_000]["recall_p50_ms"]
        met["p50_at_100k"] = p50 <= TARGETS["p50_ms_100k"]
        fused = figures["latency"][100_000].get("semantic_recall_p50_ms")
        if fused is not None:
            met["semantic_p50_at_100k"] = fused <= TARGETS["semantic_p50_ms_100k"]
    if "latency" in figures:
        together = figures["latency"]["concurrent"]
        met["concurrent_writers"] = together["all_learned"] and together["integrity_ok"]
    return met


if __name__ == "__main__":
    sys.exit(main())
