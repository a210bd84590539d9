"""A notebook's ids, kinds, verifications and run names, which a merged or imported
notebook sets, shown by `notebook list/show/search/stats` with control characters
visible and markup as typed (model text: test_nb_cli_escaping.py)."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path

import pytest
from nb_support import sort_run
from rich.console import Console

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from conductor_kernel.text.display import UNSAFE, visible_line
from lessons.write.learn import learn_from_run


def _terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What every Console made from now on writes, as a colour terminal would get it."""
    out = io.StringIO()
    original = Console.__init__

    def init(self: Console, *args: object, **kwargs: object) -> None:
        kwargs.update(file=out, force_terminal=True, width=400, color_system="truecolor")
        original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "__init__", init)
    return out


def _shown(out: io.StringIO, capsys: pytest.CaptureFixture[str]) -> str:
    printed = capsys.readouterr()
    text = out.getvalue() + printed.out + printed.err
    out.seek(0)
    out.truncate()
    return re.sub(r"\x1b\[[0-9;]*m", "", text)  # rich's own colour codes are ours


HOSTILE_IDS = ["n\x1b]0;title\x07", "n[bold]x[/bold]\u202e", "n\x9b31m\x08"]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_a_merged_notebooks_ids_and_names_are_shown_inert(
    hostile: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "nb.db"
    book = open_notebook(path)
    learn_from_run(book, sort_run("run-a", ["pear", "apple"], target="apple pear"))
    book.close()
    with sqlite3.connect(path) as db:  # as a notebook from elsewhere may hold them
        (note,) = db.execute("select id from notes limit 1").fetchone()
        (kind,) = db.execute("select id from task_types limit 1").fetchone()
        db.execute("delete from notes where id != ?", (note,))
        db.execute(
            "update notes set id = ?, kind = ?, source_run = ?, verification = ?",
            (f"{hostile}1", hostile, hostile, hostile),
        )
        db.execute("update note_history set note_id = ?, action = ?, run_id = ?",
                   (f"{hostile}1", hostile, hostile))  # fmt: skip
        db.execute("update task_types set id = ? where id = ?", (f"{hostile}2", kind))
        db.execute("update notes set type_id = ?", (f"{hostile}2",))
    out = _terminal(monkeypatch)
    flag = ("--notebook", str(path))
    views = {}
    for view, argv in {
        "list": ["notebook", "list", *flag],
        "list types": ["notebook", "list", "--types", *flag],
        "show note": ["notebook", "show", f"{hostile}1", *flag],
        "show type": ["notebook", "show", f"{hostile}2", *flag],
        "search": ["notebook", "search", "sort words pear apple", *flag],
        "stats": ["notebook", "stats", *flag],
    }.items():
        assert main(argv) == 0, view
        views[view] = _shown(out, capsys)
    for view, shown in views.items():
        assert not UNSAFE.search(shown.replace("\n", "")), (view, shown)
    escaped = visible_line(f"{hostile}1")
    for view in ("list", "show note"):
        assert escaped in views[view], (view, views[view])
