"""Candidate notes and how they are scored, shared by recall's two searches: notes of
the question's task types (here) and notes of the same problem in any type
(lessons/read/kin.py).

A note's *relevance* is how surely it bears on the question; its *score* weighs relevance
by trust: how it was verified and how often it helped or hurt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lessons.forms.tasktypes import MatchParams, TypeMatch
from lessons.forms.terms import SQL_TERMS_MAX, fts_query, index_token, is_shape
from lessons.storage.notes import type_token
from lessons.storage.store import Notebook

TRUST_BY_VERIFICATION = {
    "target": 1.0,
    "checker": 1.0,
    "tool": 0.95,
    "independent": 0.9,
    "sandbox-check": 0.9,
    "sandbox": 0.75,  # written before the scorers judged
    "agreement": 0.75,
    "none": 0.7,
}
# Kinds bound to one task's exact instruction: shown only when the question holds every
# word its task type always has (a near-miss task, "reverse" order, "by length", must not
# get the old task's program or its failures).
TASK_BOUND = ("pitfall", "code", "procedure")
FULL_TEMPLATE_SHARE = 0.8
MAX_PARTICULARS = 8
# Particulars in more questions than this share (or count) are not searched for.
COMMON_SHARE = 0.02
COMMON_MOST = 300


@dataclass
class ScoredNote:
    note: dict[str, Any]
    relevance: float
    score: float
    type_match: TypeMatch | None  # None: found by problem (kin) or as a tool


def trust(note: dict[str, Any]) -> float:
    helpful, harmful = note["helpful"], note["harmful"]
    record = (1 + helpful) / (1 + helpful + harmful)
    return TRUST_BY_VERIFICATION.get(note["verification"], 0.7) * (0.5 + 0.5 * record)


def particulars(
    book: Notebook,
    terms: set[str],
    template: set[str],
    *,
    known_only: bool = False,
    most: int = MAX_PARTICULARS,
) -> list[tuple[str, int]]:
    """The question's own terms worth searching for, the rarest in the notebook first,
    each with the number of learned questions that had it.

    Common words would make the full-text search walk most of the index for little.
    `known_only`: only terms some learned question had (for finding kin across
    languages, where most of a question's words were never seen).
    """
    own = [t for t in terms if not is_shape(t) and t not in template][:SQL_TERMS_MAX]
    if not own:
        return []
    marks = ",".join("?" * len(own))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", own
    )}  # fmt: skip
    ceiling = max(50, min(COMMON_MOST, book.questions_seen() * COMMON_SHARE))
    own = [t for t in own if df.get(t, 0) <= ceiling and (df.get(t, 0) or not known_only)]
    # The term itself last: equal terms otherwise kept set order, which changes per process.
    own.sort(key=lambda t: (df.get(t, 0), t.isdigit(), -len(t), t))
    return [(t, df.get(t, 0)) for t in own[:most]]


def candidates_for(
    book: Notebook, match: TypeMatch, terms: set[str], *, threshold: float, params: MatchParams
) -> list[ScoredNote]:
    rows_t = book.read(
        "select term, frequency from type_template where type_id = ?", (match.type_id,)
    )
    template = {r["term"] for r in rows_t}
    complete = all(r["term"] in terms for r in rows_t if r["frequency"] >= FULL_TEMPLATE_SHARE)
    searched = [t for t, _ in particulars(book, terms, template)]
    rows: dict[str, dict[str, Any]] = {}
    if searched:
        query = fts_query(searched, all_of=[type_token(match.type_id)])
        for row in book.read(
            "select n.* from notes_fts join notes n on n.seq = notes_fts.rowid "
            "where notes_fts match ? and n.retired = 0 order by notes_fts.rank limit 20",
            (query,),
        ):
            rows[row["id"]] = dict(row)
    for row in book.read(
        "select * from notes where type_id = ? and retired = 0 "
        "order by helpful - harmful desc, support desc, seq desc limit 10",
        (match.type_id,),
    ):
        rows.setdefault(row["id"], dict(row))
    wanted = {index_token(t) for t in searched}
    base = match.relevance(params)
    scored = []
    for note in rows.values():
        if note["kind"] == "tool" or (note["kind"] in TASK_BOUND and not complete):
            continue  # tools come through lessons/forms/toolbox.py, which checks they apply
        shared = len(wanted & set(note["terms"].split())) if wanted else 0
        similarity = min(1.0, shared / max(1, min(len(wanted), 12)))
        relevance = base * (0.8 + 0.2 * similarity)
        if relevance < threshold:
            continue
        # Relevance first: trust reorders notes of like relevance, it cannot lift a weak one.
        scored.append(ScoredNote(note, relevance, relevance * (0.5 + 0.5 * trust(note)), match))
    return scored
