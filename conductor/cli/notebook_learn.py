"""`conductor notebook learn FILE...`: learn from finished runs on disk, ours or the
paper's published format, with their targets (ExpNote's training stage) or without
(`--without-targets`: only what the runs' own evidence supports, MoT-style).

A file is read as our transcript when its first line is one of our events, else as
published records (one run per record). Progress goes to stderr; the summary counts the
runs learned and the notes written at each trust level (lessons/values.py; a note two
runs support counts once, at the level of the last).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural

if TYPE_CHECKING:  # `conductor notebook` builds this parser; the events load when it runs
    from conductor_kernel.events import Event


def attach(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="transcripts or published .jsonl")
    parser.add_argument(
        "--without-targets",
        action="store_true",
        help="withhold the runs' targets: notes are trusted only on the runs' own evidence",
    )
    parser.add_argument("--limit", type=int, help="learn only the first N runs of each file")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _ours(path: Path) -> bool:
    from record.file_kind import file_kind

    return file_kind(path) == "transcript"


def runs_of(path: Path, limit: int | None) -> Iterator[list[Event]]:
    """Each run of the file as its events, in the file's order."""
    from conductor.replay.files import published_runs
    from record.reader import iter_events

    if _ours(path):
        runs: dict[str, list[Event]] = {}
        for event in iter_events(path):
            runs.setdefault(event.run_id, []).append(event)
        yield from list(runs.values())[:limit]
        return
    yield from published_runs(path, limit=limit)


def withheld(events: list[Event]) -> list[Event]:
    """The run as if no target had been known."""
    from conductor_kernel.events import RunStarted

    return [dataclasses.replace(e, target=None) if isinstance(e, RunStarted) else e for e in events]


def run_learn(args: argparse.Namespace) -> int:
    from conductor.cli.browse import console, open_book
    from conductor.export.notebook_views import table
    from conductor_kernel.text.display import visible_line
    from lessons.values import TRUST_NAMES, trust_name
    from lessons.write.learn import learn_from_run

    if args.limit is not None and args.limit < 1:
        raise UserFacingError("--limit must be at least 1")
    paths = [Path(f) for f in args.files]
    for path in paths:
        if not path.is_file():
            raise UserFacingError(f"{path}: no such file (give transcripts or published .jsonl)")
    book = open_book(args, create=True)
    runs, learned, trusted = 0, 0, dict[str, str]()
    try:
        for path in paths:
            for events in runs_of(path, args.limit):
                runs += 1
                written = learn_from_run(book, withheld(events) if args.without_targets else events)
                if written is not None and written.note_ids:
                    learned += 1
                    for note_id in written.note_ids:  # a note two runs support counts once
                        trusted[note_id] = trust_name(written.verification, written.outcome)
                if runs % 50 == 0:
                    shown = visible_line(path.name)
                    print(
                        f"learned from {plural(runs, 'run')} ({shown})", file=sys.stderr, flush=True
                    )
    finally:
        book.close()
    notes = Counter(trusted.values())
    summary = {
        "runs": runs,
        "runs_with_notes": learned,
        "notes": {n: notes[n] for n in TRUST_NAMES},
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    listing = table(("trust", False), ("notes", True))
    for name in TRUST_NAMES:
        listing.add_row(name, str(notes[name]))
    console().print(f"{plural(runs, 'run')} read, {learned} wrote notes")
    console().print(listing)
    return 0
