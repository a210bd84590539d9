"""Reading a notebook needs no write access: `notebook list`, `show`, `stats` and
`export` work on a home mounted read-only (a backup, a shared archive)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from nb_support import sort_run

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from lessons.write.learn import learn_from_run


@pytest.fixture
def read_only_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home with a notebook, on a tmpfs then remounted read-only (needs root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        home = disk / "home"
        home.mkdir()
        book = open_notebook(home / "notebook.db")
        learn_from_run(book, sort_run("run-a", ["pear", "apple"], target="apple pear"))
        book.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        monkeypatch.setenv("CONDUCTOR_HOME", str(home))
        yield home
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_notebook_readers_work_on_a_read_only_home(
    read_only_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (read_only_home / "notebook.db").read_bytes()
    capsys.readouterr()
    assert main(["notebook", "list", "--json"]) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and {row["source_run"] for row in rows} == {"run-a"}
    assert main(["notebook", "show", str(rows[0]["id"])]) == 0
    assert "run-a" in capsys.readouterr().out
    assert main(["notebook", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == len(rows)
    dump = tmp_path / "export.jsonl"
    assert main(["notebook", "export", "-o", str(dump)]) == 0
    assert len(dump.read_text().split("\n")) > len(rows)
    assert (read_only_home / "notebook.db").read_bytes() == before
