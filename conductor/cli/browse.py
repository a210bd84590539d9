"""`conductor notebook list|show`: the notes and task types, as a person reads them.

Also what every `conductor notebook` subcommand shares: the notebook the flags name
(`open_book`) and the terminal helpers that show a model's words as text. The reads go
through `lessons.storage.queries`; nothing here writes SQL.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

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


def one_line(text: str | None, limit: int) -> str:
    """Text on one line, whole: a narrow terminal wraps it (never cut: issue 10); what a
    model wrote, so control characters are made visible (it is shown as text, never markup)."""
    from conductor_kernel.text.display import visible_line

    return visible_line(" ".join((text or "").split()))


def plain(text: str | None) -> Text:
    """What a model wrote, as rich Text: shown as typed, control characters visible."""
    from rich.text import Text

    from conductor_kernel.text.display import visible

    return Text(visible(text or ""))


def ident(text: str | None) -> Text:
    """An id, a kind or a run's name from the notebook (another's, after a merge or an
    import), as a table cell or a line: control characters visible, never markup."""
    return plain(one_line(text, 0))


def table(*columns: tuple[str, bool]) -> Table:
    """A compact table; (header, keep whole) per column. Ids are what a user types next
    (`notebook show`, `runs show`), so they are never cut; free text wraps instead."""
    from rich import box
    from rich.table import Table

    shown = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header, whole in columns:
        # fold, never an ellipsis: an id too long for its column wraps onto the next line
        shown.add_column(header, no_wrap=whole, overflow="fold")
    return shown


def run_list(args: argparse.Namespace) -> int:
    from lessons.storage.queries import lookup_type, recent_notes, task_types

    book = open_book(args, reader=True)
    if args.types:
        types = task_types(book, limit=args.limit)
        if args.json:
            for task_type in types:
                print(json.dumps(dict(task_type), ensure_ascii=False))
            return 0
        listing = table(("type", True), ("name", False), ("questions", True), ("runs", True),
                        ("correct", True), ("wrong", True), ("experience", True))  # fmt: skip
        for t in types:
            sizes = (
                f"{len(json.loads(t['suggestions']))} tips, {len(json.loads(t['procedure']))} steps"
            )
            listing.add_row(
                ident(t["id"]), plain(one_line(t["name"], 40)), str(t["members"]), str(t["runs"]),
                str(t["correct"]), str(t["wrong"]), sizes,
            )  # fmt: skip
        console().print(listing)
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
    listing = table(("note", True), ("kind", True), ("key", False), ("verified", True),
                    ("+/-/uses", True), ("from run", True))  # fmt: skip
    for n in notes:
        listing.add_row(
            ident(n["id"]), ident(n["kind"]), plain(one_line(n["key"], 36)),
            ident(n["verification"]), f"{n['helpful']}/{n['harmful']}/{n['uses']}",
            ident(n["source_run"] or "(imported)"),
        )  # fmt: skip
    console().print(listing)
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
    out = console()
    kind = lookup_type(book, note["type_id"]) if note["type_id"] else None
    out.print(
        plain(f"{note['id']} {note['kind']} · task type {kind['name'] if kind else '-'}"),
        style="bold",
    )
    out.print(
        f"from run: {one_line(note['source_run'] or '(imported, no run)', 0)}  "
        f"task: {one_line(note['source_task'] or '-', 0)}",
        markup=False,
    )
    out.print(f"question: {one_line(note['source_question'], 300)}", markup=False)
    out.print(f"answer: {one_line(note['answer'], 200)}", markup=False)
    out.print(
        f"verified: {one_line(note['verification'], 0)} ({one_line(note['outcome'], 0)}) · confidence {note['confidence']:.2f}"
        f" · helpful {note['helpful']} harmful {note['harmful']} uses {note['uses']}"
        f" · support {note['support']}" + (" · RETIRED: " + one_line(note["retired_reason"], 300) if note["retired"] else ""),
        markup=False,
    )  # fmt: skip
    out.print(plain(f"key: {note['key']}"))
    out.print(plain(note["text"]))
    if note["code"]:
        from rich.syntax import Syntax

        from conductor_kernel.text.display import visible

        out.print(Syntax(visible(note["code"]), "python"))
    out.print(f"history ({len(history)}):")
    for h in history:
        out.print(f"  {one_line(h.action, 0):<20} run {one_line(h.run_id or '-', 0)}", markup=False)
    if recalls:
        out.print(f"recalled in {len(recalls)} run(s) (latest first):")
        for r in recalls:
            out.print(
                f"  run {one_line(r.run_id, 0)} rank {r.rank} score {r.score:.2f} "
                f"→ {one_line(r.outcome, 0)}",
                markup=False,
            )
    return 0


def _show_type(book: Notebook, kind: TaskTypeRecord, as_json: bool) -> int:
    from lessons.storage.queries import type_history

    history = type_history(book, kind["id"])
    if as_json:
        entries = [dataclasses.asdict(h) for h in history]
        print(json.dumps({"type": kind, "history": entries}, ensure_ascii=False))
        return 0
    out = console()
    out.print(plain(f"{kind['id']} {kind['name']}"), style="bold")
    out.print(plain(kind["description"]))
    out.print(
        f"questions {kind['members']} · runs {kind['runs']} · correct {kind['correct']} "
        f"· wrong {kind['wrong']} · failed {kind['failed']}"
    )
    for title, items in (("suggestions", kind["suggestions"]), ("procedure", kind["procedure"])):
        out.print(f"{title}:")
        for item in json.loads(items):
            out.print(plain(f"  - {item}"))
    out.print(f"history: {one_line(', '.join(h.action for h in history), 0)}", markup=False)
    return 0
