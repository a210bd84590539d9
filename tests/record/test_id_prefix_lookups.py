"""A run, note or task type looked up by id or id prefix: exactly the one Python's
`startswith` names (`%` and `_` are characters, case counts, an exact id wins over a
longer one it begins), none when several fit, and always by the key's index (the query
plan scans nothing)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor_kernel.events import RunStarted
from lessons.storage.store import Notebook
from record.id_prefix import MAX_CODE_POINT, successor
from transcripts.index import RunIndex

# Wildcards, case, quotes, NUL, the last code point and the two around the surrogates.
ALPHABET = "%_aAb\\'\"\x00é\U0010ffff\ud7ff\ue000-"
ids = st.lists(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=12, unique=True)


def refs(known: list[str]) -> st.SearchStrategy[str]:
    """What a user types: a prefix of a known id, an id, or any text at all."""
    prefixes = st.sampled_from(known).flatmap(lambda i: st.integers(0, len(i)).map(lambda n: i[:n]))
    return prefixes | st.text(ALPHABET, max_size=6) | st.text(max_size=6) | st.just("\ud800")


def expected(known: list[str], ref: str) -> str | None:
    if not ref:
        return None  # nothing typed names nothing, even where one id would fit
    if ref in known:
        return ref
    fits = [i for i in known if i.startswith(ref)]
    return fits[0] if len(fits) == 1 else None


@contextmanager
def plans(conn: sqlite3.Connection) -> Iterator[list[str]]:
    """The query plan of every select by id `conn` runs inside the block (a task
    type's name, looked up by `=` between its id and an id prefix, has no index: the
    types are few)."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    found: list[str] = []
    try:
        yield found
    finally:
        conn.set_trace_callback(None)
    for sql in statements:
        if sql.lstrip().lower().startswith("select") and " name = " not in sql:
            found += [row[3] for row in conn.execute(f"explain query plan {sql}")]


def check(conn: sqlite3.Connection, table: str, lookup: Callable[[], Any], ref: str) -> Any:
    """`lookup()`, asserting it read `table` by its key's index alone (sqlite-utils'
    own reads of the schema, `sqlite_master`, aside)."""
    with plans(conn) as found:
        got = lookup()
    if ref and "\x00" not in ref and "\ud800" not in ref:  # a traced statement stops at a NUL
        assert any(plan.startswith(f"SEARCH {table} USING") for plan in found), found
        assert not [plan for plan in found if plan.startswith(f"SCAN {table}")], found
    return got


@pytest.fixture
def index(tmp_path: Path) -> Iterator[RunIndex]:
    runs = RunIndex(tmp_path / "runs.db")
    yield runs
    runs.close()


@pytest.fixture
def book(tmp_path: Path) -> Iterator[Notebook]:
    notebook = Notebook(tmp_path / "notebook.db")
    yield notebook
    notebook.close()


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), known=ids)
def test_a_run_is_found_by_exactly_the_prefix_startswith_names(
    index: RunIndex, data: st.DataObject, known: list[str]
) -> None:
    index.write(lambda c: c.execute("delete from runs"))
    for run_id in known:
        index.record_start(RunStarted(run_id=run_id, question="q"), path=f"{run_id!r}.jsonl")
    ref = data.draw(refs(known))
    got = check(index.conn, "runs", lambda: index.get(ref), ref)
    assert (got["run_id"] if got else None) == expected(known, ref)


def _put_notes(conn: sqlite3.Connection, known: list[str]) -> None:
    conn.execute("delete from notes")
    conn.execute("delete from task_types")
    conn.executemany(
        "insert into notes (id, kind, content_hash, near_hash, created_at, updated_at) "
        "values (?, 'insight', ?, '', 0, 0)",
        [(note_id, f"h{n}") for n, note_id in enumerate(known)],
    )
    conn.executemany(
        "insert into task_types (id, name, created_at, updated_at) values (?, ?, 0, 0)",
        [(type_id, f"name {n}") for n, type_id in enumerate(known)],
    )


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), known=ids)
def test_a_note_and_a_type_are_found_by_exactly_the_prefix_startswith_names(
    book: Notebook, data: st.DataObject, known: list[str]
) -> None:
    book.write(lambda c: _put_notes(c, known))
    ref = data.draw(refs(known))
    note = check(book.conn, "notes", lambda: book.find_note(ref), ref)
    assert (note["id"] if note else None) == expected(known, ref)
    kind = check(book.conn, "task_types", lambda: book.find_type(ref), ref)
    names = {f"name {n}": type_id for n, type_id in enumerate(known)}
    wanted = ref if ref in known else names.get(ref, expected(known, ref))
    assert (kind["id"] if kind else None) == wanted  # an exact id, an exact name, a prefix


@given(st.text(min_size=1, max_size=6), st.text(max_size=4))
def test_the_successor_bounds_exactly_the_texts_with_the_prefix(prefix: str, tail: str) -> None:
    upper = successor(prefix)
    encoded = (prefix + tail).encode()
    assert encoded >= prefix.encode()
    if upper is None:
        assert set(prefix) == {chr(MAX_CODE_POINT)}
    else:
        assert encoded < upper.encode()  # every text with the prefix is below it
        assert not upper.startswith(prefix) and upper > prefix
