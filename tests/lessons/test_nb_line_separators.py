"""A notebook export ends lines at "\\n" only: a note holding U+2028 or U+0085 (JSON
leaves them unescaped) imports whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nb_support import sort_run

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from lessons.write.learn import learn_from_run


def test_a_notebook_export_with_a_line_separator_in_a_note_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nb.db"
    book = open_notebook(path)
    learn_from_run(book, sort_run("run-a", ["pear", "apple"], target="apple pear"))
    book.close()
    dump = tmp_path / "export.jsonl"
    assert main(["notebook", "export", "-o", str(dump), "--notebook", str(path)]) == 0
    lines = dump.read_text(encoding="utf-8").split("\n")
    # A separator inside the first note's text, unescaped as JSON allows.
    at = next(n for n, line in enumerate(lines) if '"record": "note"' in line)
    note = json.loads(lines[at])
    # In its text: an id or a kind holding one is refused, as no id or kind holds one.
    field = "text"
    note[field] = note[field][:3] + "\u2028\x85" + note[field][3:]
    lines[at] = json.dumps(note, ensure_ascii=False)
    dump.write_text("\n".join(lines), encoding="utf-8")
    capsys.readouterr()
    code = main(["notebook", "import", str(dump), "--notebook", str(tmp_path / "other.db")])
    _, err = capsys.readouterr()
    assert code == 0, err
