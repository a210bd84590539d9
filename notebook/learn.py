"""The write path: a finished run's events in, notes in the notebook, one event out.

Order matters for concurrent writers: everything slow (verification, distillation, the
model's reflection and its choice of task type) happens first, outside any transaction;
then one short transaction places the run in a task type, adds its notes, moves the
counters of the notes it was shown, and records the run as learned. Induction, when due,
runs after, in its own transaction.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from conductor.events import Event, NotesWritten
from conductor.interfaces import ChatModel, Message, Sandbox
from notebook import prompts
from notebook.agreement import agreeing_runs, cited_notes, shown_its_own_answer, upgrade_runs
from notebook.distill import NoteDraft, distill_run, excerpt, reflect
from notebook.induction import induce_if_due
from notebook.notes import Provenance, add_note, record_recall_feedback
from notebook.problems import core_input, question_hash
from notebook.recall import semantic_wanted
from notebook.runview import RunView, view_run
from notebook.store import Notebook
from notebook.tasktypes import (
    PARAMS,
    MatchParams,
    TypeMatch,
    add_question,
    create_type,
    describe_offline,
    score_types,
    shape_name,
    template_name,
    template_words,
)
from notebook.terms import question_terms
from notebook.toolbox import best_tools, run_tool, store_tool, tool_draft
from notebook.verify import LEARNABLE_STATUSES, Verification, judge_for, verify_run

log = logging.getLogger("conductor.notebook")

OFFLINE_MODEL_PREFIXES = ("demo", "scripted", "replay")


def model_can_reflect(model: ChatModel | None) -> bool:
    """A real model can reflect; replayed, scripted and demo ones only repeat a script."""
    if model is None:
        return False
    flag = getattr(model, "offline", None)
    if flag is not None:
        return not flag
    name = (getattr(model, "name", "") or "").lower()
    cls = type(model).__name__.lower()
    return not (
        name.startswith(OFFLINE_MODEL_PREFIXES) or any(p in cls for p in OFFLINE_MODEL_PREFIXES)
    )


@dataclass
class LearnOptions:
    reflect: bool = True
    """Ask the model for insights and pitfalls (only when it is a real model)."""
    pick_type: bool = True
    """Let the model choose the task type among the lexical candidates."""
    induction_every: int = 5
    """Induce a type's experience after this many new notes in it."""
    params: MatchParams = field(default_factory=lambda: PARAMS)
    use_target: bool = True
    """Judge against the run's target; off, the labels are what the evidence alone gives."""
    sandbox: Sandbox | None = None
    """Where tools reproduce answers and P3's `sat` runs; None: neither happens."""
    semantic: bool = field(default_factory=lambda: semantic_wanted())
    """Write example notes' question vectors (the optional semantic index)."""


@dataclass
class TypeChoice:
    type_id: str | None = None  # an existing type the model chose
    name: str = ""
    description: str = ""
    asked: bool = False


def choose_type(
    model: ChatModel, question: str, candidates: list[tuple[TypeMatch, str]]
) -> TypeChoice:
    """The model picks one candidate type or none, and describes the question's kind."""
    listing = "\n".join(
        f"{i}. {match.name}: {description}" for i, (match, description) in enumerate(candidates, 1)
    )
    prompt = prompts.TYPE_PICK.format(
        question=excerpt(question, 3000), candidates=listing or "(none yet)"
    )
    try:
        reply = model.complete(
            [Message("user", prompt + "\n" + prompts.TYPE_NAME)],
            system=prompts.TYPE_SYSTEM,
            role="expert",
            max_tokens=200,
        ).text
    except Exception as exc:  # the lexical choice stands in
        log.warning("task type choice by the model failed: %s", exc)
        return TypeChoice()
    choice = TypeChoice(asked=True)
    kind = re.search(r"(?im)^\s*KIND:\s*(\w+)", reply)
    if kind and kind.group(1).isdigit() and 1 <= int(kind.group(1)) <= len(candidates):
        choice.type_id = candidates[int(kind.group(1)) - 1][0].type_id
    description = re.search(r"(?im)^\s*DESCRIPTION:\s*(.+)$", reply)
    name = re.search(r"(?im)^\s*NAME:\s*(.+)$", reply)
    choice.description = excerpt(description.group(1), 300) if description else ""
    choice.name = excerpt(name.group(1), 60) if name else ""
    return choice


