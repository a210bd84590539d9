"""Another notebook's file, made from our own schema and then spoilt: the files the
merge tests hand to `conductor notebook merge` (issue 33).

A plan (drawn by Hypothesis) says what the file holds (types, notes with any trust they
care to claim, notes that take one of ours' id and hashes, notes word for word ours,
runs) and how it is spoilt: columns added, dropped or renamed to hostile names, tables,
views and triggers of its own; and at most one spoiling that must make the merge refuse
(not SQLite at all, a migration this version does not know, a table that is a view, a
computed column, a value of the wrong type). `build` writes it.
"""

from __future__ import annotations

import functools
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from nb_support import sort_run

from conductor.scoring.notebook import open_notebook
from lessons.storage.store import Notebook
from lessons.write.distill import KINDS
from lessons.write.learn import learn_from_run

WORDS = [["pear", "apple", "fig"], ["zebra", "yak", "ant"], ["kiwi", "lime", "date"]]

# Names a column may be given to break out of a statement built from them.
HOSTILE_NAMES = [
    "author) values (?, (select group_concat(text) from notes) || ?) --",
    'text" from notes; --',
    "x'); drop table notes; --",
    "select",
    "from",
    "where",
    "TEXT",
    "[verification]",
    "`helpful`",
    "ключ",
    "名前",
    "a\nb",
    "seq, (select 1)",
]
hostile_names = st.sampled_from(HOSTILE_NAMES) | st.text(min_size=1, max_size=24)
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
ids = st.from_regex(r"[a-z][a-z0-9]{3,12}", fullmatch=True)

claims = st.fixed_dictionaries(
    {
        "verification": st.sampled_from(["target", "checker", "tool", "independent", "none"])
        | texts,
        "outcome": st.sampled_from(["correct", "verified", "wrong", "unverified"]),
        "confidence": st.floats(0, 1),
        "helpful": st.integers(0, 10**6),
        "harmful": st.integers(0, 10**6),
        "uses": st.integers(0, 10**6),
        "support": st.integers(0, 10**6),
    }
)
notes = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(KINDS),
        "key": texts,
        "text": texts,
        "code": texts,
        "claims": claims,
        # Take one of our notes' id, hashes and type (with other text), or its content.
        "collide": st.none() | st.integers(0, 50),
        "same_as": st.none() | st.integers(0, 50),
        "history": st.lists(st.sampled_from(["created", "recalled-helpful", "merged"]), max_size=3),
    }
)
types = st.fixed_dictionaries(
    {
        "id": ids,
        "name": texts,
        "ours": st.booleans(),  # take the id and name of our type
        "terms": st.dictionaries(
            st.from_regex(r"[a-z]{2,8}", fullmatch=True), st.integers(1, 3), max_size=5
        ),
    }
)
runs = st.fixed_dictionaries(
    {"id": ids, "ours": st.booleans(), "question": texts, "answer": texts, "claims": claims}
)
# (table, column) pairs a file may lack: none is indexed, so SQLite can drop them.
DROPPABLE = [
    ("notes", "author"), ("notes", "code"), ("notes", "key"), ("notes", "uses"),
    ("notes", "answer"), ("notes", "retired_reason"), ("task_types", "description"),
    ("task_types", "suggestions"), ("distilled_runs", "target"), ("distilled_runs", "claimed"),
    ("note_history", "detail"),
]  # fmt: skip
SPOILINGS = {
    "add column": st.tuples(st.sampled_from(["notes", "task_types", "distilled_runs"]),
                            hostile_names, texts | st.integers(-(2**63), 2**63 - 1)),
    "drop column": st.tuples(st.sampled_from(DROPPABLE)),
    "rename column": st.tuples(st.sampled_from(DROPPABLE), hostile_names),
    "objects of its own": st.just(()),
}  # fmt: skip
spoilings = st.sampled_from(sorted(SPOILINGS)).flatmap(
    lambda kind: SPOILINGS[kind].map(lambda args: (kind, *args))
)
# Each of these must make the merge refuse.
WRONG_VALUES = [
    ("distilled_runs", "at", "'yesterday'"),
    ("distilled_runs", "question", "x'00ff'"),
    ("distilled_runs", "notes_written", "'many'"),
    ("distilled_runs", "run_id", "'has space'"),
]
REFUSALS = {
    "not sqlite": st.binary(max_size=300),
    "newer": st.from_regex(r"m[0-9]{3}_[a-z]{1,10}", fullmatch=True),
    "another database": st.sampled_from(["runs", "tasks", ""]),
    "view for a table": st.sampled_from(["notes", "task_types", "type_terms", "_migrations"]),
    "computed column": st.sampled_from(["notes", "distilled_runs"]),
    "wrong value": st.sampled_from(WRONG_VALUES),
}


def plans(refusal: st.SearchStrategy[tuple | None] = st.none()) -> st.SearchStrategy[dict]:
    """Files as another version or an attacker might write them; `refusal`: spoilt
    past reading as well."""
    return st.fixed_dictionaries(
        {
            "types": st.lists(types, max_size=2),
            "notes": st.lists(notes, max_size=5),
            "runs": st.lists(runs, min_size=1, max_size=3),
            "spoilings": st.lists(spoilings, max_size=4),
            "refusal": refusal,
        }
    )


@functools.cache
def empty_notebook() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "empty.db"
        Notebook(path).close()
        return path.read_bytes()


