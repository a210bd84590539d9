"""The notebook as a person reads it in a terminal: its task types and notes as tables,
one note or type in full. `conductor notebook list|show|test-tools|learn` print them.

What is shown comes from a notebook, which may be another's (after a merge or an
import) and holds a model's words: it is shown as text, never markup, with control
characters made visible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text


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


def types_table(types: Sequence[Any]) -> Table:
    listing = table(("type", True), ("name", False), ("questions", True), ("runs", True),
                    ("correct", True), ("wrong", True), ("experience", True))  # fmt: skip
    for t in types:
        sizes = f"{len(json.loads(t['suggestions']))} tips, {len(json.loads(t['procedure']))} steps"
        listing.add_row(
            ident(t["id"]), plain(one_line(t["name"], 40)), str(t["members"]), str(t["runs"]),
            str(t["correct"]), str(t["wrong"]), sizes,
        )  # fmt: skip
    return listing


def notes_table(notes: Sequence[Any]) -> Table:
    listing = table(("note", True), ("kind", True), ("key", False), ("verified", True),
                    ("+/-/uses", True), ("from run", True))  # fmt: skip
    for n in notes:
        listing.add_row(
            ident(n["id"]), ident(n["kind"]), plain(one_line(n["key"], 36)),
            ident(n["verification"]), f"{n['helpful']}/{n['harmful']}/{n['uses']}",
            ident(n["source_run"] or "(imported)"),
        )  # fmt: skip
    return listing


def note_view(
    note: Any, kind: Any, history: Sequence[Any], recalls: Sequence[Any]
) -> list[RenderableType]:
    """One note whole: where it came from, how it was verified, its text and code, its
    history and the runs that recalled it."""
    head = plain(f"{note['id']} {note['kind']} · task type {kind['name'] if kind else '-'}")
    head.stylize("bold")
    shown: list[RenderableType] = [
        head,
        f"from run: {one_line(note['source_run'] or '(imported, no run)', 0)}  "
        f"task: {one_line(note['source_task'] or '-', 0)}",
        f"question: {one_line(note['source_question'], 300)}",
        f"answer: {one_line(note['answer'], 200)}",
        f"verified: {one_line(note['verification'], 0)} ({one_line(note['outcome'], 0)}) · confidence {note['confidence']:.2f}"
        f" · helpful {note['helpful']} harmful {note['harmful']} uses {note['uses']}"
        f" · support {note['support']}" + (" · RETIRED: " + one_line(note["retired_reason"], 300) if note["retired"] else ""),
        plain(f"key: {note['key']}"),
        plain(note["text"]),
    ]  # fmt: skip
    if note["code"]:
        from rich.syntax import Syntax

        from conductor_kernel.text.display import visible

        shown.append(Syntax(visible(note["code"]), "python"))
    shown.append(f"history ({len(history)}):")
    shown += [f"  {one_line(h.action, 0):<20} run {one_line(h.run_id or '-', 0)}" for h in history]
    if recalls:
        shown.append(f"recalled in {len(recalls)} run(s) (latest first):")
        shown += [
            f"  run {one_line(r.run_id, 0)} rank {r.rank} score {r.score:.2f} "
            f"→ {one_line(r.outcome, 0)}"
            for r in recalls
        ]
    return shown


def type_view(kind: Any, history: Sequence[Any]) -> list[RenderableType]:
    """One task type whole: its counts, its suggestions and procedure, its history."""
    head = plain(f"{kind['id']} {kind['name']}")
    head.stylize("bold")
    shown: list[RenderableType] = [
        head,
        plain(kind["description"]),
        f"questions {kind['members']} · runs {kind['runs']} · correct {kind['correct']} "
        f"· wrong {kind['wrong']} · failed {kind['failed']}",
    ]
    for title, items in (("suggestions", kind["suggestions"]), ("procedure", kind["procedure"])):
        shown.append(f"{title}:")
        shown += [plain(f"  - {item}") for item in json.loads(items)]
    shown.append(f"history: {one_line(', '.join(h.action for h in history), 0)}")
    return shown
