"""The notebook's schema, now declared through sqlite-utils, means what its SQL meant.

Notebooks made by the earlier code hold the schema its SQL scripts wrote
(old_notebook_schema.py keeps them). Such a notebook opens without a step run again
and with no byte of its schema changed but what the steps declared since then add; one
made before a later step takes that step and ends with the shape a new notebook has; and
the full-text index, whose triggers the shape does not show, behaves the same in both
under any sequence of writes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils
from hypothesis import given, settings
from hypothesis import strategies as st
from old_notebook_schema import M001_NOTEBOOK, M002_TOOLS_AND_PROBLEMS, M003_NOTE_VECTORS

from lessons.storage.schema import migrations
from lessons.storage.store import Notebook
from support import schema_shape

OLD_STEPS = [
    ("m001_notebook", M001_NOTEBOOK),
    ("m002_tools_and_problems", M002_TOOLS_AND_PROBLEMS),
    ("m003_note_vectors", M003_NOTE_VECTORS),
]
# Steps declared through sqlite-utils alone, after the SQL scripts, and the columns each
# adds to a table the scripts made.
LATER_STEPS = ["m004_provenance"]
ADDED_COLUMNS = {"notes": ["origin"], "distilled_runs": ["origin", "claimed"]}


def old_notebook(conn: sqlite3.Connection, steps: int = len(OLD_STEPS)) -> sqlite3.Connection:
    """A notebook as the earlier code left it after its first `steps` migrations."""
    conn.execute("create table _migrations (name text primary key, applied_at text, database text)")
    for name, sql in OLD_STEPS[:steps]:
        conn.executescript(sql)
        conn.execute(
            "insert into _migrations values (?, '2025-01-01T00:00:00+00:00', 'notebook')",
            (name,),
        )
    conn.commit()
    return conn


def new_notebook() -> sqlite3.Connection:
    db = sqlite_utils.Database(memory=True)
    db.conn.isolation_level = None
    migrations.apply(db.conn)
    return db.conn


def _schema_text(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("select type, name, sql from sqlite_master"))
    finally:
        conn.close()


def _columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[1] for r in conn.execute(f"pragma table_info({table})")]
    finally:
        conn.close()


def test_a_notebook_made_before_opens_with_only_the_later_steps_added_and_works(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notebook.db"
    old = old_notebook(sqlite3.connect(path))
    old.execute(
        "insert into distilled_runs (run_id, at, question, verification, outcome) "
        "values ('r1', 0, 'q', 'target', 'correct')"
    )
    old.commit()
    old.close()
    before = _schema_text(path)
    columns = {table: _columns(path, table) for table in ADDED_COLUMNS}
    book = Notebook(path)
    try:
        assert [r["name"] for r in book.read("select name from _migrations")] == [
            name for name, _ in OLD_STEPS
        ] + LATER_STEPS
        book.write(
            lambda conn: conn.execute(
                "insert into notes (id, kind, terms, content_hash, near_hash, created_at, "
                "updated_at) values ('n1', 'pitfall', 'carry_digit sums', 'h', 'n', 0, 0)"
            )
        )
        found = book.read("select id from notes_fts join notes on seq = notes_fts.rowid "
                          "where notes_fts match 'carry_digit'")  # fmt: skip
        assert [r["id"] for r in found] == ["n1"]
        # A row made before the columns were has them as learned here: no origin.
        run = book.read_one("select origin, claimed, outcome from distilled_runs")
        assert run == {"origin": "", "claimed": "{}", "outcome": "correct"}
    finally:
        book.close()
    after = _schema_text(path)
    assert [o for o in after if o[1] not in ADDED_COLUMNS] == [
        o for o in before if o[1] not in ADDED_COLUMNS
    ]
    for table, added in ADDED_COLUMNS.items():
        assert _columns(path, table) == columns[table] + added


def test_a_notebook_made_before_a_later_step_takes_it_and_has_a_new_notebooks_shape(
    tmp_path: Path,
) -> None:
    full = tmp_path / "full.db"
    old_notebook(sqlite3.connect(full)).close()
    Notebook(full).close()  # takes the later steps
    reference = schema_shape(sqlite3.connect(full))
    assert schema_shape(new_notebook()) == reference
    for steps in range(1, len(OLD_STEPS)):
        path = tmp_path / f"after-{steps}.db"
        old_notebook(sqlite3.connect(path), steps).close()
        Notebook(path).close()
        conn = sqlite3.connect(path)
        applied = [r[0] for r in conn.execute("select name from _migrations order by rowid")]
        assert applied == [name for name, _ in OLD_STEPS] + LATER_STEPS
        shape = schema_shape(conn)
        conn.close()
        assert shape == reference, f"after old step {steps}"


# Terms the tokenizer must keep apart: `_` inside a term, é apart from e.
WORDS = ["carry_digit", "carry", "digit", "café", "cafe", "x1", "ab"]
terms = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
writes = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), terms),
        st.tuples(st.just("retag"), st.integers(0, 5), terms),
        st.tuples(st.just("count"), st.integers(0, 5)),
        st.tuples(st.just("delete"), st.integers(0, 5)),
    ),
    max_size=12,
)


def _apply(conn: sqlite3.Connection, ops: list[tuple]) -> list[int]:
    """Run the writes; return how many rows each counter update changed, triggers
    included (so an update trigger that fires on every column shows)."""
    changed = []
    for n, op in enumerate(ops):
        seqs = [r[0] for r in conn.execute("select seq from notes order by seq")]
        if op[0] == "insert":
            conn.execute(
                "insert into notes (id, kind, terms, content_hash, near_hash, created_at, "
                "updated_at) values (?, 'pitfall', ?, 'h', 'n', 0, 0)",
                (f"n{n}", op[1]),
            )
        elif seqs and op[0] == "retag":
            conn.execute(
                "update notes set terms = ? where seq = ?", (op[2], seqs[op[1] % len(seqs)])
            )
        elif seqs and op[0] == "count":
            before = conn.total_changes
            conn.execute("update notes set helpful = helpful + 1, uses = uses + 1 "
                         "where seq = ?", (seqs[op[1] % len(seqs)],))  # fmt: skip
            changed.append(conn.total_changes - before)
        elif seqs and op[0] == "delete":
            conn.execute("delete from notes where seq = ?", (seqs[op[1] % len(seqs)],))
    return changed


def _matches(conn: sqlite3.Connection) -> dict[str, list[str]]:
    return {
        word: [r[0] for r in conn.execute(
            "select id from notes join notes_fts on seq = notes_fts.rowid "
            "where notes_fts match ? order by id", (f'"{word}"',),
        )]
        for word in WORDS
    }  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(writes)
def test_the_full_text_index_behaves_as_before_under_any_writes(ops: list[tuple]) -> None:
    old, new = old_notebook(sqlite3.connect(":memory:")), new_notebook()
    old.isolation_level = None
    assert _apply(new, ops) == _apply(old, ops)
    assert _matches(new) == _matches(old)
    for conn in (old, new):  # the index agrees with the notes it indexes
        conn.execute("insert into notes_fts (notes_fts) values ('integrity-check')")
