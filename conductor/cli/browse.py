"""`conductor notebook list|show`: the notes and task types, as a person reads them
(conductor/export/notebook_views.py), and the notebook every `conductor notebook`
subcommand opens (`open_book`). Reads go through `lessons.storage.queries`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from conductor.export.notebook_views import note_view, notes_table, type_view, types_table
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from rich.console import Console

    from lessons.storage.store import Notebook, TaskTypeRecord


def open_book(args: argparse.Namespace, *, create: bool = False, reader: bool = False) -> Notebook:
    """The notebook the flags or settings name, judging with the application's
    scorers; only `import` may create one. A `reader` (list, show, stats, export)
    opens it read-only where it cannot be written (a read-only home)."""
    from conductor.config.flags import settings_from_args
    from conductor.scoring.notebook import open_notebook
    from lessons.storage.store import default_path

    path = Path(settings_from_args(args).notebook or default_path())
    if not create and not path.expanduser().exists():
        raise UserFacingError(
            f"no notebook at {path} yet. Runs create it as they learn (`conductor solve ...`); "
            "`conductor notebook import FILE` fills a new one; --notebook PATH picks another."
        )
    where = path.expanduser()
    writable = os.access(where, os.W_OK) and os.access(where.parent, os.W_OK)
    return open_notebook(path, read_only=reader and where.exists() and not writable)


def console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def run_list(args: argparse.Namespace) -> int:
    from lessons.storage.queries import lookup_type, recent_notes, task_types

    book = open_book(args, reader=True)
    if args.types:
        types = task_types(book, limit=args.limit)
        if args.json:
            for task_type in types:
                print(json.dumps(dict(task_type), ensure_ascii=False))
            return 0
        console().print(types_table(types))
        return 0
    type_id = None
    if args.type:
        kind = lookup_type(book, args.type)
        if kind is None:
            raise UserFacingError(
                f"no task type {args.type!r}; `conductor notebook list --types` lists them."
            )
        type_id = kind["id"]
    notes = recent_notes(
        book, retired=args.retired, type_id=type_id, kind=args.kind or None, limit=args.limit
    )
    if args.json:
        for note in notes:
            print(json.dumps({k: v for k, v in note.items() if k != "terms"}, ensure_ascii=False))
        return 0
    console().print(notes_table(notes))
    if not notes:
        print("no notes yet: every finished run is distilled into the notebook.", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from lessons.storage.queries import lookup_note, lookup_type, note_history, note_recalls

    book = open_book(args, reader=True)
    note = lookup_note(book, args.id)
    if note is None:
        kind = lookup_type(book, args.id)
        if kind is None:
            raise UserFacingError(
                f"no note or task type {args.id!r} in {book.path}; "
                "`conductor notebook list` shows the ids."
            )
        return _show_type(book, kind, args.json)
    history = note_history(book, note["id"])
    recalls = note_recalls(book, note["id"])
    if args.json:
        print(json.dumps({
            "note": {k: v for k, v in note.items() if k != "terms"},
            "history": [dataclasses.asdict(h) for h in history],
            "recalls": [dataclasses.asdict(r) for r in recalls],
        }, ensure_ascii=False))  # fmt: skip
        return 0
    kind = lookup_type(book, note["type_id"]) if note["type_id"] else None
    out = console()
    for shown in note_view(note, kind, history, recalls):
        out.print(shown, markup=False)
    return 0


def _show_type(book: Notebook, kind: TaskTypeRecord, as_json: bool) -> int:
    from lessons.storage.queries import type_history

    history = type_history(book, kind["id"])
    if as_json:
        entries = [dataclasses.asdict(h) for h in history]
        print(json.dumps({"type": kind, "history": entries}, ensure_ascii=False))
        return 0
    out = console()
    for shown in type_view(kind, history):
        out.print(shown, markup=False)
    return 0
