"""Benchmark: a real small local model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) under
the paper's methods, and what makes it use the meta-prompting protocol.

Serves the GGUF with llama.cpp's `llama-server` on this machine's CPU (the binary from
`.ci/setup.d/20-model-peers.sh`, `$CONDUCTOR_LLAMA_SERVER`), then runs a comparison
batch (`conductor batch FILES --methods ...`, recall and learning off) on the first
`--limit` items of GameOf24, word_sorting and multistep_arithmetic_two from
../shared/data/meta-prompting/tasks, once per variant. A variant is a name and extra
`conductor batch` flags (e.g. a policy that asks for a check before a final answer is
accepted) and/or llama-server flags (e.g. `--jinja`, the GGUF's own chat template).

For every (variant, task, method): accuracy, how many meta runs consulted an expert at
all, how many answered in round 1 without consulting anyone, rounds, model calls, wall
time per item. Prints a table, then one JSON object (the figures) as its last line.

    CONDUCTOR_LLAMA_SERVER=... python bench/small_model.py --limit 10 \\
        --methods standard,meta --variants plain,check

CPU inference of a 1.5B model on two shared cores is slow (a meta run is minutes):
start with `--limit 2` and one task.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DIR", REPO.parent / "shared"))
TASKS_DIR = SHARED / "data" / "meta-prompting" / "tasks"
DEFAULT_GGUF = Path.home() / ".cache/conductor-peers/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
TASKS = ["GameOf24", "word_sorting", "multistep_arithmetic_two"]
ALIAS = "qwen2.5-coder-1.5b-instruct"

# name -> (extra `conductor batch` flags, extra llama-server flags)
VARIANTS: dict[str, tuple[list[str], list[str]]] = {
    "plain": ([], []),
    "jinja": ([], ["--jinja"]),  # the GGUF's own chat template, read by the server
    # An answer before any expert was consulted is sent back once, asking for a check.
    "check": (["--check-before-answer"], []),
    # The protocol's carriers (docs/models.md), each on the GGUF's own template.
    "text": (["--protocol", "text"], ["--jinja"]),
    "tools": (["--protocol", "tools"], ["--jinja"]),
    "grammar": (["--protocol", "grammar"], ["--jinja"]),
}
BASELINE = "standard"  # the paired difference of every method is against it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    binary: str, gguf: Path, extra: list[str], log: Path, parallel: int
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [
        binary, "-m", str(gguf), "--alias", ALIAS, "--host", "127.0.0.1",
        "--port", str(port), "-c", str(8192 * parallel), "-np", str(parallel), "-t", "2",
        "--temp", "0", "--seed", "1", "--no-webui", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited; see {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return proc, url + "/v1"
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit(f"llama-server did not become ready; see {log}")


def run_batch(
    files: list[Path], methods: str, url: str, extra: list[str], home: Path, args: Any
) -> dict[str, Any]:
    cmd = [
        str(REPO / ".venv/bin/conductor"), "batch", *map(str, files), "--methods", methods,
        "--model", f"openai:{ALIAS}@{url}", "--no-recall", "--no-learn",
        "--sandbox", args.sandbox, "--concurrency", str(args.parallel), "--limit", str(args.limit),
        "--max-rounds", str(args.max_rounds), "--meta-max-tokens", str(args.max_tokens),
        "--expert-max-tokens", str(args.max_tokens), "--max-wall", str(args.max_wall),
        "--json", *extra,
    ]  # fmt: skip
    return conductor_json(cmd, home)


def conductor_json(cmd: list[str], home: Path) -> dict[str, Any]:
    """Run a `conductor ... --json` command in its own home; its last line, parsed."""
    env = dict(os.environ, CONDUCTOR_HOME=str(home), OPENAI_API_KEY="unused")
    print("$", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
    return dict(json.loads(last))


def run_ablation(file: Path, url: str, home: Path, args: Any) -> dict[str, Any]:
    """The notebook's A/B on one task file (`conductor batch --ablation`): learn from one
    split, then run the other with recall on and off, the same items in the same order."""
    cmd = [
        str(REPO / ".venv/bin/conductor"), "batch", str(file), "--ablation", str(args.ablation),
        "--model", f"openai:{ALIAS}@{url}", "--sandbox", args.sandbox,
        "--limit", str(args.limit), "--max-rounds", str(args.max_rounds),
        "--meta-max-tokens", str(args.max_tokens), "--expert-max-tokens", str(args.max_tokens),
        "--max-wall", str(args.max_wall), "--json",
    ]  # fmt: skip
    report = conductor_json(cmd, home)
    if not report:
        return {"task": file.stem, "failed": True}
    on, off, learn = report["arms"]["recall_on"], report["arms"]["recall_off"], report["learn"]
    return {
        "task": file.stem,
        "learned_items": len(report["learn_items"]),
        "tested_items": len(report["test_items"]),
        "on_correct": on["correct"],
        "off_correct": off["correct"],
        "on_tokens": on["tokens"],
        "off_tokens": off["tokens"],
        "on_shown_notes": on["runs_shown_notes"],
        "run_tokens_per_learned_item": learn.get("run_tokens_per_item"),
        "learning_tokens_per_learned_item": learn.get("learning_tokens_per_item"),
        "learning_calls": learn["learning_calls_usage"]["calls"],
        "paired": report["paired"],
    }


def rows_from_results(variant: str, results: Path) -> list[dict[str, Any]]:
    """The table's rows from a comparison batch's results.jsonl, finished or not (an
    interrupted benchmark is reported from what it recorded: `--from-results`). Per
    method: how many runs consulted an expert at all, answered in round 1 without
    consulting anyone, or ended without an answer."""
    task = task_of(results.parent)
    done = [
        json.loads(line)
        for line in results.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    done = [r for r in done if r.get("final")]
    plain = plain_method(results.parent)  # a plain batch's records name no method
    for r in done:
        r["method"] = r.get("method") or plain
    rows = []
    for method in dict.fromkeys(r.get("method") for r in done):
        mine = [r for r in done if r.get("method") == method]
        scored = [r for r in mine if (r.get("score") or {}).get("scored")]
        n = len(mine)
        rows.append(
            {
                "variant": variant,
                "task": task,
                "method": method,
                "correct": sum(1 for r in scored if r["score"].get("correct")),
                "scored": len(scored),
                "runs": n,
                "consulted": sum(1 for r in mine if r.get("expert_calls", 0) > 0),
                "code_ran": sum(1 for r in mine if r.get("sandbox_runs", 0) > 0),
                "expert_calls_mean": round(
                    sum(r.get("expert_calls", 0) for r in mine) / max(1, n), 2
                ),
                "right_items": sorted(r["item_id"] for r in scored if r["score"].get("correct")),
                "items": sorted(r["item_id"] for r in mine),
                "round1_alone": sum(
                    1 for r in mine if r.get("rounds") == 1 and not r.get("expert_calls")
                ),
                "no_answer": sum(1 for r in mine if r.get("answer") is None),
                "rounds_mean": round(sum(r.get("rounds", 0) for r in mine) / max(1, n), 2),
                "model_calls": sum(r["usage"].get("calls", 0) for r in mine),
                "tokens_in": sum(r["usage"].get("input_tokens", 0) for r in mine),
                "tokens_out": sum(r["usage"].get("output_tokens", 0) for r in mine),
                "item_s_mean": sum(r.get("duration_s", 0.0) for r in mine) / max(1, n),
                **program_checks(results.parent, mine),
            }
        )
    return rows


PASSED_SAID = "The task's own check accepts this printed line"


def _identity(folder: Path) -> dict[str, Any]:
    try:
        identity = json.loads((folder / "batch.json").read_text(encoding="utf-8"))["identity"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return identity if isinstance(identity, dict) else {}


def task_of(folder: Path) -> str:
    """The task a batch folder ran: its batch.json's, else read from the folder's name
    (`TASK-compare-ID` for a comparison, `TASK-ID` for a plain batch)."""
    try:
        return str(_identity(folder)["spec"]["name"])
    except (KeyError, TypeError):
        name = folder.name.split("-compare-")[0]
        return name if "-compare-" in folder.name else name.rsplit("-", 1)[0]


def plain_method(folder: Path) -> str:
    """The method of a plain batch's runs, whose records name none: meta-prompting, with
    Python unless the batch ran without it."""
    return "meta" if _identity(folder).get("python", True) else "meta-no-python"


def program_checks(folder: Path, records: list[dict[str, Any]]) -> dict[str, int]:
    """From the runs' transcripts: programs sent back to Expert Python (the check
    rejected what they printed, or they failed), and runs in which a program printed a
    line the task's own check accepts (said to the meta model beside the output)."""
    sent_back = passed = ready = handed = 0
    for record in records:
        path = folder / str(record.get("transcript") or "")
        if not record.get("transcript") or not path.is_file():
            continue
        said = made = given = False
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"program_fails_check"' in line:
                sent_back += 1
            said = said or PASSED_SAID in line
            made = made or '"ready_call_made"' in line
            given = given or ('"meta_turn_started"' in line and '"handed_calls": [{' in line)
        passed += said
        ready += made
        handed += given
    return {"sent_back": sent_back, "printed_passing": passed, "ready_call": ready,
            "handed": handed}  # fmt: skip


