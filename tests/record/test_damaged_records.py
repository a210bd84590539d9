"""Every reader of a run copes with a damaged or missing record: a clear message, never a
traceback (runs show/export/diff, audit), and text from the record or the user never
read as terminal markup in that message."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from published_builder import sorting_record

from conductor.cli import main
from conductor_kernel.text.display import UNSAFE


def _solved_run(capsys: pytest.CaptureFixture[str]) -> tuple[str, Path]:
    question = "Sort these words: pear apple fig"
    assert main(["solve", question, "--sandbox", "subprocess", "--quiet", "--no-learn"]) == 0
    capsys.readouterr()
    assert main(["runs", "list", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    return row["run_id"], Path(row["path"])


def _gone(path: Path) -> None:
    path.unlink()


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _unreadable(path: Path) -> None:
    path.chmod(0)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "deleted": _gone,
    "a folder": _folder,
    "empty": _empty,
    "unreadable": _unreadable,
}


def _readers(run: str, tmp: Path) -> list[list[str]]:
    return [
        ["runs", "show", run],
        ["runs", "export", run, "--html", "-o", str(tmp / "r.html")],
        ["runs", "export", run, "--markdown", "-o", str(tmp / "r.md")],
        ["runs", "diff", run, run],
        ["runs", "diff", run, run, "--html", "-o", str(tmp / "d.html")],
        ["runs", "audit", run],
    ]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_or_missing_transcript_gives_every_reader_a_clear_message(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if damage == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads any file")
    run, path = _solved_run(capsys)
    DAMAGE[damage](path)
    try:
        for argv in _readers(run, tmp_path):
            if damage == "empty" and argv[:2] == ["runs", "audit"]:
                continue  # an empty transcript audits as a run with no findings
            assert main(argv) == 2, argv
            err = " ".join(capsys.readouterr().err.split())
            assert path.name in err.replace(" ", ""), (argv, err)
            assert "Traceback" not in err
    finally:
        if path.is_file():
            path.chmod(0o644)


def test_a_transcript_runs_db_could_not_index_is_still_read_by_its_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run, path = _solved_run(capsys)
    lines = path.read_bytes().splitlines(keepends=True)
    # The first line cut: runs.db, rebuilt, cannot index the run, yet the file holds it.
    path.write_bytes(lines[0][:80] + b"".join(lines[1:]))
    home = Path(os.environ["CONDUCTOR_HOME"])
    for name in os.listdir(home):
        if name.startswith("runs.db"):
            os.unlink(home / name)
    assert main(["runs", "reindex"]) == 0
    capsys.readouterr()
    for argv in _readers(run, tmp_path):
        assert main(argv) == 0, argv
        captured = capsys.readouterr()
        assert f"{path}:1" in " ".join(captured.err.split()).replace(" ", "") or argv[:2] == [
            "runs",
            "audit",
        ]
    assert "apple fig pear" in (tmp_path / "r.md").read_text()


@pytest.mark.parametrize(
    "ref",
    [
        "[/x]",
        "[bold red]x[/]",
        "[link=https://evil.example]x",
        "\x1b]52;c;cHduZWQ=\x07",
        "a\u202eb",
    ],
)
def test_an_error_message_is_shown_as_text_never_as_markup(
    ref: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "show", ref]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "no run matches" in err
    assert not UNSAFE.search(err.replace("\n", ""))
    if ref.startswith("["):
        assert ref.split("]")[0] + "]" in err  # the brackets are shown, not consumed


def test_an_error_message_with_markup_in_a_path_is_shown(tmp_path: Path, capsys) -> None:
    weird = tmp_path / "[bold]x[/bold]" / "run.jsonl"
    weird.parent.mkdir(parents=True)
    shutil.copyfile(__file__, weird)  # not a transcript: its first line is no JSON
    assert main(["runs", "show", str(weird)]) == 2
    assert "[bold]x[/bold]" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["missing folder", "a folder", "under a file"])
def test_an_export_to_a_path_that_cannot_be_written_says_so(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = _solved_run(capsys)
    (tmp_path / "file").write_text("x")
    out = {
        "missing folder": tmp_path / "no" / "such" / "x.html",
        "a folder": tmp_path,
        "under a file": tmp_path / "file" / "x.html",
    }[where]
    for argv in (
        ["runs", "export", run, "--html", "-o", str(out)],
        ["runs", "export", run, "--markdown", "-o", str(out)],
        ["runs", "diff", run, run, "--html", "-o", str(out)],
    ):
        assert main(argv) == 2, argv
        err = " ".join(capsys.readouterr().err.split())
        assert "cannot write" in err and "-o" in err, err


def test_import_names_a_file_with_brackets_as_it_is(tmp_path: Path, capsys) -> None:
    odd = tmp_path / "[bold]x" / "[red]y.jsonl"
    odd.parent.mkdir()
    odd.write_text('{"bad": 1}\n')
    assert main(["runs", "import", str(odd)]) == 2  # not one record could be read
    captured = capsys.readouterr()
    assert "[bold]x/[red]y.jsonl" in " ".join(captured.err.split()).replace(" ", "")
    good = odd.with_name("[red]z.jsonl")
    good.write_text('{"bad": 1}\n'.join([json.dumps(sorting_record()) + "\n", ""]))
    assert main(["runs", "import", str(good)]) == 0
    captured = capsys.readouterr()
    assert "[bold]x/[red]z.jsonl" in " ".join(captured.err.split()).replace(" ", "")
    assert "[red]z.jsonl" in captured.out