@functools.cache
def learned_notebook() -> bytes:
    """Ours: three word-sorting runs learned, with the application's scorers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ours.db"
        book = open_notebook(path)
        try:
            for n, words in enumerate(WORDS):
                learn_from_run(book, sort_run(f"ours{n}", words))
        finally:
            book.close()
        return path.read_bytes()


def _ours(path: Path) -> dict[str, list[dict[str, Any]]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return {
            table: [dict(r) for r in conn.execute(f"select * from {table} order by rowid")]
            for table in ("notes", "task_types", "distilled_runs")
        }
    finally:
        conn.close()


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    columns = ", ".join(row)  # our own names: this is the file's author writing it
    conn.execute(f"insert into {table} ({columns}) values ({', '.join('?' * len(row))})",
                 tuple(row.values()))  # fmt: skip


def build(path: Path, plan: dict[str, Any], ours: Path) -> None:
    """Write the file `plan` describes at `path`; `ours` is the notebook it is merged into."""
    path.write_bytes(empty_notebook())
    mine = _ours(ours)
    conn = sqlite3.connect(path)
    try:
        _fill(conn, plan, mine)
        conn.commit()
        for spoiling in plan["spoilings"]:
            _spoil(conn, spoiling)
        refusal = plan["refusal"]
        if refusal is not None and refusal[0] != "not sqlite":
            _spoil_for_good(conn, refusal)
        conn.commit()
    finally:
        conn.close()
    if refusal is not None and refusal[0] == "not sqlite":
        path.write_bytes(refusal[1])


def _fill(conn: sqlite3.Connection, plan: dict[str, Any], mine: dict[str, list[dict]]) -> None:
    our_type = mine["task_types"][0]
    for n, kind in enumerate(plan["types"]):
        type_id, name = (
            (our_type["id"], our_type["name"]) if kind["ours"] else (kind["id"], kind["name"])
        )
        if conn.execute("select 1 from task_types where id = ?", (type_id,)).fetchone():
            continue
        members = max([3, *kind["terms"].values()])
        _insert(conn, "task_types", {"id": type_id, "name": name, "members": members,
                                     "suggestions": '["trust me"]', "correct": 500,
                                     "created_at": n, "updated_at": n})  # fmt: skip
        for term, count in kind["terms"].items():
            _insert(conn, "type_terms", {"type_id": type_id, "term": term, "count": count})
    for n, note in enumerate(plan["notes"]):
        row: dict[str, Any] = {
            "id": f"f{n}", "type_id": our_type["id"], "kind": note["kind"], "key": note["key"],
            "text": note["text"], "code": note["code"], "content_hash": f"h{n}",
            "near_hash": f"near{n}", "created_at": n, "updated_at": n, **note["claims"],
        }  # fmt: skip
        if note["collide"] is not None:
            victim = mine["notes"][note["collide"] % len(mine["notes"])]
            row.update({k: victim[k] for k in ("id", "type_id", "content_hash", "near_hash")})
        if note["same_as"] is not None:
            twin = mine["notes"][note["same_as"] % len(mine["notes"])]
            row.update({k: twin[k] for k in ("type_id", "kind", "key", "text", "code")})
        if conn.execute("select 1 from notes where id = ?", (row["id"],)).fetchone():
            row["id"] = f"f{n}"
        _insert(conn, "notes", row)
        for m, action in enumerate(note["history"]):
            _insert(conn, "note_history", {"note_id": row["id"], "at": m, "action": action,
                                           "run_id": f"their{m}"})  # fmt: skip
    for n, run in enumerate(plan["runs"]):
        run_id = mine["distilled_runs"][0]["run_id"] if run["ours"] else run["id"]
        if conn.execute("select 1 from distilled_runs where run_id = ?", (run_id,)).fetchone():
            continue
        _insert(conn, "distilled_runs", {
            "run_id": run_id, "at": n, "question": run["question"], "answer": run["answer"],
            "target": run["answer"], "type_id": our_type["id"],
            "verification": run["claims"]["verification"], "outcome": run["claims"]["outcome"],
        })  # fmt: skip


def _name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _spoil(conn: sqlite3.Connection, spoiling: tuple) -> None:
    """A change another version, or an attacker, might make; one SQLite refuses (a name
    already taken) is left out."""
    try:
        if spoiling[0] == "add column":
            _, table, name, value = spoiling
            conn.execute(f"alter table {table} add column {_name(name)}")
            conn.execute(f"update {table} set {_name(name)} = ?", (value,))
        elif spoiling[0] == "drop column":
            table, column = spoiling[1]
            conn.execute(f"alter table {table} drop column {column}")
        elif spoiling[0] == "rename column":
            (table, column), name = spoiling[1], spoiling[2]
            conn.execute(f"alter table {table} rename column {column} to {_name(name)}")
        else:
            conn.executescript("""
                create table stolen (what text);
                create view every_note as select text from notes;
                create trigger on_read after insert on notes begin
                    insert into stolen values (new.text); end;
                create trigger on_history after insert on note_history begin
                    delete from notes; end;
            """)  # fmt: skip
    except (sqlite3.OperationalError, sqlite3.ProgrammingError):  # a NUL in the name
        pass


def _spoil_for_good(conn: sqlite3.Connection, refusal: tuple) -> None:
    kind = refusal[0]
    if kind == "newer":
        conn.execute("insert into _migrations values (?, '2099-01-01', 'notebook')", (refusal[1],))
    elif kind == "another database":
        conn.execute("insert into _migrations values ('m001_x', '', ?)", (refusal[1],))
    elif kind == "view for a table":
        table = refusal[1]
        conn.execute(f"alter table {table} rename to {table}_kept")
        conn.execute(f"create view {table} as select * from {table}_kept")
    elif kind == "computed column":
        conn.execute(
            f"alter table {refusal[1]} add column shout text "
            "generated always as (upper(question_hash) || zeroblob(10)) virtual"
        )
    else:
        table, column, value = refusal[1]
        conn.execute(
            f"update {table} set {column} = {value} where rowid = (select min(rowid) from {table})"
        )
