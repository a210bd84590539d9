"""Induction: merging a task type's notes into its experience, two capped lists.

Every so many new notes in a type, its *suggestions* and *procedure* are rebuilt from
its notes (Self-Evolving GPT's experience; ACE's lesson that one rewrite must never wipe
the memory: the previous lists go to `type_history`, and the notes themselves stay).
With a real model the lists are rewritten by the model from the current lists and the
best notes; without one, deterministically: the best-supported procedure that worked,
and the best-ranked insights, pitfalls and code.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from typing import Any

from conductor_kernel.interfaces import ChatModel
from lessons import prompts
from lessons.forms.tasktypes import template_words
from lessons.storage.store import Notebook, dumps, record_type_history
from lessons.values import excerpt
from lessons.write.asking import ask, is_placeholder
from lessons.write.budget import OverBudget

log = logging.getLogger("conductor.notebook")

MAX_ITEMS = 8
NOTES_CONSIDERED = 24
_RANK_SQL = (
    "(helpful - harmful) desc, "
    "case verification when 'target' then 3 when 'sandbox' then 2 when 'agreement' then 1 "
    "else 0 end desc, support desc, confidence desc, seq desc"
)


def induce_if_due(
    book: Notebook, type_id: str, *, every: int, model: ChatModel | None = None
) -> bool:
    row = book.read_one(
        "select notes_since_induction, experience_version from task_types where id = ?",
        (type_id,),
    )
    if row is None or every <= 0 or row["notes_since_induction"] < every:
        return False
    return induce(book, type_id, model=model, expected_version=row["experience_version"])


def induce(
    book: Notebook,
    type_id: str,
    *,
    model: ChatModel | None = None,
    expected_version: int | None = None,
) -> bool:
    """Rebuild a type's experience; False when another writer got there first."""
    kind = book.read_one("select * from task_types where id = ?", (type_id,))
    if kind is None:
        return False
    notes = [
        dict(r)
        for r in book.read(
            f"select * from notes where type_id = ? and retired = 0 order by {_RANK_SQL} "
            f"limit {NOTES_CONSIDERED * 4}",
            (type_id,),
        )
    ]
    notes = [n for n in notes if _evidence_for_experience(n)]
    suggestions, procedure = deterministic_experience(notes)
    author = "deterministic"
    if model is not None:
        induced = _induce_with_model(model, dict(kind), notes)
        if induced is not None:
            suggestions, procedure = induced
            author = "model"

    def apply(conn: sqlite3.Connection) -> bool:
        current = conn.execute(
            "select experience_version, suggestions, procedure, name, description "
            "from task_types where id = ?",
            (type_id,),
        ).fetchone()
        if current is None:
            return False
        if expected_version is not None and current[0] != expected_version:
            return False
        new_s, new_p = dumps(suggestions), dumps(procedure)
        name, description = current[3], current[4]
        if description.startswith("Questions like"):
            # Named offline from its first question: name it by what its questions share.
            sample = conn.execute(
                "select question from distilled_runs where type_id = ? order by at desc limit 1",
                (type_id,),
            ).fetchone()
            words = template_words(conn, type_id, limit=5, question=sample[0] if sample else "")
            if len(words) >= 2:
                name = " ".join(words)
                head = description.split(" They contain:")[0]
                description = f"{head} They contain: {', '.join(words)}."
        conn.execute(
            "update task_types set suggestions = ?, procedure = ?, name = ?, description = ?, "
            "experience_version = experience_version + 1, notes_since_induction = 0, "
            "updated_at = ? where id = ?",
            (new_s, new_p, name, description, time.time(), type_id),
        )
        record_type_history(
            conn,
            type_id,
            "induced",
            detail={
                "author": author,
                "before": {
                    "suggestions": json.loads(current[1]),
                    "procedure": json.loads(current[2]),
                },
                "after": {"suggestions": suggestions, "procedure": procedure},
                "name": name,
            },
        )
        return True

    return book.write(apply)


RIGHT = ("correct", "verified")


def _evidence_for_experience(note: dict[str, Any]) -> bool:
    """Whether a note may shape its type's experience, which recall shows without a
    trust label: what the runs did that was right, and what went wrong as it happened
    (a failure the distiller recorded). A model's lesson from a run that was wrong or
    unchecked has no evidence behind it ("use PEMDAS" from five wrong answers)."""
    if note["kind"] == "pitfall" and note["author"] == "distill":
        return True
    return note["outcome"] in RIGHT