def learn_from_run(
    book: Notebook,
    events: list[Event],
    *,
    model: ChatModel | None = None,
    options: LearnOptions | None = None,
) -> NotesWritten | None:
    """Distill one finished run into the notebook; the `NotesWritten` event says what."""
    options = options or LearnOptions()
    view = view_run(events)
    if view is None or not view.question.strip():
        return None
    if view.status not in LEARNABLE_STATUSES:
        log.info("run %s ended %s: nothing learned", view.run_id, view.status or "unfinished")
        return None
    verification = _verify(book, events, view, options)
    drafts = distill_run(view, verification)
    tools = _tool_drafts(view, verification)
    drafts.extend(draft for draft, _tool in tools)
    online = model_can_reflect(model)
    reflection = "skipped: no model" if model is None else "skipped: offline model"
    if online and options.reflect:
        assert model is not None
        extra, reflection = reflect(model, view, verification)
        drafts.extend(extra)
    elif online:
        reflection = "skipped: turned off"
    terms = question_terms(view.question)
    choice = TypeChoice()
    if online and options.pick_type:
        assert model is not None
        with book.reading() as conn:
            candidates = score_types(conn, terms, limit=5, params=options.params)
        described = _descriptions(book, candidates)
        choice = choose_type(model, view.question, described)

    vector = _vector(view.question) if options.semantic else None

    def write(conn: sqlite3.Connection) -> dict[str, Any] | None:
        if conn.execute("select 1 from distilled_runs where run_id = ?", (view.run_id,)).fetchone():
            return None
        type_id = _place(conn, view, terms, choice, options.params)
        written = _write_notes(conn, type_id, view, verification, drafts)
        by_hash = {draft.skeleton: tool for draft, tool in tools}
        for draft, note_id in zip(drafts, written["draft_ids"], strict=True):
            if draft.kind == "example" and vector is not None:
                conn.execute(
                    "insert or ignore into note_vectors (note_id, vec) values (?, ?)",
                    (note_id, vector),
                )
            if draft.kind == "tool":
                store_tool(conn, note_id, type_id, view.task, by_hash[draft.skeleton])
        if verification.level == "independent" and agreeing:
            upgrade_runs(conn, agreeing, view.run_id)
        return written

    agreeing = agreeing_runs(book, view) if verification.level == "independent" else []
    result = book.write(write)
    if result is None:
        return NotesWritten(
            run_id=view.run_id,
            notebook=str(book.path),
            verification=verification.level,
            outcome=verification.outcome,
            reflection="skipped: run already learned",
            skipped=len(drafts),
        )
    induced = induce_if_due(
        book, result["type_id"], every=options.induction_every, model=model if online else None
    )
    return NotesWritten(
        run_id=view.run_id,
        notebook=str(book.path),
        task_type=result["type_id"],
        verification=verification.level,
        outcome=verification.outcome,
        note_ids=result["note_ids"],
        skipped=result["skipped"],
        merged=result["merged"],
        reflection=reflection,
        feedback=result["feedback"],
        induced=induced,
    )


def _descriptions(book: Notebook, matches: list[TypeMatch]) -> list[tuple[TypeMatch, str]]:
    out = []
    for match in matches:
        row = book.read_one("select description from task_types where id = ?", (match.type_id,))
        out.append((match, row["description"] if row else ""))
    return out