def _task_item(run_item: str) -> str:
    """A comparison's run of an item (`ITEM@method`) as the item it asked."""
    return run_item.rsplit("@", 1)[0]


def paired(rows: list[dict[str, Any]]) -> None:
    """Each row's items right only with it and only with `standard` on the same task
    (the carrier's own standard row, else another carrier's: standard sends no protocol),
    over the items both ran: `vs_standard` is "+a/-b", or "-" without a baseline row."""
    for row in rows:
        bases = [b for b in rows if b["method"] == BASELINE and b["task"] == row["task"]]
        base = next((b for b in bases if b["variant"] == row["variant"]), None)
        base = base or (bases[0] if bases else None)
        if base is None or row["method"] == BASELINE:
            row["vs_standard"] = "-"
            continue
        both = {_task_item(i) for i in row["items"]} & {_task_item(i) for i in base["items"]}
        mine = {_task_item(i) for i in row["right_items"]} & both
        theirs = {_task_item(i) for i in base["right_items"]} & both
        row["vs_standard"] = f"+{len(mine - theirs)}/-{len(theirs - mine)}"


def print_rows(rows: list[dict[str, Any]]) -> None:
    paired(rows)
    head = (
        f"{'variant':<8} {'task':<25} {'method':<15} {'acc':>6} {'vs std':>6} "
        f"{'consulted':>9} {'code ran':>8} {'calls/run':>9} {'r1 alone':>8} {'no ans':>6} "
        f"{'rounds':>6} {'tok in':>7} {'tok out':>7} {'s/item':>6} {'sent back':>9} "
        f"{'passed':>6} {'ready call':>10} {'handed':>6}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['variant']:<8} {r['task']:<25} {r['method']:<15} "
            f"{r['correct']:>2}/{r['scored']:<3} {r['vs_standard']:>6} "
            f"{r['consulted']:>4}/{r['runs']:<4} {r['code_ran']:>4}/{r['runs']:<3} "
            f"{r['expert_calls_mean']:>9} {r['round1_alone']:>8} {r['no_answer']:>6} "
            f"{r['rounds_mean']:>6} {r['tokens_in']:>7} {r['tokens_out']:>7} "
            f"{r['item_s_mean']:>6.0f} {r.get('sent_back', 0):>9} {r.get('printed_passing', 0):>6} "
            f"{r.get('ready_call', 0):>10} {r.get('handed', 0):>6}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--methods", default="standard,meta")
    parser.add_argument("--variants", default="plain")
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=768)
    parser.add_argument("--max-wall", type=int, default=900)
    parser.add_argument("--sandbox", default="auto")
    # Slots on the server and items at once: on 2 CPU cores, 2 slots gave 1.2x the
    # tokens per second of one (measured: 15.5 against 18.8 tok/s with 4).
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument(
        "--ablation",
        type=int,
        metavar="SEED",
        help="instead of comparing methods: the notebook's A/B (learning on against off) "
        "on each task, meta-prompting, first --limit items",
    )
    parser.add_argument(
        "--from-results",
        nargs="+",
        metavar="VARIANT=RESULTS.JSONL",
        help="report what comparison batches recorded (finished or not) and exit",
    )
    args = parser.parse_args()
    if args.from_results:
        rows = []
        for given in args.from_results:
            variant, _, path = given.partition("=")
            rows += rows_from_results(variant, Path(path))
        print_rows(rows)
        print(json.dumps({"model": args.gguf.name, "rows": rows}))
        return
    binary = os.environ.get("CONDUCTOR_LLAMA_SERVER") or shutil.which("llama-server")
    if not binary:
        raise SystemExit("no llama-server: `source .ci/setup.d/20-model-peers.sh` first")
    if not args.gguf.is_file():
        raise SystemExit(f"no model at {args.gguf}")
    work = Path(tempfile.mkdtemp(prefix="small-model-"))
    print(f"work folder: {work}", file=sys.stderr, flush=True)
    files = []
    for task in args.tasks.split(","):
        src = TASKS_DIR / f"{task}.jsonl"
        if not src.is_file():
            raise SystemExit(f"task file missing: {src}")
        files.append(src)
    rows: list[dict[str, Any]] = []
    if args.ablation is not None:
        server, url = serve(binary, args.gguf, [], work / "llama-ab.log", args.parallel)
        try:
            ab = [run_ablation(file, url, work / f"ab-{file.stem}", args) for file in files]
        finally:
            server.terminate()
            server.wait(timeout=30)
        print(f"{'task':<25} {'learned':>7} {'tested':>6} {'on':>4} {'off':>4} "
              f"{'tok on':>7} {'tok off':>7} {'run tok/item':>12} {'learn tok/item':>14}")  # fmt: skip
        for r in ab:
            if r.get("failed"):
                print(f"{r['task']:<25} failed (see stderr)")
                continue
            print(
                f"{r['task']:<25} {r['learned_items']:>7} {r['tested_items']:>6} "
                f"{r['on_correct']:>4} {r['off_correct']:>4} {r['on_tokens']:>7} "
                f"{r['off_tokens']:>7} {r['run_tokens_per_learned_item']:>12} "
                f"{r['learning_tokens_per_learned_item']:>14}"
            )
        print(json.dumps({"model": args.gguf.name, "limit": args.limit, "ablation": ab}))
        return
    for variant in args.variants.split(","):
        batch_flags, server_flags = VARIANTS[variant]
        server, url = serve(
            binary, args.gguf, server_flags, work / f"llama-{variant}.log", args.parallel
        )
        try:
            t0 = time.monotonic()
            out = run_batch(files, args.methods, url, batch_flags, work / variant, args)
            wall = time.monotonic() - t0
        finally:
            server.terminate()
            server.wait(timeout=30)
        reports = out.get("comparisons") or ([out] if "by_method" in out else [])
        for report in reports:
            rows += rows_from_results(variant, Path(report["folder"]) / "results.jsonl")
        print(f"variant {variant}: {wall:.0f} s", file=sys.stderr, flush=True)
    print_rows(rows)
    print(json.dumps({"model": args.gguf.name, "limit": args.limit, "rows": rows}))


if __name__ == "__main__":
    main()
