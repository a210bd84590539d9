"""Helpers shared by tests, importable as `support` from any test folder.

(Importing them from `conftest` is ambiguous: pytest may load another folder's
conftest.py under that name.)
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_root() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    return Path(env) if env else REPO.parent / "shared"


def meta_prompting_dir() -> Path:
    return shared_root() / "data" / "meta-prompting"


def skip_or_fail(reason: str, require_var: str) -> None:
    """Skip, or fail when the environment says the resource is required."""
    if os.environ.get(require_var) == "1":
        pytest.fail(f"{reason} (required because {require_var}=1)")
    pytest.skip(reason)


def docker_reason() -> str | None:
    """None when a Docker engine answers; otherwise why not."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:  # any failure means: no usable engine here
        return f"no Docker engine: {exc}"
    return None


def schema_shape(conn: sqlite3.Connection) -> dict[str, Any]:
    """What a database's schema means, whatever SQL text declared it: each table's
    columns (name, type, NOT NULL, default, key position), whether it has rowids, and
    its indexes (columns, order, uniqueness; a unique constraint and a unique index
    compare equal). Triggers are compared by what they do, in the tests that use this."""
    shape: dict[str, Any] = {}
    tables = conn.execute("select name, sql from sqlite_master where type = 'table'")
    for name, sql in sorted(tables):
        columns = [
            (col, kind.upper(), notnull, default, pk, hidden)
            for _, col, kind, notnull, default, pk, hidden in conn.execute(
                f"pragma table_xinfo([{name}])"
            )
        ]
        indexes = set()
        for _, index, unique, origin, partial in conn.execute(f"pragma index_list([{name}])"):
            keys = tuple(
                (col if cid != -2 else _index_expression(conn, index), desc, collation)
                for _, cid, col, desc, collation, key in conn.execute(
                    f"pragma index_xinfo([{index}])"
                )
                if key
            )
            label = "unique" if unique and origin != "pk" else index if origin == "c" else origin
            indexes.add((label, keys, partial))
        rowid = "without rowid" not in " ".join((sql or "").lower().split())
        shape[name] = {"columns": columns, "indexes": sorted(indexes), "rowid": rowid}
    return shape


def _index_expression(conn: sqlite3.Connection, index: str) -> str:
    (sql,) = conn.execute("select sql from sqlite_master where name = ?", (index,)).fetchone()
    return "".join(sql.lower().replace("[", "").replace("]", "").split())


def modules_imported_by(*args: str) -> set[str]:
    """The modules `python -m conductor.cli ARGS` imports (by `-X importtime`): what a
    fast-start test measures instead of seconds, which measure the machine's load."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "conductor.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
