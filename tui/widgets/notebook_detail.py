"""The right-hand pane of the Notebook screen: one task type's experience, or one note.

Pure drawing from rows the screen read; nothing here touches the database.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Static

from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible


def _json_list(value: str | None) -> list[str]:
    """An experience list as stored (JSON); a damaged one is shown as text, not hidden."""
    try:
        items = json.loads(value or "[]")
    except json.JSONDecodeError:
        return [f"(unreadable list: {value})"]
    items = items if isinstance(items, list) else [items]
    return [visible(str(item)) for item in items]  # model-written: control chars visible


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts or 0).strftime("%Y-%m-%d %H:%M")


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _shown(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row with every text field's control characters made visible (models wrote
    the names, keys, texts, code, questions and answers)."""
    return {k: visible(v) if isinstance(v, str) else v for k, v in row.items()}


def type_renderable(row: Mapping[str, Any], note_count: int) -> RenderableType:
    row = _shown(row)
    text = Text()
    text.append(row["name"], "bold")
    text.append(f" · {row['id']}", "dim")
    if row.get("retired"):
        text.append(" · retired", "bold red")
    text.append("\n")
    if row.get("description"):
        text.append(row["description"] + "\n")
    text.append(
        f"{plural(note_count, 'note')} · {plural(row['members'], 'question')} · runs {row['runs']}: "
        f"{row['correct']} right, {row['wrong']} wrong, {row['failed']} failed · "
        f"experience v{row['experience_version']}\n",
        "dim",
    )
    for title, items in (
        ("Suggestions", _json_list(row.get("suggestions"))),
        ("Procedure", _json_list(row.get("procedure"))),
    ):
        text.append(f"\n{title}\n", "bold underline")
        if not items:
            text.append("  none yet\n", "dim")
        for i, item in enumerate(items, 1):
            bullet = f"  {i}. " if title == "Procedure" else "  • "
            text.append(bullet + item + "\n")
    return text


def note_renderable(row: Mapping[str, Any], type_name: str | None) -> RenderableType:
    row, type_name = _shown(row), visible(type_name) if type_name else type_name
    head = Text()
    head.append(f"[{row['kind']}] ", "bold magenta")
    head.append(row["key"] or "(no key)", "bold")
    head.append(f" · {row['id']}", "dim")
    if row.get("retired"):
        head.append(f" · retired: {row.get('retired_reason') or 'no reason given'}", "bold red")
    head.append("\n")
    head.append(
        f"type {type_name or row.get('type_id') or 'none'} · confidence {row['confidence']:.2f} · "
        f"helpful {row['helpful']} · harmful {row['harmful']} · used {row['uses']} · "
        f"support {row['support']}\n",
        "dim",
    )
    head.append("verified: ", "bold")
    head.append(f"{row['verification']} ({row['outcome']}) · by {row['author']}\n")
    head.append("source run: ", "bold")
    head.append(row.get("source_run") or "none recorded", "cyan" if row.get("source_run") else "")
    if row.get("source_task"):
        head.append(f" · {row['source_task']}")
    head.append(f" · {_when(row.get('created_at'))}\n")
    if row.get("source_question"):
        head.append("question: ", "bold")
        head.append(_one_line(row["source_question"], 300) + "\n")
    if row.get("answer"):
        head.append("answer: ", "bold")
        head.append(_one_line(row["answer"], 200) + "\n")
    head.rstrip()
    parts: list[RenderableType] = [head]
    if row.get("text"):
        parts.append(Text("\n" + row["text"]))
    if row.get("code"):
        parts.append(Text(""))
        parts.append(Syntax(row["code"], "python", theme="ansi_dark", word_wrap=True))
    return Group(*parts)


class NotebookDetail(Static):
    """Shows whatever the screen last chose: a type, a note, or a hint."""

    def show_type(self, row: Mapping[str, Any], note_count: int) -> None:
        self.update(type_renderable(row, note_count))

    def show_note(self, row: Mapping[str, Any], type_name: str | None) -> None:
        self.update(note_renderable(row, type_name))

    def show_hint(self, message: str) -> None:
        self.update(Text(message, style="dim"))
