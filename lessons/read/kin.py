"""Problem-level kin: notes made from the same problem as the question, in any task type
or language. Its quantities find them first (they survive translation), then its rarer
known words (names survive in many scripts); with the optional semantic index, the
cosine of the questions' sentence vectors above a floor adds to the same strength
(fusion, not a second list).
"""

from __future__ import annotations

import math
import re
from typing import Any

from lessons.forms.problems import core_input, number_terms
from lessons.forms.terms import index_token, question_terms
from lessons.read.candidates import ScoredNote, particulars, trust
from lessons.storage.store import Notebook

KIN_MIN_SHARED = 2
KIN_MIN_JACCARD = 0.4
SEMANTIC_FLOOR = 0.6
SEMANTIC_NEAREST = 10
KIN_SEARCHED = 6  # the rarest terms searched for (numbers and words alike)
_NUMBER_TOKEN = re.compile(r"(?<!\S)num_\S+")
KIN_POOL = 30  # questions whose notes are compared with the question
KIN_BATCHES = 12  # batches of KIN_POOL postings read at most
KIN_POSTINGS = 400  # the newest notes read per searched term
SMALL_NUMBER = 10  # numbers up to this one are as often spelled as written in digits


def kin_candidates(book: Notebook, question: str, *, semantic: bool = False) -> list[ScoredNote]:
    """Notes made from the same problem, in any type or language: its quantities first
    (they survive translation), then its rarer words (names survive in many scripts)."""
    numbers = set(number_terms(question))
    terms = question_terms(question)
    with_df = particulars(
        book, terms | {n[4:] for n in numbers}, set(), known_only=True, most=KIN_SEARCHED + 6
    )
    rare = [t for t, _ in with_df]
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
    total = book.questions_seen() + 1
    rarity = {}
    for term, df in with_df:
        token = f"num_{term}" if f"num_{term}" in numbers else index_token(term)
        rarity[token] = _rarity(df, total)
    rows = _pool(book, searched, rarity)
    numbers_of = {r["id"]: set(_NUMBER_TOKEN.findall(r["terms"])) for r in rows}
    weight = _number_weights(book, numbers.union(*numbers_of.values()), total)
    weight_rare = _rarity(2, total)  # in at most 2 problems
    strengths: dict[int, float] = {}
    for note in rows:
        have = set(note["terms"].split())
        have_numbers = numbers_of[note["id"]]
        shared_numbers = numbers & have_numbers
        shared_words = len(words & have)
        # Two shared features, or one quantity that hardly any learned problem has.
        rare_one = any(weight[t] >= weight_rare for t in shared_numbers)
        if len(shared_numbers) + shared_words < KIN_MIN_SHARED and not rare_one:
            continue
        # Weighted Jaccard: a rare quantity shared says more than a common one. Once a
        # larger quantity is shared, a small whole number missing on one side is no
        # difference: translations spell them ("tres", "cuatro") or write them as
        # numerals ("一半", half), so their digits appear in one language only.
        anchored = any(not _small(t) for t in shared_numbers)
        unsure = {t for t in numbers ^ have_numbers if _small(t)} if anchored else set()
        jaccard = sum(weight[t] for t in shared_numbers) / max(
            1e-9, sum(weight[t] for t in (numbers | have_numbers) - unsure)
        )
        strength = jaccard + 0.5 * shared_words / max(1, min(len(words), 8))
        if strength >= KIN_MIN_JACCARD or note["id"] in found:
            strengths[note["seq"]] = strength
    if strengths:  # whole rows only for the few that can be kin, in the pool's order
        marks = ",".join("?" * len(strengths))
        whole = {r["seq"]: dict(r) for r in book.read(
            f"select * from notes where seq in ({marks})", list(strengths)
        )}  # fmt: skip
        for seq, strength in strengths.items():
            kin = whole.get(seq)
            if kin is None:  # deleted since the pool was read
                continue
            before = found.get(kin["id"], (kin, 0.0))[1]  # the semantic part, fused
            found[kin["id"]] = (kin, strength + before)
    return _kin_scored(found)


def _pool(book: Notebook, searched: list[str], rarity: dict[str, float]) -> list[dict[str, Any]]:
    """The example notes that hold the most of the searched terms, the rarest counting
    most: the notes kin compares with the question (their ids and terms only).

    Each term's postings are read on their own and summed here. FTS5's bm25 over the
    terms' union reads every match's length from another table first, which cost more
    than everything else in recall; kin only compares sets of terms anyway.
    """
    weight: dict[int, float] = {}
    for term in searched:
        adds = rarity.get(term, 1.0)
        for seq in book.read_column(
            "select rowid from notes_fts where notes_fts match ? order by rowid desc limit ?",
            (f'"{term}"', KIN_POSTINGS),
        ):
            weight[seq] = weight.get(seq, 0.0) + adds
    ranked = sorted(weight, key=lambda seq: (-weight[seq], -seq))
    rows: list[dict[str, Any]] = []
    problems: set[str] = set()
    # Other kinds of note carry their question's terms too, and one problem run by
    # several methods has an example from each: read on until the pool holds KIN_POOL
    # questions (each note read is a seek in `notes`, hence the batches).
    for start in range(0, min(len(ranked), KIN_POOL * KIN_BATCHES), KIN_POOL):
        batch = ranked[start : start + KIN_POOL]
        marks = ",".join("?" * len(batch))
        found = [dict(r) for r in book.read(
            f"select seq, id, terms, question_hash from notes where seq in ({marks}) "
            "and retired = 0 and kind in ('example', 'pitfall')",
            batch,
        )]  # fmt: skip
        rows += found
        problems |= {r["question_hash"] or str(r["seq"]) for r in found}
        if len(problems) >= KIN_POOL:
            break
    rows.sort(key=lambda r: (-weight[r["seq"]], -r["seq"]))
    return rows


def _small(token: str) -> bool:
    """Whether a `num_` token is a whole number from 0 to 10 (often spelled out)."""
    text = token[4:]
    return text.isdigit() and int(text) <= SMALL_NUMBER


def _number_weights(book: Notebook, number_tokens: set[str], total: int) -> dict[str, float]:
    """The rarity of each `num_` token among the `total - 1` learned questions."""
    plain = {t: t[4:].replace("p", ".") for t in number_tokens}
    if not plain:
        return {}
    marks = ",".join("?" * len(plain))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", list(set(plain.values()))
    )}  # fmt: skip
    return {t: _rarity(df.get(p, 0), total) for t, p in plain.items()}


def _rarity(df: int, total: int) -> float:
    """Inverse document frequency, never zero."""
    return math.log(total / (df + 1)) + 0.1


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
    from lessons.read import semantic

    if not semantic.available():
        return {}
    index = getattr(book, "semantic_index", None)
    if index is None:
        index = book.semantic_index = semantic.VectorIndex()  # type: ignore[attr-defined]
    vector = semantic.embed(core_input(question, book.scoring))
    near = dict(index.nearest(book, vector, SEMANTIC_NEAREST, floor=SEMANTIC_FLOOR))
    if not near:
        return {}
    marks = ",".join("?" * len(near))
    rows = {r["id"]: dict(r) for r in book.read(
        f"select * from notes where id in ({marks}) and retired = 0", list(near)
    )}  # fmt: skip
    return {  # nearest first, as before: equal scores keep this order when ranked
        note_id: (rows[note_id], (cosine - SEMANTIC_FLOOR) / (1 - SEMANTIC_FLOOR))
        for note_id, cosine in near.items()
        if note_id in rows
    }
