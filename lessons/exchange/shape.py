"""What a row from another notebook may hold: the columns this version knows, and the
checks each value passes before anything of it is written.

The column list is this version's own schema (lessons/storage/schema.py, applied to an
empty in-memory database), never the foreign file's: a file with other columns is read
through ours alone, and every statement is built from our names. A value of the wrong
type, an id that is not an id, a number no counter holds or a text longer than any note
refuses the whole file (`ForeignFileError`, one line naming where): nothing half-merged.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from conductor_kernel import pyparse
from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.display import visible_line
from lessons.storage.schema import migrations
from lessons.write.distill import KINDS

# The tables another notebook's notes, types and runs are read from.
READ_TABLES = ("task_types", "type_terms", "notes", "note_history", "distilled_runs")

# No value of a note, question or run is near this long (code is kept to 6000
# characters, questions to a few thousand): longer is not a notebook's.
MAX_TEXT_CHARS = 200_000
# The longest value SQLite hands back from a foreign file (UTF-8 bytes, with room).
MAX_VALUE_BYTES = 4 * MAX_TEXT_CHARS
MAX_COUNT = 10**9
# Ids of notes, types and runs: printable, no spaces or brackets (they are shown in
# recall as `[id]` and named on command lines).
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}")
# Our column names: plain identifiers, quoted by us.
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


class ForeignFileError(UserFacingError):
    """A file from elsewhere that cannot be merged or imported; nothing was written.
    One line, whatever the file's name or values hold (they are shown escaped)."""

    def __init__(self, message: str) -> None:
        super().__init__(visible_line(message))


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # TEXT, INTEGER, REAL or BLOB, as our schema declares it
    not_null: bool
    default: Any  # our schema's default (None: none)

    @property
    def quoted(self) -> str:
        return f'"{self.name}"'


@dataclass(frozen=True)
class OurSchema:
    migrations: tuple[str, ...]
    columns: dict[str, tuple[Column, ...]]


def _default(text: str | None) -> Any:
    return None if text is None else pyparse.literal(text)


@functools.cache
def our_schema() -> OurSchema:
    """This version's migrations and the columns of the tables read from other files."""
    db = sqlite3.connect(":memory:")
    try:
        migrations.apply(db)
        names = tuple(r[0] for r in db.execute("select name from _migrations order by rowid"))
        columns = {
            table: tuple(
                Column(name, kind.upper(), bool(not_null), _default(default))
                for _, name, kind, not_null, default, _, _ in db.execute(
                    f"pragma table_xinfo({table})"
                )
            )
            for table in READ_TABLES
        }
    finally:
        db.close()
    for table, cols in columns.items():
        assert all(_IDENTIFIER.fullmatch(c.name) for c in cols), table
    return OurSchema(names, columns)


def checked_row(table: str, raw: dict[str, Any], where: str) -> dict[str, Any]:
    """`raw` (our column names to values) as a row of our `table`: every column of ours,
    each value checked; one missing or empty takes our default (None when there is
    none: lessons/exchange/arrive.py checks what it needs, ids and kinds)."""
    return {
        column.name: checked(raw.get(column.name), column, where)
        for column in our_schema().columns[table]
    }


# No notebook or export this version writes holds such a value.
_FIX = "nothing was written. Repair that value, or get the file again from its source"


def checked(value: Any, column: Column, where: str) -> Any:
    """`value` if it fits `column` (our default when it is None); else the file is refused."""
    if value is None:
        return column.default
    if column.type == "TEXT":
        return checked_text(value, f"{where}: {column.name}")
    if column.type == "INTEGER":
        return checked_int(value, f"{where}: {column.name}", low=-(2**63), high=2**63 - 1)
    if column.type in ("REAL", "FLOAT"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ForeignFileError(f"{where}: {column.name} is not a number; {_FIX}")
        if not math.isfinite(value) or abs(value) > 1e15:
            raise ForeignFileError(f"{where}: {column.name} is out of range; {_FIX}")
        return float(value)
    raise ForeignFileError(f"{where}: {column.name} holds {type(value).__name__}; {_FIX}")


def checked_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    if not isinstance(value, str):
        raise ForeignFileError(f"{what} is not text; {_FIX}")
    if len(value) > limit:
        raise ForeignFileError(f"{what} is longer than {limit} characters; {_FIX}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a JSON escape
        raise ForeignFileError(f"{what} is not valid Unicode text; {_FIX}") from None
    return value


def checked_int(value: Any, what: str, *, low: int = 0, high: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ForeignFileError(f"{what} is not a whole number; {_FIX}")
    if not low <= value <= high:
        raise ForeignFileError(f"{what} is out of range; {_FIX}")
    return value


def checked_id(value: Any, what: str, *, empty_ok: bool = False) -> str | None:
    """A note, type or run id as this notebook writes them; None only if `empty_ok`."""
    if value is None and empty_ok:
        return None
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        shown = visible_line(str(value))[:60]
        raise ForeignFileError(f"{what} is not an id ({shown!r}); {_FIX}")
    return value


def checked_kind(value: str, what: str) -> str:
    if value not in KINDS:
        shown = visible_line(value)[:40]
        raise ForeignFileError(
            f"{what}: a note of kind {shown!r}, which this version does not know; "
            "nothing was written. Upgrade conductor to read it"
        )
    return value
