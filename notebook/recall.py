"""The recall path: a question in, the relevant experience out, before round 1.

1. The question's task types, by lexical evidence (notebook/tasktypes.py).
2. Candidate notes of each type that matches: full-text search on the question's own
   particulars (the words not in the type's template: the same list of words, the same
   numbers) ranks notes within the type; the best-trusted notes of the type join them.
3. Each note's *relevance* is its type's match, refined by the particulars it shares;
   its *score* weighs relevance by trust: how it was verified and how often it helped
   or hurt. Notes under the relevance threshold are never shown.
4. With a real model, the model may narrow the candidates to those it judges helpful.
5. Rendered under a token budget (notebook/render.py).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from conductor.interfaces import ChatModel, Message
from notebook import prompts
from notebook.distill import excerpt
from notebook.notes import type_token
from notebook.render import Rendered, render_recall
from notebook.store import Notebook
from notebook.tasktypes import PARAMS, MatchParams, TypeMatch, score_types
from notebook.terms import SQL_TERMS_MAX, fts_query, index_token, is_shape, question_terms

log = logging.getLogger("conductor.notebook")

TRUST_BY_VERIFICATION = {"target": 1.0, "sandbox": 0.9, "agreement": 0.85, "none": 0.7}
MAX_PARTICULARS = 8
# Particulars in more questions than this share (or count) are not searched for.
COMMON_SHARE = 0.02
COMMON_MOST = 300


@dataclass
class RecallOptions:
    k: int = 5
    """Notes shown at most."""
    threshold: float = 0.5
    """Relevance below which a note is never shown."""
    budget_tokens: int = 1500
    """Tokens the rendered recall may take in the first meta turn."""
    types: int = 3
    """Task types considered at most."""
    narrow: bool = True
    """With a real model, let it choose among the candidates."""
    params: MatchParams = field(default_factory=lambda: PARAMS)


@dataclass
class ScoredNote:
    note: dict[str, Any]
    relevance: float
    score: float
    type_match: TypeMatch


@dataclass
class RecallResult:
    matches: list[TypeMatch]
    best_type: dict[str, Any] | None
    candidates: list[ScoredNote]
    shown: list[ScoredNote]
    rendered: Rendered

    def event_notes(self) -> list[dict[str, Any]]:
        return [
            {
                "id": s.note["id"],
                "key": s.note["key"],
                "kind": s.note["kind"],
                "type_id": s.note["type_id"],
                "source_run": s.note["source_run"],
                "score": round(s.score, 4),
                "relevance": round(s.relevance, 4),
                "rank": rank,
            }
            for rank, s in enumerate(self.shown, start=1)
        ]


def trust(note: dict[str, Any]) -> float:
    helpful, harmful = note["helpful"], note["harmful"]
    record = (1 + helpful) / (1 + helpful + harmful)
    return TRUST_BY_VERIFICATION.get(note["verification"], 0.7) * (0.5 + 0.5 * record)


def _particulars(book: Notebook, terms: set[str], template: set[str]) -> list[str]:
    """The question's own terms worth searching for: the rarest in the notebook first.

    Common words would make the full-text search walk most of the index for little.
    """
    own = [t for t in terms if not is_shape(t) and t not in template][:SQL_TERMS_MAX]
    if not own:
        return []
    marks = ",".join("?" * len(own))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", own
    )}  # fmt: skip
    ceiling = max(50, min(COMMON_MOST, book.questions_seen() * COMMON_SHARE))
    own = [t for t in own if df.get(t, 0) <= ceiling]
    own.sort(key=lambda t: (df.get(t, 0), t.isdigit(), -len(t)))
    return own[:MAX_PARTICULARS]


def candidates_for(
    book: Notebook, match: TypeMatch, terms: set[str], *, threshold: float, params: MatchParams
) -> list[ScoredNote]:
    template = {
        r["term"]
        for r in book.read("select term from type_template where type_id = ?", (match.type_id,))
    }
    particulars = _particulars(book, terms, template)
    rows: dict[str, dict[str, Any]] = {}
    if particulars:
        query = fts_query(particulars, all_of=[type_token(match.type_id)])
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
    wanted = {index_token(t) for t in particulars}
    base = match.relevance(params)
    scored = []
    for note in rows.values():
        shared = len(wanted & set(note["terms"].split())) if wanted else 0
        similarity = min(1.0, shared / max(1, min(len(wanted), 12)))
        relevance = base * (0.8 + 0.2 * similarity)
        if relevance < threshold:
            continue
        # Relevance first: trust reorders notes of like relevance, it cannot lift a weak one.
        scored.append(ScoredNote(note, relevance, relevance * (0.5 + 0.5 * trust(note)), match))
    return scored


def _diversify(scored: list[ScoredNote], limit: int) -> list[ScoredNote]:
    """Best first, but each further note of an already chosen kind counts a little less."""
    chosen: list[ScoredNote] = []
    pool = sorted(scored, key=lambda s: -s.score)
    seen: set[str] = set()
    while pool and len(chosen) < limit:
        kinds = [c.note["kind"] for c in chosen]
        best = max(pool, key=lambda s: s.score * 0.85 ** kinds.count(s.note["kind"]))
        pool.remove(best)
        if best.note["id"] not in seen:
            seen.add(best.note["id"])
            chosen.append(best)
    return chosen


def narrow_with_model(
    model: ChatModel, question: str, candidates: list[ScoredNote], k: int
) -> list[ScoredNote]:
    listing = "\n".join(
        f"{i}. ({c.note['kind']}) {excerpt(c.note['text'], 240)}"
        for i, c in enumerate(candidates, 1)
    )
    try:
        reply = model.complete(
            [
                Message(
                    "user",
                    prompts.NARROW.format(question=excerpt(question, 3000), candidates=listing),
                )
            ],
            system=prompts.NARROW_SYSTEM,
            role="expert",
            max_tokens=100,
        ).text
    except Exception as exc:  # keep the lexical ranking
        log.warning("narrowing the recall with the model failed: %s", exc)
        return candidates[:k]
    line = re.search(r"(?im)^\s*USE:\s*(.+)$", reply)
    if line is None:
        return candidates[:k]
    if line.group(1).strip().lower().startswith("none"):
        return []
    picked = []
    for number in re.findall(r"\d+", line.group(1)):
        index = int(number) - 1
        if 0 <= index < len(candidates) and candidates[index] not in picked:
            picked.append(candidates[index])
    return picked[:k] if picked else candidates[:k]


def recall(
    book: Notebook,
    question: str,
    *,
    model: ChatModel | None = None,
    options: RecallOptions | None = None,
) -> RecallResult:
    options = options or RecallOptions()
    params = options.params
    terms = question_terms(question)
    with book.reading() as conn:
        matches = score_types(conn, terms, limit=options.types + 2, params=params)
    usable = [m for m in matches if m.relevance(params) >= options.threshold][: options.types]
    scored: list[ScoredNote] = []
    for match in usable:
        scored.extend(
            candidates_for(book, match, terms, threshold=options.threshold, params=params)
        )
    candidates = _diversify(scored, options.k * 2 if model is not None else options.k)
    shown = candidates[: options.k]
    if model is not None and options.narrow and len(candidates) > 1:
        shown = narrow_with_model(model, question, candidates, options.k)
    best = None
    if usable:
        row = book.read_one("select * from task_types where id = ?", (usable[0].type_id,))
        best = dict(row) if row else None
    rendered = render_recall(
        type_name=best["name"] if best else None,
        description=best["description"] if best else "",
        suggestions=json.loads(best["suggestions"]) if best else [],
        procedure=json.loads(best["procedure"]) if best else [],
        notes=[s.note for s in shown],
        budget_tokens=options.budget_tokens,
    )
    shown = [s for s in shown if s.note["id"] in rendered.note_ids]
    return RecallResult(matches, best, candidates, shown, rendered)
