"""`conductor notebook ...` and the notebook flags of `conductor solve`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from nb_support import sort_run

from conductor.cli import main
from conductor.config import load_settings
from conductor.scoring.notebook import open_notebook
from conductor.session import build_session
from lessons.write.learn import learn_from_run


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "nb.db"
    book = open_notebook(path)
    learn_from_run(book, sort_run("run-a", ["pear", "apple"], target="apple pear"))
    learn_from_run(book, sort_run("run-b", ["kiwi", "fig", "plum"], target="fig kiwi plum"))
    book.close()
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_every_note_with_its_run(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "notebook", "list", "--notebook", str(path), "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 5  # 2 examples, a merged program, a procedure, a tool
    assert {r["source_run"] for r in rows} == {"run-a", "run-b"}
    code, out, _ = cli(capsys, "notebook", "list", "--notebook", str(path), "--kind", "code")
    assert code == 0 and "run-a" in out and "code" in out
    code, out, _ = cli(capsys, "notebook", "list", "--types", "--json", "--notebook", str(path))
    (kind,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "alphabetically" in kind["name"] and kind["members"] == 2


def test_show_a_note_names_its_run_and_history(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = open_notebook(path).read_one("select id from notes where kind = 'code'")["id"]
    code, out, _ = cli(capsys, "notebook", "show", note[:7], "--notebook", str(path))
    assert code == 0 and "from run: run-a" in out and "sorted(words)" in out
    assert "merged" in out and "created" in out
    code, out, _ = cli(capsys, "notebook", "show", note, "--json", "--notebook", str(path))
    data = json.loads(out)
    assert data["note"]["source_run"] == "run-a" and len(data["history"]) == 2


def test_search_shows_what_recall_would(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = "Sort the following words alphabetically: List: zebra cat"
    code, out, _ = cli(capsys, "notebook", "search", query, "--json", "--notebook", str(path))
    data = json.loads(out)
    assert code == 0 and data["types"][0]["relevance"] > 0.5
    assert {n["source_run"] for n in data["notes"]} <= {"run-a", "run-b"} and data["notes"]


def test_stats_export_import_round_trip(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "notebook", "stats", "--json", "--notebook", str(path))
    stats = json.loads(out)
    assert code == 0 and stats["notes"] == 5 and stats["runs_learned"] == 2
    code, out, _ = cli(capsys, "notebook", "stats", "--notebook", str(path))
    assert code == 0 and "runs learned     2" in out
    assert "by kind          code 1, example 2, procedure 1, tool 1" in out
    dump = tmp_path / "export.jsonl"
    assert cli(capsys, "notebook", "export", "-o", str(dump), "--notebook", str(path))[0] == 0
    other = tmp_path / "other.db"
    code, _, err = cli(capsys, "notebook", "import", str(dump), "--notebook", str(other))
    assert code == 0 and "notes 5" in err
    copy = open_notebook(other)
    assert copy.read_one("select count(*) n from notes")["n"] == 5
    # Imported types match as at home: recall works in the copy.
    from lessons.read.recall import recall

    assert recall(copy, "Sort the following words alphabetically: List: zebra cat").shown
    code, _, err = cli(capsys, "notebook", "import", str(dump), "--notebook", str(other))
    assert "notes 0" in err and "skipped" in err  # nothing twice


def test_reading_a_missing_notebook_says_how_one_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    code, _, err = cli(capsys, "notebook", "list", "--notebook", str(missing))
    assert code == 2 and "none.db" in err and "conductor solve" in err
    assert not missing.exists()


def test_import_refuses_a_file_that_is_no_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    code, _, err = cli(capsys, "notebook", "import", str(bad), "--notebook", str(tmp_path / "x.db"))
    assert code == 2 and "bad.jsonl" in err and "export" in err


def test_retire_and_restore(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = open_notebook(path).read_one("select id from notes where kind = 'example'")["id"]
    code, out, _ = cli(
        capsys, "notebook", "retire", note, "--reason", "stale", "--notebook", str(path)
    )
    assert code == 0 and "retired" in out
    code, out, _ = cli(capsys, "notebook", "list", "--retired", "--json", "--notebook", str(path))
    assert [json.loads(line)["id"] for line in out.splitlines()] == [note]
    code, out, _ = cli(capsys, "notebook", "retire", note, "--restore", "--notebook", str(path))
    assert code == 0 and "restored" in out
    code, _, err = cli(capsys, "notebook", "retire", "nope", "--notebook", str(path))
    assert code == 2 and "no note" in err


def test_the_notebook_setting_is_the_default(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CONDUCTOR_NOTEBOOK", str(path))
    code, out, _ = cli(capsys, "notebook", "stats", "--json")
    assert code == 0 and json.loads(out)["path"] == str(path)


def test_build_session_wires_recall_and_learning_by_the_settings(tmp_path: Path) -> None:
    notebook = str(tmp_path / "wired.db")
    both = build_session(
        load_settings({"model": "demo", "notebook": notebook, "run": {"python": False}}),
        index=False,
    )
    assert both.recall is not None and len(both.after_run) == 1
    assert both.conductor is not None and both.conductor.recall == both.recall
    quiet = build_session(
        load_settings(
            {"model": "demo", "notebook": notebook, "recall": False, "run": {"python": False}}
        ),
        index=False,
    )
    assert quiet.recall is None and len(quiet.after_run) == 1
    neither = build_session(
        load_settings({"model": "demo", "recall": False, "learn": False, "run": {"python": False}}),
        index=False,
    )
    assert neither.recall is None and neither.after_run == []


def test_solve_learns_then_recalls_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = tmp_path / "solve.db"
    base = [
        "solve",
        "--model",
        "demo",
        "--sandbox",
        "subprocess",
        "--json",
        "--notebook",
        str(notebook),
    ]
    assert cli(capsys, *base, "Use 4 5 6 10 to make 24")[0] == 0
    book = open_notebook(notebook)
    assert book.read_one("select count(*) n from distilled_runs")["n"] == 1
    assert cli(capsys, *base, "--no-learn", "Use 3 3 8 8 to make 24")[0] == 0
    assert book.read_one("select count(*) n from distilled_runs")["n"] == 1
    code, out, _ = cli(capsys, *base, "Use 1 2 4 7 to make 24")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    assert book.read_one("select count(*) n from distilled_runs")["n"] == 2
    shown = book.read("select note_id from recalls where run_id = ?", (run_id,))
    assert shown, "the third run was shown notes from the first"


def test_the_printed_recall_names_each_note_so_it_can_be_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = tmp_path / "printed.db"
    base = ["solve", "--model", "demo", "--sandbox", "subprocess", "--notebook", str(notebook)]
    code, out, _ = cli(capsys, *base, "Use 4 5 6 10 to make 24")
    assert code == 0 and "nothing relevant to recall" in out
    code, out, _ = cli(capsys, *base, "Use 1 2 4 7 to make 24")
    assert code == 0
    line = " ".join(out[out.index("recalled") :].split("\n\n")[0].split())
    named = dict((nid, kind) for kind, nid in re.findall(r"(\w+) (n[0-9a-f]{6,}) \(", line))
    assert named, line
    kinds = {r["id"]: r["kind"] for r in open_notebook(notebook).read("select id, kind from notes")}
    assert all(kinds.get(nid) == kind for nid, kind in named.items())
    # The first puzzle's answer was checked (a question that parses as Game of 24 is
    # judged by its scorer), so its program is a tool the second puzzle can run as it
    # is: shown first, and no other puzzle's answer beside it; no bare code note.
    assert "code" not in named.values() and "tool" in named.values()
    assert "example" not in named.values()
