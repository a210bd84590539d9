"""Each database has one storage module that holds every query on it, and the check can fail.

runs.db is queried only in transcripts/index.py; notebook.db only in lessons/ (store.py,
queries.py and the notebook's own modules). The application (conductor/, tui/) calls
their functions: it holds no SQL string and does not reach into a connection. The scan
reads the source's syntax tree, so a comment or a docstring about SQL is not flagged;
a string that starts like a statement, a subscript of a `db`, or a query method called
on something named like a database is.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support import REPO

SCANNED = ("conductor", "tui")
# The batch's own files (batch.json, results.jsonl) are not a database.
EXEMPT = {Path("conductor/batch/store.py")}

# The start of an SQL statement, shaped enough that English ("select a model") is not.
SQL_START = re.compile(
    r"""^\s*(?:
        select\s.*?\bfrom\s | select\s+(?:count|distinct|\*)\b
      | insert\s+(?:or\s+\w+\s+)?into\s | replace\s+into\s
      | update\s+\S+\s+set\s | delete\s+from\s
      | create\s+(?:temp\w*\s+|unique\s+|virtual\s+)*(?:table|index|trigger|view)\s
      | drop\s+(?:table|index|trigger|view)\s | alter\s+table\s
      | pragma\s+\w | with\s+\w+\s+as\s*\( | begin\s+(?:immediate|exclusive|deferred)\b
    )""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
# Methods that run SQL whatever they are called on.
SQL_METHODS = {"execute", "executemany", "executescript", "rows_where", "search_sql"}
# Methods that run SQL when called on a database object (`self.query` is textual's DOM
# query, `fh.read` a file's): flagged on a receiver named like one of these.
READ_METHODS = {"query", "read", "read_one"}
DATABASE_NAMES = {"db", "conn", "connection", "cursor", "book", "notebook", "index", "database"}
# Opening a database directly.
OPENERS = {("sqlite3", "connect"), ("sqlite_utils", "Database")}


def _name(node: ast.expr) -> str | None:
    """The last name in `a.b.c` (c), or a bare name."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _text(node: ast.JoinedStr) -> str:
    """An f-string's text, each `{...}` standing as `{}`."""
    return "".join(
        v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
        for v in node.values
    )


def queries_in(source: str, filename: str = "<planted>") -> list[tuple[int, str]]:
    """(line, what) for each SQL string or database query in `source`."""
    tree = ast.parse(source, filename=filename)
    inside_fstring = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = _text(node)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstring
        ):
            text = node.value
        else:
            text = None
        if text is not None and SQL_START.match(text):
            found.append((node.lineno, "SQL string " + repr(" ".join(text.split())[:50])))
        if isinstance(node, ast.Subscript) and _name(node.value) == "db":
            found.append((node.lineno, "a table taken from a database (db[...])"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, _name(node.func.value)
            if method in SQL_METHODS or (method in READ_METHODS and receiver in DATABASE_NAMES):
                found.append((node.lineno, f".{method}() on {receiver or 'an expression'}"))
            if (receiver, method) in OPENERS:
                found.append((node.lineno, f"{receiver}.{method}() opens a database"))
    return sorted(found)


def application_files() -> list[Path]:
    files = [p for package in SCANNED for p in (REPO / package).rglob("*.py")]
    return sorted(p for p in files if p.relative_to(REPO) not in EXEMPT)


def test_the_application_leaves_queries_to_the_storage_modules() -> None:
    files = application_files()
    names = {p.relative_to(REPO).as_posix() for p in files}
    # The scan sees the screens and commands that show the two databases.
    assert {"tui/screens/runs.py", "tui/screens/notebook.py", "conductor/cli/runs.py"} <= names
    assert {"conductor/cli/notebook.py", "conductor/cli/audit.py"} <= names
    offenders = {
        p.relative_to(REPO).as_posix(): found
        for p in files
        if (found := queries_in(p.read_text(encoding="utf-8"), str(p)))
    }
    assert offenders == {}, (
        "query runs.db through transcripts.index.RunIndex and notebook.db through "
        f"lessons.storage.queries / lessons.storage.store, not from here: {offenders}"
    )


PLANTED = """
import sqlite3

def screen(self, index, book, column):
    self.query("#runs")  # textual's DOM query: allowed
    text = fh.read()  # a file: allowed
    help_text = "select a model, then update the settings"  # English: allowed
    rows = index.db["runs"].rows_where("task = ?", ["x"])
    values = index.db.query(f"select distinct {column} from runs order by 1")
    notes = book.read(
        "select n.* from notes n "
        f"where n.type_id = ? limit {LIMIT}"
    )
    book.conn.execute("delete from notes where id = ?", ("n1",))
    sqlite3.connect("runs.db").executescript("CREATE TABLE t (x)")
    found = index.list_runs(limit=5)  # the storage module's own API: allowed
"""


def test_the_scan_catches_planted_queries() -> None:
    found = queries_in(PLANTED)
    lines = [line for line, _ in found]
    assert 5 not in lines and 6 not in lines and 7 not in lines  # the allowed ones
    what = "\n".join(f"{line}: {kind}" for line, kind in found)
    assert "8: a table taken from a database" in what
    assert "8: .rows_where() on an expression" in what
    assert "9: .query() on db" in what and "9: SQL string 'select distinct {} from runs" in what
    assert "10: .read() on book" in what and "11: SQL string 'select n.* from notes n" in what
    assert "14: .execute() on conn" in what and "14: SQL string 'delete from notes" in what
    assert "15: sqlite3.connect() opens a database" in what
    assert (
        "15: .executescript() on an expression" in what and "15: SQL string 'CREATE TABLE" in what
    )
    assert 16 not in lines
