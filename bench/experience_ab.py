"""Benchmark: experience that lifts a weak model, the notebook's A/B on a real small model.

Qwen2.5-Coder-1.5B-Instruct (the Q4_K_M GGUF, llama.cpp's `llama-server --jinja`, CPU)
conducts the first `--limit` Game of 24 puzzles of ../shared/data/meta-prompting/tasks
with the tools carrier, the same items in the same order, in three arms:

- `off`: no notebook (`--no-recall --no-learn`): the baseline;
- `learn`: learning on into a fresh notebook, recall on, one item at a time (a): what
  the model learns from its own runs comes back for the items after;
- `gpt4`: a notebook learned (`conductor notebook learn`, then `notebook test-tools`)
  from the paper's published GPT-4 meta-prompting runs of the *other* puzzles (items
  41-100 of the published file: none of the measured ones), recalled, learning off (b).

For each arm: accuracy by the task's scorer, the paired difference against `off` (items
right only in this arm, right only in `off`), runs whose recall handed the model a
program checked on its question, code runs, rounds, tokens, seconds per item, and the
cost of recall (its seconds: the sandbox check of a fitting tool; its tokens in the
prompt) and of learning. Prints a table, then one JSON object as its last line.

    source .ci/setup.d/20-model-peers.sh
    python bench/experience_ab.py --limit 40 --arms off,gpt4,learn
    python bench/experience_ab.py --from-results off=HOME/batches/GameOf24-*/results.jsonl ...

A run is seconds to minutes on two cores: start with `--limit 3`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from small_model import ALIAS, DEFAULT_GGUF, REPO, SHARED, TASKS_DIR, conductor_json, serve

PUBLISHED = SHARED / "data" / "meta-prompting" / "transcripts" / "with-python" / "GameOf24.jsonl"
CONDUCTOR = str(REPO / ".venv/bin/conductor")
ARMS = ("off", "gpt4", "learn")


def cut(source: Path, first: int, last: int, to: Path) -> Path:
    """Lines `first`..`last` (1-based) of a JSON Lines file, written to `to`."""
    lines = source.read_text(encoding="utf-8").splitlines()[first - 1 : last]
    to.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return to


def gpt4_notebook(home: Path, skip: int) -> Path:
    """A notebook learned from the published GPT-4 runs after the first `skip` items,
    its tools tested on the stored questions of their kind."""
    book = home / "gpt4.db"
    # Named for the task: `notebook learn` takes the task from the file's name.
    learn_from = cut(PUBLISHED, skip + 1, 10_000, home / "GameOf24.jsonl")
    env = dict(os.environ, CONDUCTOR_HOME=str(home))
    for command in (["learn", str(learn_from)], ["test-tools"]):
        subprocess.run([CONDUCTOR, "notebook", *command, "--notebook", str(book)],
                       env=env, check=True, capture_output=True)  # fmt: skip
    return book


def run_arm(arm: str, items: Path, url: str, home: Path, args: Any) -> Path:
    """One arm's batch; the path of its results.jsonl."""
    flags = {
        "off": ["--no-recall", "--no-learn"],
        "learn": ["--notebook", str(home / "learned.db")],
        "gpt4": ["--notebook", str(args.gpt4_notebook), "--no-learn"],
    }[arm]
    cmd = [
        CONDUCTOR, "batch", str(items), "--model", f"openai:{ALIAS}@{url}",
        "--protocol", "tools", "--max-rounds", str(args.max_rounds),
        "--meta-max-tokens", str(args.max_tokens), "--expert-max-tokens", str(args.max_tokens),
        "--concurrency", "1", "--sandbox", args.sandbox, "--json", *flags,
    ]  # fmt: skip
    report = conductor_json(cmd, home / arm)
    return Path(report["folder"]) / "results.jsonl"


def _events(transcript: Path) -> list[dict[str, Any]]:
    if not transcript.is_file():
        return []
    return [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]


def arm_figures(arm: str, results: Path) -> dict[str, Any]:
    """An arm's figures, item by item, from its results and transcripts."""
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    # A comparison batch (`--methods meta,standard`, learning off) serves as the `off`
    # arm: its meta runs, named by item as a plain batch's are.
    rows = [r for r in rows if r.get("final") and r.get("method") in (None, "meta")]
    items = {}
    for r in rows:
        events = _events(results.parent / r["transcript"])
        started = next((e for e in events if e["kind"] == "run_started"), None)
        recall = next((e for e in events if e["kind"] == "recall"), None)
        handed = any(e["kind"] == "meta_turn_started" and e.get("handed_calls") for e in events)
        written = next((e for e in events if e["kind"] == "notes_written"), {})
        learning = written.get("usage") or {}
        items[str(r["item_id"]).rsplit("@", 1)[0]] = {
            "line": r.get("line"),
            "right": bool((r.get("score") or {}).get("correct")),
            "answer": r.get("answer"),
            "rounds": r.get("rounds", 0),
            "code_runs": r.get("sandbox_runs", 0),
            "handed": handed,
            "tokens": r["usage"].get("input_tokens", 0) + r["usage"].get("output_tokens", 0),
            "seconds": r.get("duration_s", 0.0),
            "recall_s": (recall["ts"] - started["ts"]) if recall and started else 0.0,
            "recall_tokens": recall.get("tokens", 0) if recall else 0,
            "learning_tokens": learning.get("input_tokens", 0) + learning.get("output_tokens", 0),
            "notes_written": r.get("notes_written", 0),
        }
    return {"arm": arm, "items": items}


