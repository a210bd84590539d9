"""Both databases are declared one way (record/migrations.py): numbered steps in order,
named `mNNN_what`, and the tables a usable file holds."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from lessons.storage import schema as notebook_schema
from record.migrations import Migrations
from transcripts import runs_schema


@pytest.mark.parametrize("module", [runs_schema, notebook_schema], ids=["runs", "notebook"])
def test_each_database_has_numbered_steps_in_order_and_names_its_tables(module: ModuleType) -> None:
    migrations = module.migrations
    assert isinstance(migrations, Migrations)
    names = [step.__name__ for step in migrations._steps]
    assert all(re.fullmatch(r"m\d{3}_[a-z0-9_]+", name) for name in names), names
    assert [int(name[1:4]) for name in names] == list(range(1, len(names) + 1))
    tables = module.TABLES
    assert isinstance(tables, set) and tables
