"""The notebook's SQLite schema, as numbered migrations (append only; never edit one).

Declared as runs.db is (record/migrations.py says the idiom): tables, indexes and the
full-text index through sqlite-utils, SQL only for what it has no word for.

Tables:
- `task_types`: kinds of question. A name, an abstract description, an experience of two
  bounded lists (suggestions and a procedure, JSON), counters, and the statistics that
  match questions to it (`members`, `base`, see lessons/forms/tasktypes.py).
- `type_terms`: how many member questions of a type contain each term.
- `type_template`: the terms that characterise a type, with the evidence each gives.
- `term_df`: in how many distilled questions each term occurs (the background).
- `notes`: what was learned. Kind, a short key a later question would contain, text,
  code, where it came from (run, question, task), the answer, how it was verified,
  confidence, helpful/harmful/use counters, a content hash, a retired flag, and `terms`
  (the full-text index source; ASCII tokens from lessons/forms/terms.py).
- `notes_fts`: FTS5 over `notes.terms`, kept in step by triggers.
- `note_history`, `type_history`: every change, with the run that caused it.
- `recalls`: which run was shown which note, at what rank and score, and the outcome.
- `distilled_runs`: one row per run written into the notebook (so a run is learned once).
- `notebook_meta`: small counters (questions distilled).

A note or a run another notebook brought (`conductor notebook merge` or `import`) says so
in `origin` ('' for what this notebook learned itself); what that file claimed of it is
kept as a claim (a run's in `claimed`, a note's in its history), never in the columns
this notebook's own checks fill (lessons/exchange/arrive.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from record.migrations import Migrations

if TYPE_CHECKING:
    import sqlite_utils  # imported to migrate only (record/migrations.py)

migrations = Migrations("notebook")

TABLES = {
    "task_types",
    "type_terms",
    "type_template",
    "term_df",
    "notes",
    "notes_fts",
    "note_history",
    "type_history",
    "recalls",
    "distilled_runs",
    "notebook_meta",
    "tools",
    "note_vectors",
}


# Three small lookup tables keyed by their terms: stored as their primary key's B-tree
# alone (WITHOUT ROWID), which sqlite-utils cannot say, so its CREATE TABLE gets the
# clause added.
def _without_rowid(create_table_sql: str) -> str:
    return create_table_sql.rstrip().removesuffix(";") + " WITHOUT ROWID"


# The full-text index keeps `_` inside a term and é apart from e (lessons/forms/terms.py
# makes the terms).
NOTES_TOKENIZER = "unicode61 remove_diacritics 0 tokenchars '_'"


@migrations
def m001_notebook(db: sqlite_utils.Database) -> None:
    # Migrations.apply runs this in one transaction: a failure leaves no half-made schema.
    db.table("task_types").create(
        {
            "id": str,
            "name": str,
            "description": str,
            "members": int,
            "base": float,
            "template_questions": int,
            "suggestions": str,
            "procedure": str,
            "inherited_from": str,
            "experience_version": int,
            "notes_since_induction": int,
            "runs": int,
            "correct": int,
            "wrong": int,
            "failed": int,
            "retired": int,
            "created_at": float,
            "updated_at": float,
        },
        pk="id",
        not_null={
            "name", "description", "members", "base", "template_questions", "suggestions",
            "procedure", "experience_version", "notes_since_induction", "runs", "correct",
            "wrong", "failed", "retired", "created_at", "updated_at",
        },
        defaults={
            "description": "", "members": 0, "base": 0, "template_questions": 0,
            "suggestions": "[]", "procedure": "[]", "experience_version": 0,
            "notes_since_induction": 0, "runs": 0, "correct": 0, "wrong": 0, "failed": 0,
            "retired": 0,
        },
    )  # fmt: skip
    db.execute(
        _without_rowid(
            db.create_table_sql(
                "type_terms",
                {"type_id": str, "term": str, "count": int},
                pk=("type_id", "term"),
                not_null={"type_id", "term", "count"},
            )
        )
    )
    db.table("type_terms").create_index(["type_id", "count"], index_name="type_terms_by_count")
    db.table("type_terms").create_index(["term"], index_name="type_terms_by_term")
    db.execute(
        _without_rowid(
            db.create_table_sql(
                "type_template",
                {"term": str, "type_id": str, "frequency": float, "delta": float},
                pk=("term", "type_id"),
                not_null={"term", "type_id", "frequency", "delta"},
            )
        )
    )
    db.table("type_template").create_index(["type_id"], index_name="type_template_by_type")
    db.execute(
        _without_rowid(
            db.create_table_sql("term_df", {"term": str, "df": int}, pk="term", not_null={"df"})
        )
    )

    notes = db.table("notes")
    notes.create(
        {
            "seq": int,
            "id": str,
            "type_id": str,
            "kind": str,
            "key": str,
            "text": str,
            "code": str,
            "answer": str,
            "source_run": str,
            "source_question": str,
            "source_task": str,
            "verification": str,
            "outcome": str,
            "confidence": float,
            "helpful": int,
            "harmful": int,
            "uses": int,
            "support": int,
            "content_hash": str,
            "near_hash": str,
            "retired": int,
            "retired_reason": str,
            "author": str,
            "terms": str,
            "created_at": float,
            "updated_at": float,
        },
        pk="seq",
        not_null={
            "id", "kind", "key", "text", "code", "source_question", "source_task",
            "verification", "outcome", "confidence", "helpful", "harmful", "uses", "support",
            "content_hash", "near_hash", "retired", "author", "terms", "created_at",
            "updated_at",
        },
        defaults={
            "key": "", "text": "", "code": "", "source_question": "", "source_task": "",
            "verification": "none", "outcome": "unverified", "confidence": 0.5,
            "helpful": 0, "harmful": 0, "uses": 0, "support": 1, "retired": 0,
            "author": "distill", "terms": "",
        },
    )  # fmt: skip
    notes.create_index(["id"], index_name="notes_by_id", unique=True)
    notes.create_index(["type_id", "retired", "kind"], index_name="notes_by_type")
    notes.create_index(["content_hash"], index_name="notes_by_hash")
    notes.create_index(["type_id", "kind", "near_hash"], index_name="notes_by_near")
    notes.create_index(["source_run"], index_name="notes_by_run")
    # Most trusted first within a type: an index on an expression, which sqlite-utils
    # cannot declare.
    db.execute(
        "CREATE INDEX notes_by_trust ON notes "
        "(type_id, retired, (helpful - harmful) DESC, support DESC, seq DESC)"
    )
    notes.enable_fts(["terms"], tokenize=NOTES_TOKENIZER, create_triggers=True)
    # sqlite-utils' update trigger re-indexes a note on any update; its counters change
    # at every recall and its terms almost never, so re-index only when they do.
    db.execute("DROP TRIGGER notes_au")
    db.execute(
        """
        CREATE TRIGGER notes_au AFTER UPDATE OF terms ON notes BEGIN
            INSERT INTO notes_fts (notes_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
            INSERT INTO notes_fts (rowid, terms) VALUES (new.seq, new.terms);
        END
        """
    )

    for history, subject, by_subject in (
        ("note_history", "note_id", "note_history_by_note"),
        ("type_history", "type_id", "type_history_by_type"),
    ):
        db.table(history).create(
            {"id": int, subject: str, "at": float, "action": str, "run_id": str, "detail": str},
            pk="id",
            not_null={subject, "at", "action", "detail"},
            defaults={"detail": "{}"},
        )
        db.table(history).create_index([subject], index_name=by_subject)
    db.table("note_history").create_index(["run_id"], index_name="note_history_by_run")

    recalls = db.table("recalls")
    recalls.create(
        {
            "id": int,
            "run_id": str,
            "note_id": str,
            "rank": int,
            "score": float,
            "relevance": float,
            "outcome": str,
            "at": float,
        },
        pk="id",
        not_null={"run_id", "note_id", "rank", "score", "relevance", "at"},
    )
    recalls.create_index(["note_id"], index_name="recalls_by_note")
    recalls.create_index(["run_id"], index_name="recalls_by_run")

    db.table("distilled_runs").create(
        {
            "run_id": str,
            "at": float,
            "question": str,
            "task": str,
            "type_id": str,
            "status": str,
            "answer": str,
            "target": str,
            "verification": str,
            "outcome": str,
            "notes_written": int,
            "notes_merged": int,
            "notes_skipped": int,
        },
        pk="run_id",
        not_null={
            "at", "question", "task", "status", "verification", "outcome", "notes_written",
            "notes_merged", "notes_skipped",
        },
        defaults={
            "task": "", "status": "", "notes_written": 0, "notes_merged": 0,
            "notes_skipped": 0,
        },
    )  # fmt: skip

    meta = db.table("notebook_meta")
    meta.create({"key": str, "value": int}, pk="key", not_null={"value"})
    meta.insert({"key": "questions", "value": 0})


@migrations
def m002_tools_and_problems(db: sqlite_utils.Database) -> None:
    """Tested tools, and the question's hash on runs and notes (problem-level lookups)."""
    tools = db.table("tools")
    tools.create(
        {
            "note_id": str,
            "type_id": str,
            "task": str,
            "spec": str,
            "tests": int,
            "passes": int,
            "tested_on": str,
            "updated_at": float,
        },
        pk="note_id",
        not_null={"task", "spec", "tests", "passes", "tested_on", "updated_at"},
        defaults={"task": "", "tests": 0, "passes": 0, "tested_on": "[]"},
    )
    tools.create_index(["type_id"], index_name="tools_by_type")
    for table, index in (
        ("distilled_runs", "distilled_by_question"),
        ("notes", "notes_by_question"),
    ):
        db.table(table).add_column("question_hash", str, not_null_default="")
        db.table(table).create_index(["question_hash"], index_name=index)


@migrations
def m003_note_vectors(db: sqlite_utils.Database) -> None:
    """Sentence vectors of example notes (the optional semantic index, lessons/read/semantic.py)."""
    db.table("note_vectors").create({"note_id": str, "vec": bytes}, pk="note_id", not_null={"vec"})


@migrations
def m004_provenance(db: sqlite_utils.Database) -> None:
    """Where a note or a learned run came from, when another notebook brought it, and
    what that notebook claimed of a run's answer (JSON)."""
    db.table("notes").add_column("origin", str, not_null_default="")
    db.table("distilled_runs").add_column("origin", str, not_null_default="")
    db.table("distilled_runs").add_column("claimed", str, not_null_default="{}")
