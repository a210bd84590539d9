"""Another notebook's types, notes and runs written into this one, none of their claims
believed (merge and import both write through here, in the target's one transaction).

Trust is earned here, never brought:
- A note arrives as a new note of ours: a fresh id, its hashes and index terms computed
  from its own text, unverified (verification, outcome, confidence and the
  helpful/harmful/uses/support counters are this notebook's defaults), written by
  "another notebook", and `origin` saying where it came from. What the file said of it (its level, counters, hash, source
  run, history) is kept in its history as a claim: the arrival row (`merged-from` or
  `imported`, with `claimed`), then one `claimed` row per event the file lists. It earns
  a level only as a note of ours does (lessons/write/agreement.py, a better-verified
  version learned here, a tool tested here).
- It never changes a note of ours: the same content (kind, key, text and code, byte for
  byte) already in the same type adds only the claims to that note's history, once;
  anything else, a hash collision included, is added beside it.
- A run is recorded as learned (so it is learned once), unverified, its answer and
  target kept as claims in `claimed`: no answer of another file corroborates ours or
  tests a tool of ours. A note's source run that names a run of ours is a claim too.
- A type is matched to ours (same id, name, or terms) or copied with its name,
  description and term counts; its experience (suggestions, procedure) and counters
  are claims in its history.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from lessons.exchange.incoming import IncomingNote, IncomingRun, IncomingType
from lessons.forms.problems import question_hash
from lessons.forms.tasktypes import PARAMS, add_question, materialize, score_types
from lessons.forms.terms import question_terms
from lessons.storage.notes import note_terms
from lessons.storage.store import dumps, new_id, record_note_history, record_type_history
from lessons.values import NoteDraft, code_skeleton

# Who wrote a note that arrived: not this notebook's distiller, whatever the file says
# (lessons/write/induction.py builds a type's experience from the distiller's pitfalls).
AUTHOR = "another notebook"
COUNTS = (
    "types_added", "types_matched", "notes_added", "notes_skipped", "runs_added",
    "runs_skipped",
)  # fmt: skip


class Arrival:
    """One file's rows arriving in `conn` (inside the caller's transaction)."""

    def __init__(self, conn: sqlite3.Connection, how: str, source: Path) -> None:
        assert how in ("merged", "imported")
        self.conn = conn
        self.file = str(source)
        self.origin = f"{how} from {self.file}"
        self.action = "merged-from" if how == "merged" else "imported"
        self.counts = dict.fromkeys(COUNTS, 0)
        self._types: dict[str, str] = {}  # the file's type id -> ours
        self._copied: set[str] = set()

    # -- types --------------------------------------------------------------------------

    def task_type(self, kind: IncomingType) -> None:
        found = self._matching_type(kind)
        if found is not None:
            self._types[kind.id] = found
            self.counts["types_matched"] += 1
            return
        self.conn.execute(
            "insert into task_types (id, name, description, retired, members, created_at, "
            "updated_at) values (?, ?, ?, ?, ?, ?, ?)",
            (kind.id, kind.name, kind.description, kind.retired, kind.members,
             kind.created_at or time.time(), time.time()),
        )  # fmt: skip
        self.conn.executemany(
            "insert into type_terms (type_id, term, count) values (?, ?, ?)",
            [(kind.id, term, count) for term, count in kind.terms.items()],
        )
        self.conn.executemany(
            "insert into term_df (term, df) values (?, ?) "
            "on conflict(term) do update set df = df + excluded.df",
            list(kind.terms.items()),
        )
        self.conn.execute(
            "update notebook_meta set value = value + ? where key = 'questions'", (kind.members,)
        )
        materialize(self.conn, kind.id)
        record_type_history(
            self.conn, kind.id, self.action, detail={"from": self.file, "claimed": kind.claimed}
        )
        self._types[kind.id] = kind.id
        self._copied.add(kind.id)
        self.counts["types_added"] += 1

    def _matching_type(self, kind: IncomingType) -> str | None:
        """Ours of the same id, or name, or (by their terms) the same kind of question."""
        conn = self.conn
        if conn.execute("select 1 from task_types where id = ?", (kind.id,)).fetchone():
            return kind.id
        row = conn.execute(
            "select id from task_types where lower(name) = lower(?) and retired = 0 limit 1",
            (kind.name,),
        ).fetchone()
        if row is None and kind.terms:
            top = sorted(kind.terms, key=lambda t: -kind.terms[t])[:40]
            best = score_types(conn, set(top), limit=1)
            if best and best[0].evidence >= PARAMS.join_evidence:
                row = (best[0].type_id,)
        if row is None:
            return None
        record_type_history(conn, row[0], self.action, detail={"type": kind.id, "from": self.file})
        return str(row[0])

    def _type_for(self, type_id: str | None) -> str | None:
        """Our type for the file's type id: the one it was matched to or copied as, ours
        of that id, or none."""
        if type_id is None:
            return None
        if type_id in self._types:
            return self._types[type_id]
        known = self.conn.execute("select 1 from task_types where id = ?", (type_id,)).fetchone()
        return type_id if known else None

    # -- notes --------------------------------------------------------------------------

    def note(self, note: IncomingNote) -> None:
        type_id = self._type_for(note.type_id)
        skeleton = code_skeleton(note.code) if note.kind == "code" else ""
        draft = NoteDraft(kind=note.kind, text=note.text, code=note.code, key=note.key,
                          skeleton=skeleton)  # fmt: skip
        same = self._same_note(type_id, draft)
        if same is not None:
            self.counts["notes_skipped"] += 1
            if not self._claims_recorded(same, note.id):
                self._record_claims(same, note)
            return
        source_run = note.source_run if not self._our_run(note.source_run) else None
        note_id = new_id("n")
        now = time.time()
        self.conn.execute(
            "insert into notes (id, type_id, kind, key, text, code, answer, source_run, "
            "source_question, source_task, content_hash, near_hash, retired, retired_reason, "
            "author, terms, created_at, updated_at, question_hash, origin) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (note_id, type_id, note.kind, note.key, note.text, note.code, note.answer,
             source_run, note.source_question, note.source_task, draft.content_hash,
             draft.near_hash, note.retired, note.retired_reason, AUTHOR,
             note_terms(type_id, draft, note.source_question), note.created_at or now, now,
             question_hash(note.source_question), self.origin),
        )  # fmt: skip
        self._record_claims(note_id, note)
        self.counts["notes_added"] += 1

    def _same_note(self, type_id: str | None, draft: NoteDraft) -> str | None:
        """Ours with exactly this kind, key, text and code in the same type (the hash only
        finds candidates; its answer is the run's it came from, not its content)."""
        for note_id, kind, key, text, code in self.conn.execute(
            "select id, kind, key, text, code from notes where content_hash = ? and type_id is ?",
            (draft.content_hash, type_id),
        ):
            if (kind, key, text, code) == (draft.kind, draft.key, draft.text, draft.code):
                return str(note_id)
        return None

    def _our_run(self, run_id: str | None) -> bool:
        """A run this notebook learned itself (not one another file brought)."""
        row = self.conn.execute(
            "select origin from distilled_runs where run_id = ?", (run_id,)
        ).fetchone()
        return row is not None and row[0] == ""

    def _claims_recorded(self, note_id: str, foreign_id: str) -> bool:
        return (
            self.conn.execute(
                "select 1 from note_history where note_id = ? and action = ? "
                "and json_extract(detail, '$.from') = ? "
                "and json_extract(detail, '$.from_note') = ? limit 1",
                (note_id, self.action, self.file, foreign_id),
            ).fetchone()
            is not None
        )

    def _record_claims(self, note_id: str, note: IncomingNote) -> None:
        detail: dict[str, Any] = {"from": self.file, "from_note": note.id, "claimed": note.claimed}
        record_note_history(self.conn, note_id, self.action, detail=detail)
        self.conn.executemany(
            "insert into note_history (note_id, at, action, run_id, detail) "
            "values (?, ?, 'claimed', ?, ?)",
            [
                (note_id, event.at or time.time(), event.run_id,
                 dumps({"from": self.file, "action": event.action, "detail": event.detail}))
                for event in note.history
            ],
        )  # fmt: skip

    # -- runs ---------------------------------------------------------------------------

    def run(self, run: IncomingRun) -> None:
        conn = self.conn
        if conn.execute("select 1 from distilled_runs where run_id = ?", (run.run_id,)).fetchone():
            self.counts["runs_skipped"] += 1
            return
        type_id = self._type_for(run.type_id)
        conn.execute(
            "insert into distilled_runs (run_id, at, question, task, type_id, status, "
            "verification, outcome, question_hash, origin, claimed) "
            "values (?, ?, ?, ?, ?, ?, 'none', 'unverified', ?, ?, ?)",
            (run.run_id, run.at or time.time(), run.question, run.task, type_id, run.status,
             question_hash(run.question), self.origin, dumps(run.claimed)),
        )  # fmt: skip
        self.counts["runs_added"] += 1
        if type_id is not None and type_id not in self._copied:  # a copy brought its counts
            add_question(conn, type_id, question_terms(run.question))