def deterministic_experience(notes: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Suggestions and a procedure from ranked notes, with no model."""
    suggestions: list[str] = []
    for note in notes:
        if len(suggestions) >= MAX_ITEMS:
            break
        if note["kind"] == "insight":
            suggestions.append(f"{note['text']} (note {note['id']})")
        elif note["kind"] == "pitfall" and note["author"] != "distill":
            suggestions.append(f"Avoid: {note['text']} (note {note['id']})")
    code = [n for n in notes if n["kind"] == "code" and n["outcome"] in RIGHT]
    if code and len(suggestions) < MAX_ITEMS:
        best = code[0]
        suggestions.append(
            f"Working code for this kind of question exists (note {best['id']}, worked "
            f"{best['support']} time(s)): give it to Expert Python to adapt instead of "
            "starting afresh."
        )
    wrong = [n for n in notes if n["kind"] == "pitfall" and n["author"] == "distill"]
    for note in wrong[: max(0, min(2, MAX_ITEMS - len(suggestions)))]:
        suggestions.append(f"A past mistake to avoid: {excerpt(note['text'], 220)}")
    procedure: list[str] = []
    # Only a procedure that gave a right answer is offered as one that worked.
    worked = [n for n in notes if n["kind"] == "procedure" and n["outcome"] in RIGHT]
    if worked:
        best = max(worked, key=lambda n: (n["support"], n["helpful"] - n["harmful"]))
        steps = re.split(r"\s*\d+\.\s+", best["text"].split(":", 1)[-1])
        procedure = [s.strip() for s in steps if s.strip()][:MAX_ITEMS]
    return suggestions[:MAX_ITEMS], procedure


def _induce_with_model(
    model: ChatModel, kind: dict[str, Any], notes: list[dict[str, Any]]
) -> tuple[list[str], list[str]] | None:
    listing = "\n".join(
        f"- [{n['kind']}; helped {n['helpful']}, hurt {n['harmful']}, seen {n['support']}x] "
        f"{excerpt(n['text'], 300)}"
        for n in reversed(notes[:NOTES_CONSIDERED])
    )
    prompt = prompts.INDUCTION.format(
        name=kind["name"],
        description=kind["description"],
        suggestions="\n".join(f"- {s}" for s in json.loads(kind["suggestions"])) or "(none)",
        procedure="\n".join(f"{i}. {s}" for i, s in enumerate(json.loads(kind["procedure"]), 1))
        or "(none)",
        notes=listing or "(none)",
        max_items=MAX_ITEMS,
    )
    try:
        reply = ask(model, prompt, system=prompts.INDUCTION_SYSTEM, max_tokens=900).text
    except OverBudget:  # not made: the run's learning budget is spent
        return None
    except Exception as exc:  # the deterministic lists stand in
        log.warning("induction by the model failed: %s", exc)
        return None
    return parse_experience(reply)


# How the prompt lists a note; a model may copy it in front of an item.
_NOTE_LABEL = re.compile(r"^\[\w+; helped \d+, hurt \d+, seen \d+x\]\s*")


def parse_experience(reply: str) -> tuple[list[str], list[str]] | None:
    """The two lists from the model's reply; None when it is out of form or holds only
    the prompt's slots. An item given twice is kept once."""
    parts = re.split(r"(?im)^\s*PROCEDURE:\s*$", reply, maxsplit=1)
    if len(parts) != 2 or not re.search(r"(?im)^\s*SUGGESTIONS:\s*$", parts[0]):
        return None
    head = re.split(r"(?im)^\s*SUGGESTIONS:\s*$", parts[0], maxsplit=1)[-1]
    suggestions = _items(re.findall(r"(?m)^\s*[-*]\s+(.+)$", head))
    procedure = _items(re.findall(r"(?m)^\s*\d+[.)]\s+(.+)$", parts[1]))
    if not suggestions and not procedure:
        return None
    return suggestions[:MAX_ITEMS], procedure[:MAX_ITEMS]


def _items(found: list[str]) -> list[str]:
    kept: dict[str, str] = {}
    for item in found:
        item = _NOTE_LABEL.sub("", item.strip())
        if re.search(r"[^\W\d_]{2,}", item) and not is_placeholder(item):
            kept.setdefault(" ".join(item.lower().split()), item)
    return list(kept.values())
