"""The recall path: a question in, the relevant experience out, before round 1.

1. The question's task types, by lexical evidence (lessons/tasktypes.py).
2. Candidate notes of each type that matches: full-text search on the question's own
   particulars (the words not in the type's template: the same list of words, the same
   numbers) ranks notes within the type; the best-trusted notes of the type join them.
3. Each note's *relevance* is its type's match, refined by the particulars it shares;
   its *score* weighs relevance by trust: how it was verified and how often it helped
   or hurt. Notes under the relevance threshold are never shown.
4. With a real model, the model may narrow the candidates to those it judges helpful.
5. Rendered under a token budget (lessons/render.py).
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.interfaces import ChatModel, Message
from lessons import prompts
from lessons.distill import excerpt
from lessons.notes import type_token
from lessons.problems import core_input, number_terms, same_question
from lessons.render import Rendered, render_recall
from lessons.store import Notebook
from lessons.tasktypes import PARAMS, MatchParams, TypeMatch, score_types
from lessons.terms import SQL_TERMS_MAX, fts_query, index_token, is_shape, question_terms
from lessons.toolbox import best_tools
from lessons.tools import instantiate

log = logging.getLogger("conductor.notebook")


def semantic_wanted() -> bool:
    """The semantic index is used only when asked for: lexical recall is the default."""
    import os

    return os.environ.get("CONDUCTOR_NOTEBOOK_SEMANTIC", "") == "1"


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
KIN_MIN_SHARED = 2
KIN_MIN_JACCARD = 0.4
SEMANTIC_FLOOR = 0.6
SEMANTIC_NEAREST = 10
KIN_SEARCHED = 6  # the rarest terms searched for (numbers and words alike)
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
    exclude_question: bool = False
    """Evaluation: never show a note made from the question being asked."""
    tools: bool = True
    """Recall the best-tested tool that applies to the question."""
    kin: bool = True
    """Recall the same problem across task types and languages, by its quantities."""
    semantic: bool = field(default_factory=lambda: semantic_wanted())
    """Fuse in the optional semantic index (off unless CONDUCTOR_NOTEBOOK_SEMANTIC=1)."""
    params: MatchParams = field(default_factory=lambda: PARAMS)


@dataclass
class ScoredNote:
    note: dict[str, Any]
    relevance: float
    score: float
    type_match: TypeMatch | None  # None: found by problem (kin) or as a tool


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


def _particulars(
    book: Notebook,
    terms: set[str],
    template: set[str],
    *,
    known_only: bool = False,
    most: int = MAX_PARTICULARS,
) -> list[str]:
    """The question's own terms worth searching for: the rarest in the notebook first.

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
    own.sort(key=lambda t: (df.get(t, 0), t.isdigit(), -len(t)))
    return own[:most]


def candidates_for(
    book: Notebook, match: TypeMatch, terms: set[str], *, threshold: float, params: MatchParams
) -> list[ScoredNote]:
    rows_t = book.read(
        "select term, frequency from type_template where type_id = ?", (match.type_id,)
    )
    template = {r["term"] for r in rows_t}
    complete = all(r["term"] in terms for r in rows_t if r["frequency"] >= FULL_TEMPLATE_SHARE)
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
        if note["kind"] == "tool" or (note["kind"] in TASK_BOUND and not complete):
            continue  # tools come through lessons/toolbox.py, which checks they apply
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
        if best.note["kind"] == "procedure" and "procedure" in kinds:
            continue  # at most one procedure is shown
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


def kin_candidates(book: Notebook, question: str, *, semantic: bool = False) -> list[ScoredNote]:
    """Notes made from the same problem, in any type or language: its quantities first
    (they survive translation), then its rarer words (names survive in many scripts)."""
    numbers = set(number_terms(question))
    terms = question_terms(question)
    rare = _particulars(
        book, terms | {n[4:] for n in numbers}, set(), known_only=True, most=KIN_SEARCHED + 6
    )
    words = {index_token(t) for t in rare if not t.isdigit()}
    # Search by the rarer numbers only (a common one would walk much of the index);
    # all of them count in the comparison below.
    # The rarer numbers first (they survive translation), then a few rare known words.
    rare_numbers = [f"num_{t}" for t in rare if f"num_{t}" in numbers][:KIN_SEARCHED]
    searched = rare_numbers + [index_token(t) for t in rare if not t.isdigit()][:5]
    found: dict[str, tuple[dict[str, Any], float]] = {}
    if semantic:
        found = _semantic_kin(book, question)
    if not searched:
        return _kin_scored(found)
    query = " OR ".join(f'"{t}"' for t in sorted(searched))
    rows = [
        dict(row)
        for row in book.read(
            "select n.* from notes_fts join notes n on n.seq = notes_fts.rowid "
            "where notes_fts match ? and n.retired = 0 and n.kind = 'example' "
            "order by notes_fts.rank limit 30",
            (query,),
        )
    ]
    have_of = {r["id"]: set(r["terms"].split()) for r in rows}
    weight = _number_weights(book, numbers.union(*have_of.values()) if rows else numbers)
    weight_rare = math.log((book.questions_seen() + 1) / 3) + 0.1  # in at most 2 problems
    for note in rows:
        have = have_of[note["id"]]
        have_numbers = {t for t in have if t.startswith("num_")}
        shared_numbers = numbers & have_numbers
        shared_words = len(words & have)
        # Two shared features, or one quantity that hardly any learned problem has.
        rare_one = any(weight[t] >= weight_rare for t in shared_numbers)
        if len(shared_numbers) + shared_words < KIN_MIN_SHARED and not rare_one:
            continue
        # Weighted Jaccard: a rare quantity shared says more than a common one.
        jaccard = sum(weight[t] for t in shared_numbers) / max(
            1e-9, sum(weight[t] for t in numbers | have_numbers)
        )
        strength = jaccard + 0.5 * shared_words / max(1, min(len(words), 8))
        before = found.get(note["id"], (note, 0.0))[1]  # the semantic part, fused
        found[note["id"]] = (note, strength + before)
    return _kin_scored(found)


