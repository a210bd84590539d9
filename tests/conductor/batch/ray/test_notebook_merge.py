"""The notebook merge behind Ray learning and `conductor notebook merge` (no Ray needed).

Notebooks are learned from runs' events by the notebook's own write path, on a real
SQLite file each, then merged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult
from lessons.exchange.merge import source_runs
from lessons.write.learn import learn_from_run, write_prepared
from lessons.write.prepare import PreparedRun, prepare_run

CODE = "words = {words!r}\nprint(' '.join(sorted(words)))\n"


def sort_run(run_id: str, words: list[str]) -> list[Event]:
    """A word-sorting run that answered with a program, after consulting a checker."""
    question = "Sort the following words alphabetically: List: " + " ".join(words)
    answer = " ".join(sorted(words))
    python = ExpertCallStarted(run_id=run_id, name="Expert Python", is_python=True, round=1)
    checker = ExpertCallStarted(run_id=run_id, name="Expert Checker", round=2)
    return [
        RunStarted(run_id=run_id, question=question, target=answer),
        python,
        SandboxExec(
            run_id=run_id,
            parent_id=python.id,
            code=CODE.format(words=words),
            result=ExecResult(stdout=answer + "\n", exit_code=0),
        ),
        ExpertCallFinished(run_id=run_id, parent_id=python.id, name="Expert Python", text="ok"),
        checker,
        ExpertCallFinished(run_id=run_id, parent_id=checker.id, name="Expert Checker", text="ok"),
        FinalAnswer(run_id=run_id, answer=answer, round=3),
        RunFinished(run_id=run_id, status="answered", final_answer=answer, rounds=3),
    ]


WORDS = [
    ["pear", "apple", "fig"],
    ["zebra", "yak", "ant"],
    ["kiwi", "lime", "date"],
    ["oak", "elm", "ash"],
    ["red", "blue", "green"],
    ["sun", "moon", "star"],
]


def learned(path: Path, runs: list[tuple[str, list[str]]]) -> Path:
    book = open_notebook(path)
    try:
        for run_id, words in runs:
            learn_from_run(book, sort_run(run_id, words))
    finally:
        book.close()
    return path


def notes(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(
            "select id, kind, content_hash, support from notes order by kind, id"
        ).fetchall()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(f"select * from {table} order by rowid").fetchall()


def claimed_runs(db: sqlite3.Connection, note_id: str) -> set[str]:
    """The runs another file's history claims for a note (kept, never counted)."""
    found = db.execute(
        "select run_id from note_history where note_id = ? and action = 'claimed'", (note_id,)
    )
    return {r for (r,) in found if r}