def summary(arm: dict[str, Any], off: dict[str, Any] | None) -> dict[str, Any]:
    items = arm["items"]
    n = len(items)

    def mean(key: str) -> float:
        return round(sum(float(i[key]) for i in items.values()) / max(1, n), 2)

    out: dict[str, Any] = {
        "arm": arm["arm"],
        "items": n,
        "right": sum(i["right"] for i in items.values()),
        "handed": sum(i["handed"] for i in items.values()),
        "with_code_run": sum(1 for i in items.values() if i["code_runs"]),
        **{f"{k}_mean": mean(k) for k in ("rounds", "tokens", "seconds", "recall_s",
                                          "recall_tokens", "learning_tokens")},
    }  # fmt: skip
    if off is not None:
        common = [k for k in items if k in off["items"]]
        out["paired_items"] = len(common)
        out["right_only_here"] = sum(
            1 for k in common if items[k]["right"] and not off["items"][k]["right"]
        )
        out["right_only_off"] = sum(
            1 for k in common if off["items"][k]["right"] and not items[k]["right"]
        )
    # (a): once a run's program passed the checker, how often the items after were right.
    lines = sorted(items.values(), key=lambda i: i["line"] or 0)
    first = next((n for n, i in enumerate(lines) if i["right"] and i["code_runs"]), None)
    after = lines[first + 1 :] if first is not None else []
    out["first_right_with_code_at"] = None if first is None else first + 1
    out["right_after_it"] = f"{sum(i['right'] for i in after)}/{len(after)}" if after else "-"
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'arm':<6} {'right':>7} {'vs off +/-':>10} {'handed':>6} {'code':>5} {'rounds':>6} "
        f"{'tokens':>7} {'s/item':>6} {'recall s':>8} {'recall tok':>10} {'learn tok':>9} "
        f"{'1st right w/ code':>17} {'right after':>11}"
    )
    for r in rows:
        paired = f"+{r['right_only_here']}/-{r['right_only_off']}" if "paired_items" in r else "-"
        print(
            f"{r['arm']:<6} {r['right']:>3}/{r['items']:<3} {paired:>10} {r['handed']:>6} "
            f"{r['with_code_run']:>5} {r['rounds_mean']:>6} {r['tokens_mean']:>7.0f} "
            f"{r['seconds_mean']:>6.1f} {r['recall_s_mean']:>8.2f} {r['recall_tokens_mean']:>10.0f} "
            f"{r['learning_tokens_mean']:>9.0f} {r['first_right_with_code_at'] or '-':>17} "
            f"{r['right_after_it']:>11}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # `make bench` runs a few; the A/B in docs/methods.md is `--limit 40`.
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    parser.add_argument("--from-results", nargs="*", default=[], metavar="ARM=RESULTS")
    args = parser.parse_args()
    if args.from_results:
        found = {a: Path(p) for a, p in (x.split("=", 1) for x in args.from_results)}
    else:
        binary = os.environ.get("CONDUCTOR_LLAMA_SERVER")
        if not binary or not args.gguf.is_file():
            # `make bench` on a machine without the model: say so, as a table and JSON.
            why = "needs $CONDUCTOR_LLAMA_SERVER and the Qwen GGUF (--gguf)"
            print(f"arm  skipped: {why}")
            print(json.dumps({"model": ALIAS, "skipped": why}))
            return
        home = Path(tempfile.mkdtemp(prefix="experience-ab-"))
        items = cut(TASKS_DIR / "GameOf24.jsonl", 1, args.limit, home / "GameOf24.jsonl")
        args.gpt4_notebook = gpt4_notebook(home, skip=max(args.limit, 40))
        proc, url = serve(binary, args.gguf, ["--jinja"], home / "llama.log", 1)
        try:
            found = {arm: run_arm(arm, items, url, home, args) for arm in args.arms.split(",")}
        finally:
            proc.terminate()
    figures = {arm: arm_figures(arm, path) for arm, path in found.items()}
    off = figures.get("off")
    rows = [summary(f, off if arm != "off" else None) for arm, f in figures.items()]
    print_table(rows)
    print(json.dumps({"model": ALIAS, "rows": rows}))


if __name__ == "__main__":
    main()
