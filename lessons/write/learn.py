"""The write path: a finished run's events in, notes in the notebook, one event out.

Learning is two halves. `lessons.write.prepare.prepare_run` does everything slow
(verification, distillation, the model's reflection and its choice of task type, the
question's vector) outside any transaction, and returns plain data. `write_prepared`
then places the run in a task type, adds its notes and tools, moves the counters of the
notes it was shown and records the run as learned, in one short transaction on the
single writer. Induction, when due, runs after, in its own transaction. On one machine
`learn_from_run` does both; a Ray batch prepares on its workers and writes on the driver.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from conductor_kernel.events import Event, NotesWritten
from conductor_kernel.interfaces import ChatModel, Usage
from conductor_kernel.limits.ledger import MeteredModel
from lessons.forms.problems import question_hash
from lessons.forms.tasktypes import (
    MatchParams,
    add_question,
    create_type,
    describe_offline,
    names_a_kind,
    pick_allowed,
    score_types,
    shape_name,
    template_name,
    template_words,
)
from lessons.forms.toolbox import record_tests, store_tool
from lessons.forms.tools import Tool
from lessons.read import semantic
from lessons.storage.notes import Provenance, add_note, record_recall_feedback
from lessons.storage.store import Notebook
from lessons.values import NoteDraft
from lessons.write.agreement import upgrade_runs
from lessons.write.budget import LearningBudget
from lessons.write.induction import induce_if_due
from lessons.write.prepare import (
    LearnOptions,
    PreparedRun,
    TypeChoice,
    choose_type,
    model_can_reflect,
    prepare_run,
)

__all__ = [
    "LearnOptions",
    "PreparedRun",
    "TypeChoice",
    "choose_type",
    "learn_from_run",
    "model_can_reflect",
    "prepare_run",
    "write_prepared",
]


def learn_from_run(
    book: Notebook,
    events: list[Event],
    *,
    model: ChatModel | None = None,
    options: LearnOptions | None = None,
) -> NotesWritten | None:
    """Distill one finished run into the notebook; the `NotesWritten` event says what."""
    prepared = prepare_run(book, events, model=model, options=options)
    if prepared is None:
        return None
    return write_or_skip(book, prepared, model=model, options=options)


def write_or_skip(
    book: Notebook,
    prepared: PreparedRun,
    *,
    model: ChatModel | None = None,
    options: LearnOptions | None = None,
) -> NotesWritten:
    """Write a prepared run; when that run was already learned, say so instead."""
    written = write_prepared(book, prepared, model=model, options=options)
    if written is not None:
        return written
    return NotesWritten(
        run_id=prepared.run_id,
        notebook=str(book.path),
        verification=prepared.checked.level,
        outcome=prepared.checked.outcome,
        reflection="skipped: run already learned",
        skipped=len(prepared.drafts),
    )


def write_prepared(
    book: Notebook,
    prepared: PreparedRun,
    *,
    model: ChatModel | None = None,
    options: LearnOptions | None = None,
) -> NotesWritten | None:
    """Write one prepared run into `book` (the single writer); None when that run was
    already learned."""
    options = options or LearnOptions()
    verification = prepared.checked
    drafts = prepared.note_drafts()
    vector = prepared.vector_blob()

    def write(conn: sqlite3.Connection) -> dict[str, Any] | None:
        if conn.execute(
            "select 1 from distilled_runs where run_id = ?", (prepared.run_id,)
        ).fetchone():
            return None
        type_id = _place(conn, prepared, options.params)
        written = _write_notes(conn, type_id, prepared, drafts)
        written["tools"] = {}
        for draft, note_id in zip(drafts, written["draft_ids"], strict=True):
            if draft.kind == "example" and vector is not None:
                conn.execute(
                    "insert or ignore into note_vectors (note_id, vec) values (?, ?)",
                    (note_id, vector),
                )
                semantic.claim_vectors(conn)
            if draft.kind == "tool" and draft.skeleton in prepared.tools:
                tool = Tool.from_json(prepared.tools[draft.skeleton])
                store_tool(conn, note_id, type_id, prepared.task, tool)
                tests = prepared.tool_tests.get(draft.skeleton, {})
                written["tools"][note_id] = record_tests(conn, note_id, tests)
        if verification.level == "independent" and prepared.agreeing:
            upgrade_runs(conn, prepared.agreeing, prepared.run_id)
        return written

    result = book.write(write)
    if result is None:
        return None
    online = model_can_reflect(model) and not prepared.idle
    if online and model is not None and prepared.budget:
        # Induction draws on what the run's learning budget has left.
        model = MeteredModel(model, LearningBudget.from_dict(prepared.budget))
    induced = induce_if_due(
        book, result["type_id"], every=options.induction_every, model=model if online else None
    )
    return NotesWritten(
        run_id=prepared.run_id,
        notebook=str(book.path),
        task_type=result["type_id"],
        verification=verification.level,
        outcome=verification.outcome,
        note_ids=result["note_ids"],
        skipped=result["skipped"],
        merged=result["merged"],
        reflection=prepared.reflection,
        feedback=result["feedback"],
        induced=induced,
        tools=result["tools"],
        tool_testing=prepared.tool_testing,
        usage=Usage.from_dict(prepared.usage) if prepared.usage else Usage(),
        budget={k: prepared.budget[k] for k in ("calls", "tokens") if k in prepared.budget},
    )


def _place(conn: sqlite3.Connection, run: PreparedRun, params: MatchParams) -> str:
    """The run's task type: the model's choice, else the lexical match, else a new one.

    The choice may have been made against an older snapshot (a Ray worker's), so a type
    created since that matches by terms, or by the name the model gave, is joined rather
    than made twice; the candidates the model turned down are not joined.
    """
    # A question asked again (another run of the same text) joins the type its first run
    # was placed in and is not counted again: rarity counts questions, not runs, so a
    # problem run seven times (the published runs of every method) keeps its quantities
    # as rare as they are.
    again = conn.execute(
        "select d.type_id from distilled_runs d join task_types t on t.id = d.type_id "
        "where d.question_hash = ? and t.retired = 0 order by d.rowid limit 1",
        (question_hash(run.question),),
    ).fetchone()
    if again is not None:
        return str(again[0])
    terms = set(run.terms)
    choice = TypeChoice(**run.choice) if run.choice else TypeChoice()
    candidates = score_types(conn, terms, limit=5, params=params)
    fresh = [c for c in candidates if c.type_id not in run.rejected_types]
    best = candidates[0] if candidates else None

    def allowed(pick_id: str | None) -> bool:
        # The model's pick stands only where the question's own words allow it.
        pick = next((c for c in candidates if c.type_id == pick_id), None)
        return pick_allowed(pick, best, params=params)

    type_id: str | None = None
    if choice.type_id and allowed(choice.type_id):
        type_id = str(choice.type_id)
    elif fresh and fresh[0].evidence >= params.join_evidence:
        type_id = fresh[0].type_id
    elif choice.name:
        row = conn.execute(
            "select id from task_types where lower(name) = lower(?) and retired = 0 "
            "order by created_at limit 1",
            (choice.name,),
        ).fetchone()
        type_id = row[0] if row and allowed(row[0]) else None
    if type_id is None:
        # New kind of question: start from the experience of the most similar type.
        parent = None
        for match in candidates:
            row = conn.execute(
                "select id, suggestions, procedure from task_types where id = ?",
                (match.type_id,),
            ).fetchone()
            if row and (row[1] != "[]" or row[2] != "[]") and match.relevance(params) >= 0.05:
                parent = {"id": row[0], "suggestions": row[1], "procedure": row[2]}
                break
        name, description = describe_offline(run.question, [])
        type_id = create_type(
            conn,
            name=choice.name or name,
            description=choice.description or description,
            run_id=run.run_id,
            inherit_from=parent,
        )
    add_question(conn, type_id, terms, params=params)
    _name_by_shared_words(conn, type_id, run.question)
    return type_id


def _name_by_shared_words(conn: sqlite3.Connection, type_id: str, question: str) -> None:
    """A type named by its first question's form gets the words its questions share."""
    row = conn.execute("select name, members from task_types where id = ?", (type_id,)).fetchone()
    if row is None or not row[0].startswith("new kind:") or row[1] < 2:
        return
    shared = template_words(conn, type_id, limit=5, question=question)
    if len(shared) >= 2 and names_a_kind(shared):
        name = template_name(question, shared)
        conn.execute("update task_types set name = ? where id = ?", (name, type_id))
        # The first question's notes were keyed by its form alone; they take the name
        # too (a key is what lists show; recall searches the notes' terms, not it).
        conn.execute(
            "update notes set key = ? where type_id = ? and key like 'new kind:%'",
            (name, type_id),
        )


def _write_notes(
    conn: sqlite3.Connection, type_id: str, run: PreparedRun, drafts: list[NoteDraft]
) -> dict[str, Any]:
    verification = run.checked
    members = conn.execute("select members from task_types where id = ?", (type_id,)).fetchone()
    shared = template_words(conn, type_id, question=run.question) if members[0] >= 2 else []
    if not names_a_kind(shared):
        shared = []  # "what is the of" names no kind: the question's form does
    # A one-question type cannot yet tell its kind's words from the question's own.
    key = template_name(run.question, shared) if shared else shape_name(run.question)
    source = Provenance(
        run_id=run.run_id,
        question=run.question,
        task=run.task,
        answer=run.answer,
        verification=verification.level,
        outcome=verification.outcome,
    )
    note_ids: list[str] = []
    draft_ids: list[str] = []
    counts = {"added": 0, "merged": 0, "skipped": 0}
    for draft in drafts:
        if not draft.key:
            draft.key = key
        added = add_note(conn, type_id, draft, source)
        draft_ids.append(added.note_id)
        counts[added.action] += 1
        if added.note_id not in note_ids:
            note_ids.append(added.note_id)
    feedback: dict[str, str] = {}
    if run.recalled:
        feedback = record_recall_feedback(
            conn,
            run.run_id,
            run.recalled,
            verification.outcome,
            run.status,
            cited=set(run.cited),
        )
    outcome_column = {"correct": "correct", "wrong": "wrong", "unanswered": "failed"}.get(
        verification.outcome
    )
    conn.execute(
        "update task_types set runs = runs + 1, notes_since_induction = notes_since_induction + ?"
        + (f", {outcome_column} = {outcome_column} + 1" if outcome_column else "")
        + " where id = ?",
        (counts["added"], type_id),
    )
    conn.execute(
        "insert into distilled_runs (run_id, at, question, task, type_id, status, answer, "
        "target, verification, outcome, notes_written, notes_merged, notes_skipped, "
        "question_hash) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run.run_id,
            time.time(),
            run.question,
            run.task,
            type_id,
            run.status,
            run.answer,
            run.target,
            verification.level,
            verification.outcome,
            counts["added"],
            counts["merged"],
            counts["skipped"],
            question_hash(run.question),
        ),
    )
    return {
        "type_id": type_id,
        "note_ids": note_ids,
        "draft_ids": draft_ids,
        "merged": counts["merged"],
        "skipped": counts["skipped"],
        "feedback": feedback,
    }