def test_notebook_merge_adds_the_other_notes_beside_ours_unverified_with_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = learned(tmp_path / "a.db", [(f"a{n}", WORDS[n]) for n in range(3)])
    b = learned(tmp_path / "b.db", [(f"b{n}", WORDS[n + 3]) for n in range(3)])
    b_before, a_notes = digest(b), rows(a, "notes")
    assert main(["notebook", "merge", str(a), str(b), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    # b's examples and its program (other data) are new here; its procedure and its tool
    # are word for word a's, so they are not added again.
    assert counts["runs_added"] == 3 and counts["notes_added"] == 4
    assert counts["notes_skipped"] == 2
    assert digest(b) == b_before  # the source is read from a copy, never changed
    assert rows(a, "notes")[: len(a_notes)] == a_notes  # a's notes exactly as they were
    with sqlite3.connect(a) as db:
        runs = {r for (r,) in db.execute("select run_id from distilled_runs")}
        assert runs == {"a0", "a1", "a2", "b0", "b1", "b2"}
        merged = db.execute(
            "select verification, outcome, helpful, harmful, support, origin from notes "
            "where origin != ''"
        ).fetchall()
        assert len(merged) == 4
        assert {m[:5] for m in merged} == {("none", "unverified", 0, 0, 1)}
        assert {m[5] for m in merged} == {f"merged from {b.resolve()}"}
        # What b said of its runs is a claim: no answer of b's corroborates one of ours.
        for verification, outcome, answer, claimed in db.execute(
            "select verification, outcome, answer, claimed from distilled_runs "
            "where run_id like 'b%'"
        ):
            assert (verification, outcome, answer) == ("none", "unverified", None)
            assert json.loads(claimed)["verification"] == "target"
        # a's procedure is the one procedure: its own three runs, b's three as claims.
        ((note_id, support),) = db.execute(
            "select id, support from notes where kind = 'procedure'"
        ).fetchall()
        assert set(source_runs(db, note_id)) == {"a0", "a1", "a2"} and support == 3
        assert claimed_runs(db, note_id) == {"b0", "b1", "b2"}
        examples = db.execute("select source_run from notes where kind = 'example'").fetchall()
        assert sorted(r for (r,) in examples) == sorted(runs)
        assert db.execute("select count(*) from task_types").fetchone()[0] == 1
    # Merging the same notebook again adds nothing, not even a history row.
    after_first, history = notes(a), rows(a, "note_history")
    assert main(["notebook", "merge", str(a), str(b), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["runs_added"] == 0 and again["notes_added"] == 0
    assert notes(a) == after_first and rows(a, "note_history") == history


def test_two_copies_of_one_notebook_merge_back_without_counting_the_common_part_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = learned(tmp_path / "base.db", [("r0", WORDS[0]), ("r1", WORDS[1])])
    other = tmp_path / "other.db"
    other.write_bytes(base.read_bytes())
    learned(base, [("r2", WORDS[2])])
    learned(other, [("r3", WORDS[3])])
    assert main(["notebook", "merge", str(base), str(other)]) == 0
    assert "merged" in capsys.readouterr().out
    with sqlite3.connect(base) as db:
        ((note_id, support),) = db.execute(
            "select id, support from notes where kind = 'code'"
        ).fetchall()
        # The program is the same in both: ours keeps its runs; the copy's r3 is a claim.
        assert set(source_runs(db, note_id)) == {"r0", "r1", "r2"} and support == 3
        assert "r3" in claimed_runs(db, note_id)
        runs = {r for (r,) in db.execute("select run_id from distilled_runs")}
        assert runs == {"r0", "r1", "r2", "r3"}


def test_merge_refuses_a_missing_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["notebook", "merge", str(tmp_path / "a.db"), str(tmp_path / "nope.db")])
    assert code == 2 and "no notebook at" in capsys.readouterr().err


def test_a_worker_distilled_run_merged_by_the_driver_equals_learning_in_place(
    tmp_path: Path,
) -> None:
    """Ray's split (prepare on the worker, write on the driver) learns what one process
    learns from the same runs: notes, tools, verification and the runs' records."""
    runs = [(f"r{n}", WORDS[n]) for n in range(4)]
    in_place = learned(tmp_path / "in_place.db", runs)
    split = open_notebook(tmp_path / "split.db")
    snapshot = open_notebook(tmp_path / "snapshot.db")  # what the workers read: empty here
    try:
        for run_id, words in runs:
            prepared = prepare_run(snapshot, sort_run(run_id, words))
            assert prepared is not None
            run = PreparedRun.from_dict(json.loads(json.dumps(prepared.to_dict())))  # via Ray
            assert write_prepared(split, run) is not None
        assert write_prepared(split, run) is None  # a run is learned once
    finally:
        split.close()
        snapshot.close()

    def shape(path: Path) -> dict[str, list[tuple]]:
        with sqlite3.connect(path) as db:
            return {
                "notes": db.execute(
                    "select kind, text, code, support, source_run, verification, outcome "
                    "from notes order by kind, source_run"
                ).fetchall(),
                "tools": db.execute(
                    "select n.source_run, t.task, t.spec from tools t join notes n "
                    "on n.id = t.note_id order by n.source_run"
                ).fetchall(),
                "runs": db.execute(
                    "select run_id, status, verification, outcome, notes_written, "
                    "notes_merged, question_hash from distilled_runs order by run_id"
                ).fetchall(),
            }

    expected = shape(in_place)
    assert len(expected["notes"]) >= 6  # examples, and the shared code and procedure notes
    assert expected["tools"], "a trusted program should have become a tool"
    assert {r[2:4] for r in expected["runs"]} == {("target", "correct")}  # the scorer's word
    assert shape(tmp_path / "split.db") == expected


def test_a_prepared_run_carries_its_vector_and_is_none_when_the_run_is_not_learnable(
    tmp_path: Path,
) -> None:
    book = open_notebook(tmp_path / "nb.db")
    try:
        cut_short = sort_run("cut", WORDS[0])
        cut_short[-1] = RunFinished(run_id="cut", status="error", rounds=3)
        assert prepare_run(book, cut_short) is None  # LEARNABLE_STATUSES, as in place
        prepared = prepare_run(book, sort_run("r0", WORDS[0]))
        assert prepared is not None
        blob = bytes(range(16))
        prepared.vector = base64.b64encode(blob).decode("ascii")
        run = PreparedRun.from_dict(json.loads(json.dumps(prepared.to_dict())))
        written = write_prepared(book, run)
        assert written is not None
        with sqlite3.connect(book.path) as db:
            stored = db.execute(
                "select v.vec from note_vectors v join notes n on n.id = v.note_id "
                "where n.kind = 'example'"
            ).fetchall()
        assert stored == [(blob,)]
    finally:
        book.close()


def test_learned_notes_a_dead_driver_left_unmerged_are_merged_by_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conductor.batch.ray.learning import LEARNED_FILE, ClusterLearning

    monkeypatch.setattr(ClusterLearning, "_publish", lambda self: None)  # no Ray here
    notebook = tmp_path / "nb.db"
    first = ClusterLearning("frozen", notebook=str(notebook), folder=tmp_path, recall=True)
    snapshot = open_notebook(tmp_path / "snapshot.db")
    for run_id, words in [("r0", WORDS[0]), ("r1", WORDS[1])]:
        first.received(prepare_run(snapshot, sort_run(run_id, words)).to_dict())  # type: ignore[union-attr]
    snapshot.close()
    # The driver dies here: nothing merged yet, both runs on disk, one line cut short.
    with (tmp_path / LEARNED_FILE).open("a") as fh:
        fh.write('{"run_id": "r2", "quest')
    assert not notebook.exists() or notes(notebook) == []

    second = ClusterLearning("frozen", notebook=str(notebook), folder=tmp_path, recall=True)
    second.start()
    second.finish()
    assert second.runs_merged == 2
    with sqlite3.connect(notebook) as db:
        runs = {r for (r,) in db.execute("select run_id from distilled_runs")}
    assert runs == {"r0", "r1"}
    third = ClusterLearning("frozen", notebook=str(notebook), folder=tmp_path, recall=True)
    third.start()
    third.finish()
    assert third.runs_merged == 0  # learned once, however often the file is read
