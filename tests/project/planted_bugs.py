"""Plant one bug in each package and show that the fast tier catches it.

    .venv/bin/python tests/project/planted_bugs.py [--workers N] [PACKAGE ...]

For each package, a copy of the checkout's committed files gets one small change of
behaviour (not a syntax error: a bug a person could make), and the fast tier's tests of
that package (its mirrored test folder, `-m "not slow and not serial"`) run on the copy.
The table says which tests failed; a planted bug no fast test catches is a hole in the
fast tier, and the script exits 1. A change that no longer applies (the code moved) is
reported as such, so the list is kept up to date rather than silently passing.

Not a test itself: each row runs a part of the suite (minutes in all). docs/testing.md
gives its last result.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Plant:
    package: str
    file: str
    old: str
    new: str
    what: str
    tests: tuple[str, ...]


PLANTS = (
    Plant(
        "conductor_kernel",
        "conductor_kernel/protocol.py",
        "        calls=calls,\n        final_answer=answer,\n",
        "        calls=calls[:1],\n        final_answer=answer,\n",
        "a turn's expert calls after the first are dropped",
        ("tests/kernel",),
    ),
    Plant(
        "record",
        "record/fold.py",
        "    def note(event: Event, where: RoundView) -> None:\n        where.events.append(event)\n",
        "    def note(event: Event, where: RoundView) -> None:\n",
        "the fold loses a round's own events (observations, nudges)",
        ("tests/record",),
    ),
    Plant(
        "experts",
        "experts/pricing.py",
        "            + usage.cache_read_tokens * self.cache_read\n",
        "            + usage.cache_read_tokens * self.input\n",
        "cached prompt tokens are billed at the full input price",
        ("tests/experts",),
    ),
    Plant(
        "sandbox",
        "sandbox/bwrap/launch.py",
        '"--unshare-net", ',
        "",
        "bubblewrap cells share the host's network",
        ("tests/sandbox",),
    ),
    Plant(
        "transcripts",
        "transcripts/index.py",
        "                return [as_record(row) for row in rows]\n",
        "                return [as_record(row) for row in rows][1:]\n",
        "a search loses its best match",
        ("tests/transcripts",),
    ),
    Plant(
        "lessons",
        "lessons/read/render.py",
        "        return used + estimate_tokens(text) + 1 <= budget_tokens\n",
        "        return used + estimate_tokens(text) + 1 <= 2 * budget_tokens\n",
        "recall's rendering overruns its token budget",
        ("tests/lessons",),
    ),
    Plant(
        "conductor",
        "conductor/scoring/game24.py",
        "    if Counter(used) != Counter(numbers):\n",
        "    if set(used) != set(numbers):\n",
        "Game of 24 accepts an expression that uses a number twice",
        ("tests/conductor/scoring",),
    ),
    Plant(
        "tui",
        "tui/screens/runs.py",
        'Binding("ctrl+r", "refresh",',
        'Binding("ctrl+e", "refresh",',
        "the Runs screen's refresh key moves",
        ("tests/tui",),
    ),
)


def copy_of_checkout(into: Path) -> None:
    """The committed tree (what CI would test), unpacked into `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def plant(copy: Path, bug: Plant) -> bool:
    path = copy / bug.file
    text = path.read_text()
    if bug.old not in text:
        return False
    path.write_text(text.replace(bug.old, bug.new, 1))
    return True


def run_fast_tier(copy: Path, tests: tuple[str, ...], workers: str) -> tuple[int, list[str]]:
    report = copy / "report.json"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
        "-n", workers, "--timeout=300", "-m", "not slow and not serial",
        f"--junitxml={report.with_suffix('.xml')}", *tests,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=copy, capture_output=True, text=True)
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, flags=re.M)
    return done.returncode, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", help="only these packages")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (default 2)")
    args = parser.parse_args(argv)
    chosen = [p for p in PLANTS if not args.packages or p.package in args.packages]
    rows, holes = [], 0
    for bug in chosen:
        with tempfile.TemporaryDirectory(prefix=f"planted-{bug.package}-") as tmp:
            copy = Path(tmp)
            copy_of_checkout(copy)
            if not plant(copy, bug):
                rows.append({"package": bug.package, "bug": bug.what, "caught_by": None,
                             "result": "no longer applies: update PLANTS"})  # fmt: skip
                holes += 1
                continue
            code, failed = run_fast_tier(copy, bug.tests, args.workers)
        caught = code != 0 and bool(failed)
        holes += not caught
        rows.append({"package": bug.package, "bug": bug.what, "caught_by": failed[:1] or None,
                     "result": "caught" if caught else f"NOT caught (pytest exit {code})"})  # fmt: skip
        print(f"{bug.package:18} {rows[-1]['result']:10} {bug.what}"
              + (f"\n{'':18} by {failed[0]}" if failed else ""), flush=True)  # fmt: skip
    print(json.dumps({"planted": len(rows), "uncaught": holes, "rows": rows}))
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
