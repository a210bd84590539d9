"""`conductor notebook list/show/search` show what models wrote (a note's text, key,
code, question and answer; a task type's name, description, tips and steps) as inert
text: control characters made visible, markup shown as typed, never interpreted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from nb_support import sort_run

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from conductor_kernel.text.display import UNSAFE
from lessons.write.learn import learn_from_run

# Each short enough that no view cuts it; each shown literally (escapes as `\x1b`...).
HOSTILE = [
    "\x1b]52;c;cHduZWQ=\x07q",
    "\x1b[2J\x1b[1A\x9b31m",
    "[/x] crash",
    "[bold red]m[/] [link=https://e.x]l[/link]",
    "a\u202eb\u200b\x00",
]


@pytest.fixture(params=range(len(HOSTILE)))
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    text = HOSTILE[request.param]
    path = tmp_path / "nb.db"
    book = open_notebook(path)
    learn_from_run(book, sort_run("run-a", ["pear", "apple"], target="apple pear"))
    book.close()
    with sqlite3.connect(path) as db:
        db.execute(
            "update notes set key = ?, text = ?, code = ?, source_question = ?, answer = ?",
            (text, text, text, text, text),
        )
        db.execute(
            "update task_types set name = ?, description = ?, suggestions = ?, procedure = ?",
            (text, text, json.dumps([text]), json.dumps([text])),
        )
    return path, text


def _shown(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0, argv
    out, err = capsys.readouterr()
    return out + err


def test_every_notebook_view_shows_model_text_inert(
    hostile: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, text = hostile
    book = open_notebook(path)
    note = book.read_one("select id from notes limit 1")["id"]
    kind = book.read_one("select id from task_types limit 1")["id"]
    book.close()
    flag = ("--notebook", str(path))
    views = {
        "show note": _shown(capsys, "notebook", "show", note, *flag),
        "show type": _shown(capsys, "notebook", "show", kind, *flag),
        "list": _shown(capsys, "notebook", "list", *flag),
        "list types": _shown(capsys, "notebook", "list", "--types", *flag),
        "search": _shown(capsys, "notebook", "search", "sort words pear apple", *flag),
    }
    for view, out in views.items():
        assert not UNSAFE.search(out), (view, out)
    # Where the whole text is shown, it is shown as typed (markup not consumed).
    literal = text if text.startswith("[") else None
    if literal:
        flat = {view: "".join(out.split()) for view, out in views.items()}
        for view in ("show note", "show type"):
            assert "".join(literal.split()) in flat[view], (view, views[view])
