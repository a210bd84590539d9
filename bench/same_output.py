"""Check: the README's commands print the same with this checkout as with another.

A refactor that moves code below the CLI must not change what a user sees. Each of the
README's commands that runs offline (the demo model, the subprocess sandbox so that no
engine is needed, the shared data beside the checkout) runs in a fresh home, once with
`--tree` (an earlier commit's checkout) and once with this one; their stdout, stderr and
exit codes are compared after what differs between any two runs is written alike (run
and batch ids, times, durations, the home's path). The baseline is this checkout against
itself, run twice in the same way: a command that differs there is not deterministic,
and its row says so rather than counting as a change.

    .venv/bin/python bench/same_output.py [--tree PATH]   # without --tree: itself, twice

Prints a table, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "meta-prompting"
WITH_PYTHON = SHARED / "transcripts" / "with-python"

QUESTION = "Use 4 5 6 10 to make 24"
SORTING = "Sort the following words alphabetically: List: pear apple fig"

SUBPROCESS = ("--sandbox", "subprocess")
# (name, argv); RUN, RUN2, BATCH and BATCH_DIR stand for the first run, the second, the
# batch's id and its folder.
# fmt: off
COMMANDS: list[tuple[str, list[str]]] = [
    ("help", ["--help"]),
    ("solve --help", ["solve", "--help"]),
    ("solve", ["solve", QUESTION, *SUBPROCESS]),
    ("solve --json", ["solve", SORTING, *SUBPROCESS, "--json"]),
    ("solve --quiet", ["solve", "What is the capital of France?", "--quiet"]),
    ("solve zero-shot-cot", ["solve", QUESTION, "--method", "zero-shot-cot"]),
    ("runs list", ["runs", "list"]),
    ("runs list --json", ["runs", "list", "--json"]),
    ("runs search", ["runs", "search", "24"]),
    ("runs show", ["runs", "show", "RUN"]),
    ("runs export --markdown", ["runs", "export", "RUN", "--markdown"]),
    ("runs diff", ["runs", "diff", "RUN", "RUN2"]),
    ("runs audit", ["runs", "audit"]),
    ("runs audit RUN", ["runs", "audit", "RUN"]),
    ("runs import", ["runs", "import", str(WITH_PYTHON / "GameOf24.jsonl")]),
    ("score", ["score", str(WITH_PYTHON / "GameOf24.jsonl")]),
    ("replay", ["replay", str(WITH_PYTHON / "word_sorting.jsonl"), "--limit", "5"]),
    ("batch", ["batch", str(SHARED / "tasks" / "GameOf24.jsonl"), "--limit", "3", *SUBPROCESS]),
    ("batch --methods", ["batch", str(SHARED / "tasks" / "word_sorting.jsonl"), "--limit", "2",
                         "--methods", "meta,standard", *SUBPROCESS]),
    ("batch-report", ["batch-report", "BATCH"]),
    ("score BATCH", ["score", "BATCH_DIR"]),
    ("notebook list", ["notebook", "list"]),
    ("notebook search", ["notebook", "search", "make 24 from four numbers"]),
    ("notebook stats", ["notebook", "stats"]),
    ("an unknown run", ["runs", "show", "no-such-run"]),
    ("an empty question", ["solve", " "]),
]
# fmt: on

# What differs between two runs of the same command, written alike before comparing.
VARYING = [
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}"), "RUN-ID"),  # run ids
    (re.compile(r"-compare-[0-9a-f]{12}|-[0-9a-f]{12}\b"), "-BATCH-ID"),  # batch ids
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?"), "TIME"),
    (re.compile(r"\b\d{2}:\d{2}(:\d{2})?\b"), "CLOCK"),
    (re.compile(r"\d+(\.\d+)?\s?(ms|s|sec|seconds|min)\b"), "DURATION"),
    (
        re.compile(r'"(duration_s|ts|started_at|finished_at|elapsed_s|seconds)":\s?[\d.e+-]+'),
        r'"\1": N',
    ),
    (re.compile(r"\d+(\.\d+)?/s\b"), "RATE"),
    (re.compile(r"\b[nt][0-9a-f]{11}\b"), "NOTE-ID"),  # note and task type ids
    (re.compile(r'"(pid|pid_started)":\s?"?\d+"?'), r'"\1": N'),
    (re.compile(r"(seconds per item \(median / p90\) \|)[^|\n]*"), r"\1 N / N "),
    (re.compile(r"peak memory \d+(\.\d+)? MB"), "peak memory N MB"),
    (re.compile(r"/h[ABC]/"), "/h?/"),  # the home's name, where a wrapped line cut it
]


def normalised(text: str, home: Path) -> str:
    text = text.replace(str(home), "HOME")
    for pattern, stand_in in VARYING:
        text = pattern.sub(stand_in, text)
    return text


def run_all(tree: Path, home: Path) -> dict[str, tuple[int, str]]:
    """Each command's exit code and normalised output, in a fresh home, in order."""
    home.mkdir(parents=True)
    config = home / "config.toml"
    config.touch()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CONDUCTOR_", "OPENAI_"))},
        "CONDUCTOR_HOME": str(home / "data"),
        "CONDUCTOR_CONFIG": str(config),
        "PYTHONPATH": str(tree),
        "COLUMNS": "100",
        "ANTHROPIC_API_KEY": "",
        "NO_COLOR": "1",
    }
    names: dict[str, str] = {}
    out: dict[str, tuple[int, str]] = {}

    def conductor(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "conductor.cli", *argv], env=env, cwd=tree,
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip

    for name, argv in COMMANDS:
        if {"RUN", "RUN2"} & set(argv) and "RUN" not in names:
            listed = conductor("runs", "list", "--json").stdout.splitlines()
            oldest_first = [json.loads(line)["run_id"] for line in reversed(listed) if line]
            names["RUN"], names["RUN2"] = oldest_first[0], oldest_first[1]
        done = conductor(*(names.get(arg, arg) for arg in argv))
        out[name] = (
            done.returncode,
            normalised(done.stdout + "\n--stderr--\n" + done.stderr, home),
        )
        if name == "batch":
            (folder,) = (home / "data" / "batches").iterdir()
            names["BATCH"], names["BATCH_DIR"] = folder.name, str(folder)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=None, help="the checkout compared with")
    args = parser.parse_args()
    if not WITH_PYTHON.is_dir():
        raise SystemExit(f"{SHARED} is missing: the shared data sits beside the checkout")
    other = (args.tree or REPO).resolve()
    with tempfile.TemporaryDirectory(prefix="bench-same-output-") as tmp:
        ours = run_all(REPO, Path(tmp) / "hA")
        again = run_all(REPO, Path(tmp) / "hB")
        theirs = run_all(other, Path(tmp) / "hC")
    rows = []
    for name, _ in COMMANDS:
        steady = ours[name] == again[name]
        same = ours[name] == theirs[name]
        verdict = "same" if same else ("differs" if steady else "not deterministic")
        rows.append({"command": name, "exit": ours[name][0], "verdict": verdict})
        if verdict != "same":
            # What differs: from the other tree, or (not deterministic) between two runs here.
            before, label = (theirs, other.name) if steady else (again, "this checkout again")
            diff = difflib.unified_diff(
                before[name][1].splitlines(), ours[name][1].splitlines(),
                f"{name} ({label})", f"{name} (this checkout)", lineterm="", n=1,
            )  # fmt: skip
            print("\n".join(list(diff)[:40]))
    print(f"the README's commands, this checkout against {other}")
    print("command | exit | verdict")
    for row in rows:
        print(f"{row['command']} | {row['exit']} | {row['verdict']}")
    counts = {
        v: sum(r["verdict"] == v for r in rows) for v in ("same", "differs", "not deterministic")
    }
    print(json.dumps({"tree": str(other), "commands": len(rows), **counts, "rows": rows}))


if __name__ == "__main__":
    main()