def _number_weights(book: Notebook, number_tokens: set[str]) -> dict[str, float]:
    """Inverse document frequency of each `num_` token among the learned questions."""
    plain = {t: t[4:].replace("p", ".") for t in number_tokens if t.startswith("num_")}
    if not plain:
        return {}
    marks = ",".join("?" * len(plain))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", list(set(plain.values()))
    )}  # fmt: skip
    total = book.questions_seen() + 1
    return {t: math.log(total / (df.get(p, 0) + 1)) + 0.1 for t, p in plain.items()}


def _kin_scored(found: dict[str, tuple[dict[str, Any], float]]) -> list[ScoredNote]:
    out = []
    for note, strength in found.values():
        if strength < KIN_MIN_JACCARD:
            continue
        relevance = min(1.0, 0.5 + 0.5 * strength)
        ranked = 0.5 + strength / 3  # words break ties between problems of equal numbers
        out.append(ScoredNote(note, relevance, ranked * (0.5 + 0.5 * trust(note)), None))
    return out


def _semantic_kin(book: Notebook, question: str) -> dict[str, tuple[dict[str, Any], float]]:
    """Example notes whose question means much the same (the optional semantic index):
    a cosine above SEMANTIC_FLOOR adds up to 1 to the lexical strength."""
    from lessons import semantic

    if not semantic.available():
        return {}
    cache = getattr(book, "semantic_cache", None)
    if cache is None:
        cache = book.semantic_cache = semantic.VectorCache()  # type: ignore[attr-defined]
    vector = semantic.encoder().embed(core_input(question))
    out = {}
    for note_id, cosine in cache.nearest(book, vector, SEMANTIC_NEAREST):
        part = (cosine - SEMANTIC_FLOOR) / (1 - SEMANTIC_FLOOR)
        row = book.find_note(note_id) if part > 0 else None
        if row is not None and not row["retired"]:
            out[note_id] = (dict(row), part)
    return out


def tool_candidate(
    book: Notebook, question: str, type_ids: list[str], *, exclude_question: bool
) -> ScoredNote | None:
    """The best-tested tool that applies to the question, written out for it."""
    for stored in best_tools(book, question, type_ids, exclude_question=exclude_question):
        program = instantiate(stored.tool, question)
        row = book.find_note(stored.note_id)
        if program is None or row is None:
            continue
        note = dict(row)
        note["text"] = stored.describe() + " Written out for this question:"
        note["code"] = program
        note["tool_pass_rate"] = stored.pass_rate
        relevance = max(0.5, stored.rank_score)
        return ScoredNote(note, relevance, 1.0 + stored.rank_score, None)
    return None


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
    if options.kin:
        known = {s.note["id"]: s for s in scored}
        for kin in kin_candidates(book, question, semantic=options.semantic):
            if kin.note["id"] not in known or known[kin.note["id"]].score < kin.score:
                known[kin.note["id"]] = kin
        scored = list(known.values())
    if options.exclude_question:
        scored = [s for s in scored if not same_question(s.note["source_question"], question)]
    candidates = _diversify(scored, options.k * 2 if model is not None else options.k)
    tool = None
    if options.tools:
        # Tools are matched by what they can read, not by type (lessons/tools.py).
        tool = tool_candidate(book, question, [], exclude_question=options.exclude_question)
    if tool is not None:  # the best-tested tool first; a plain copy of code is then noise
        candidates = [tool, *[c for c in candidates if c.note["kind"] != "code"]]
    shown = candidates[: options.k]
    if model is not None and options.narrow and len(candidates) > 1:
        shown = narrow_with_model(model, question, candidates, options.k)
    best = None
    if usable:
        row = book.read_one("select * from task_types where id = ?", (usable[0].type_id,))
        best = dict(row) if row else None
    procedure_note = any(s.note["kind"] == "procedure" for s in shown)
    rendered = render_recall(
        type_name=best["name"] if best else None,
        description=best["description"] if best else "",
        suggestions=json.loads(best["suggestions"]) if best else [],
        # At most one procedure: the type's list only when no procedure note is shown.
        procedure=json.loads(best["procedure"]) if best and not procedure_note else [],
        notes=[s.note for s in shown],
        budget_tokens=options.budget_tokens,
    )
    shown = [s for s in shown if s.note["id"] in rendered.note_ids]
    return RecallResult(matches, best, candidates, shown, rendered)