def _place(
    conn: sqlite3.Connection,
    view: RunView,
    terms: set[str],
    choice: TypeChoice,
    params: MatchParams,
) -> str:
    """The run's task type: the model's choice, else the lexical match, else a new one."""
    exists = (
        choice.type_id
        and conn.execute(
            "select 1 from task_types where id = ? and retired = 0", (choice.type_id,)
        ).fetchone()
    )
    candidates = score_types(conn, terms, limit=3, params=params)
    if exists:
        type_id = str(choice.type_id)
    elif candidates and candidates[0].evidence >= params.join_evidence and not choice.asked:
        type_id = candidates[0].type_id
    else:
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
        name, description = describe_offline(view.question, [])
        type_id = create_type(
            conn,
            name=choice.name or name,
            description=choice.description or description,
            run_id=view.run_id,
            inherit_from=parent,
        )
    add_question(conn, type_id, terms, params=params)
    _name_by_shared_words(conn, type_id, view.question)
    return type_id


def _name_by_shared_words(conn: sqlite3.Connection, type_id: str, question: str) -> None:
    """A type named by its first question's form gets the words its questions share."""
    row = conn.execute("select name, members from task_types where id = ?", (type_id,)).fetchone()
    if row is None or not row[0].startswith("new kind:") or row[1] < 2:
        return
    shared = template_words(conn, type_id, limit=5, question=question)
    if len(shared) >= 2:
        name = template_name(question, shared)
        conn.execute("update task_types set name = ? where id = ?", (name, type_id))


def _write_notes(
    conn: sqlite3.Connection,
    type_id: str,
    view: RunView,
    verification: Verification,
    drafts: list[NoteDraft],
) -> dict[str, Any]:
    members = conn.execute("select members from task_types where id = ?", (type_id,)).fetchone()
    shared = template_words(conn, type_id, question=view.question) if members[0] >= 2 else []
    # A one-question type cannot yet tell its kind's words from the question's own.
    key = template_name(view.question, shared) if shared else shape_name(view.question)
    source = Provenance(
        run_id=view.run_id,
        question=view.question,
        task=view.task,
        answer=view.answer,
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
    if view.recall is not None and view.recall.notes:
        feedback = record_recall_feedback(
            conn,
            view.run_id,
            view.recall.notes,
            verification.outcome,
            view.status,
            cited=cited_notes(view),
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
            view.run_id,
            time.time(),
            view.question,
            view.task,
            type_id,
            view.status,
            view.answer,
            view.target,
            verification.level,
            verification.outcome,
            counts["added"],
            counts["merged"],
            counts["skipped"],
            question_hash(view.question),
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


def _verify(
    book: Notebook, events: list[Event], view: RunView, options: LearnOptions
) -> Verification:
    """The scorer's verdict; without a target, a tested tool's or another run's agreement."""
    verification = verify_run(events, sandbox=options.sandbox, use_target=options.use_target)
    if verification.level not in ("none",) or verification.outcome != "unverified":
        return verification
    assert view.answer is not None
    if options.sandbox is not None and not shown_its_own_answer(book, view):
        for stored in best_tools(book, view.question, exclude_question=True)[:1]:
            if stored.tests and stored.pass_rate >= 0.9:
                answer = run_tool(stored.tool, view.question, options.sandbox)
                if answer is not None and _same_answer(view, answer, view.answer):
                    return verify_run(events, reproduced=True, use_target=options.use_target)
    if agreeing_runs(book, view):
        return Verification(
            "independent", "verified", "another run not shown it gave the same answer"
        )
    return verification


def _same_answer(view: RunView, a: str, b: str) -> bool:
    from notebook.agreement import answers_agree

    return answers_agree(judge_for(view.task), view.question, a, b)


def _tool_drafts(view: RunView, verification: Verification) -> list[tuple[NoteDraft, Any]]:
    """Tools from the programs that printed a trusted answer (one per distinct program)."""
    if not verification.trustworthy or view.answer is None:
        return []
    out: dict[str, tuple[NoteDraft, Any]] = {}
    for run in view.code_runs:
        if run.ok and run.code.strip():
            made = tool_draft(view.question, run.code, run.stdout, view.answer)
            if made is not None:
                out.setdefault(made[1].tool_hash, made)
    return list(out.values())


def _vector(question: str) -> bytes | None:
    """The question's sentence vector, made before the write transaction (it is slow)."""
    from notebook import semantic

    if not semantic.available():
        return None
    return semantic.vector_blob(core_input(question))
