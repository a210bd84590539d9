"""Task types: which kind of question is this, lexically, with no model needed.

A type is learned from its member questions. Its *template* is the set of terms most
members contain (for "Sort the following words alphabetically: List: ..." the words
before the list; for Spanish word problems the common Spanish words; for Game of 24 the
shape "four numbers, no words"), each with the share of members containing it.

A question is matched to a type by weighing evidence, as a likelihood ratio in nats:
each template term present counts for the type in proportion to how much likelier it is
in the type than in questions outside it; each template term missing counts against.
Per-term evidence is capped, so that no single rare word decides. Questions of a task
the notebook has never seen find no type with enough evidence: that is what lets the
recall stay silent rather than offer notes from the wrong task.

Shape terms count half, bare numbers and function words a quarter: they say less about
a task than its words (a list of numbers is a list of numbers whatever the task, and
"what is the ... of" asks a capital, a gcd or a percentage alike). And a type whose
template has content words is matched only by a question sharing one of them: function
words and shapes alone never make two questions one kind.

A type of one question cannot yet tell its template from its particulars: its words
count for it when a question shares them and never against it, and its numbers not at
all. Templates are recomputed when a type gains a member, and refreshed a few at a time
as the notebook grows (the background they are weighed against changes).
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass

from lessons.forms.terms import SQL_TERMS_MAX, is_content_word, is_function_word, is_shape
from lessons.storage.store import new_id, record_type_history


@dataclass(frozen=True)
class MatchParams:
    min_frequency: float = 0.3
    """Terms in at least this share of a type's members form its template."""
    clip: float = 0.98
    """Frequencies are clipped to [1-clip, clip]: no term is certain."""
    prior_questions: float = 5.0
    """Pseudo-questions of generic text mixed into the background."""
    prior_word: float = 0.02
    prior_shape: float = 0.2
    gain_cap: float = 3.0
    """Most evidence (nats) one present term can give."""
    shape_weight: float = 0.5
    number_weight: float = 0.25
    function_weight: float = 0.25
    join_evidence: float = 4.0
    """Evidence needed for a new question to join a type rather than found one."""
    model_pick_evidence: float = 2.0
    """Evidence the question's own words must give a type the model picked: a model's
    choice decides between plausible types, it never overrides the words."""
    recall_evidence: float = 4.0
    """Evidence at which recall relevance is 0.5."""
    relevance_scale: float = 2.0
    refresh_growth: float = 1.25
    """Recompute a type's template once the notebook has grown by this factor."""


PARAMS = MatchParams()


@dataclass(frozen=True)
class TypeMatch:
    type_id: str
    name: str
    members: int
    evidence: float
    matched_terms: frozenset[str]

    def relevance(self, params: MatchParams = PARAMS) -> float:
        z = (self.evidence - params.recall_evidence) / params.relevance_scale
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _kt(count: int, members: int, clip: float) -> float:
    return min(clip, max(1.0 - clip, (count + 0.5) / (members + 1.0)))


def score_types(
    conn: sqlite3.Connection,
    terms: Iterable[str],
    *,
    limit: int = 5,
    params: MatchParams = PARAMS,
) -> list[TypeMatch]:
    """The best-matching types for a question's terms, most evidence first.

    The evidence is summed in SQL (one indexed lookup per term), so a notebook with many
    types costs little more than one with few.
    """
    # Shape terms first: on a question too long for one statement, words give way.
    terms = sorted(set(terms), key=lambda t: (not is_shape(t), t))[:SQL_TERMS_MAX]
    if not terms:
        return []
    marks = ",".join("?" * len(terms))
    rows = conn.execute(
        f"select t.id, t.name, t.members, t.base + s.gain as evidence from "
        f"(select type_id, sum(delta) as gain from type_template where term in ({marks}) "
        f"group by type_id) s join task_types t on t.id = s.type_id where t.retired = 0 "
        f"order by evidence desc, t.members desc limit ?",
        (*terms, limit + _SPARE),
    ).fetchall()
    if not rows:
        return []
    matched: dict[str, set[str]] = {row[0]: set() for row in rows}
    type_marks = ",".join("?" * len(matched))
    for type_id, term in conn.execute(
        f"select type_id, term from type_template where term in ({marks}) "
        f"and type_id in ({type_marks})",
        (*terms, *matched),
    ):
        matched[type_id].add(term)
    return [
        TypeMatch(type_id, name, members, evidence, frozenset(matched[type_id]))
        for type_id, name, members, evidence in rows
        if _content_match(conn, type_id, matched[type_id])
    ][:limit]


# Types read beyond `limit`, so that those matched by function words alone can be left out.
_SPARE = 5


def _content_match(conn: sqlite3.Connection, type_id: str, matched: set[str]) -> bool:
    """Whether a question matched the type on what it asks: a content word of its
    template, or, for a type whose template has none (four numbers alone), its shape."""
    if any(is_content_word(term) for term in matched):
        return True
    template = conn.execute("select term from type_template where type_id = ?", (type_id,))
    return not any(is_content_word(term) for (term,) in template)


def pick_allowed(
    pick: TypeMatch | None, best: TypeMatch | None, *, params: MatchParams = PARAMS
) -> bool:
    """Whether the question's own words allow a model's pick of type: the pick must be
    matched on a content word (`score_types` found it), lean toward it by
    `model_pick_evidence`, and not lose to another type the words alone would join."""
    if pick is None or pick.evidence < params.model_pick_evidence:
        return False
    return not (
        best is not None
        and best.type_id != pick.type_id
        and best.evidence >= params.join_evidence > pick.evidence
    )


def materialize(conn: sqlite3.Connection, type_id: str, *, params: MatchParams = PARAMS) -> None:
    """Recompute a type's template and evidence weights from its counts."""
    members, questions = conn.execute(
        "select t.members, m.value from task_types t, notebook_meta m "
        "where t.id = ? and m.key = 'questions'",
        (type_id,),
    ).fetchone()
    if members <= 0:
        return
    if members == 1:
        rows = conn.execute(
            "select tt.term, tt.count, coalesce(d.df, 0) from type_terms tt "
            "left join term_df d on d.term = tt.term where tt.type_id = ?",
            (type_id,),
        ).fetchall()
        rows = [r for r in rows if not r[0].isdigit()]
    else:
        # Two members at least: a term of one small-type member may be its particular.
        least = max(2, math.ceil(params.min_frequency * (members + 1) - 0.5))
        rows = conn.execute(
            "select tt.term, tt.count, coalesce(d.df, 0) from type_terms tt "
            "left join term_df d on d.term = tt.term where tt.type_id = ? and tt.count >= ?",
            (type_id, least),
        ).fetchall()
    outside_questions = max(0, questions - members)
    base = 0.0
    template = []
    for term, count, df in rows:
        shape = is_shape(term)
        freq = _kt(count, members, params.clip)
        prior = params.prior_shape if shape else params.prior_word
        outside = max(0, df - count)
        background = (outside + params.prior_questions * prior) / (
            outside_questions + params.prior_questions
        )
        background = min(0.99, max(1e-4, background))
        present = min(params.gain_cap, math.log(freq / background))
        absent = max(-params.gain_cap - 1.0, math.log((1 - freq) / (1 - background)))
        if members == 1 and not shape:
            absent = 0.0  # unknown yet whether the word is the task's or the question's
        weight = (
            params.shape_weight
            if shape
            else params.number_weight
            if term.isdigit()
            else params.function_weight
            if is_function_word(term)
            else 1.0
        )
        base += weight * absent
        template.append((term, type_id, freq, weight * (present - absent)))
    conn.execute("delete from type_template where type_id = ?", (type_id,))
    conn.executemany(
        "insert into type_template (term, type_id, frequency, delta) values (?, ?, ?, ?)",
        template,
    )
    conn.execute(
        "update task_types set base = ?, template_questions = ? where id = ?",
        (base, questions, type_id),
    )


def add_question(
    conn: sqlite3.Connection, type_id: str, terms: set[str], *, params: MatchParams = PARAMS
) -> None:
    """Count a question into a type and into the background, then refresh templates."""
    ordered = sorted(terms)
    conn.executemany(
        "insert into term_df (term, df) values (?, 1) on conflict(term) do update set df = df + 1",
        [(t,) for t in ordered],
    )
    conn.executemany(
        "insert into type_terms (type_id, term, count) values (?, ?, 1) "
        "on conflict(type_id, term) do update set count = count + 1",
        [(type_id, t) for t in ordered],
    )
    conn.execute("update notebook_meta set value = value + 1 where key = 'questions'")
    conn.execute(
        "update task_types set members = members + 1, updated_at = ? where id = ?",
        (time.time(), type_id),
    )
    materialize(conn, type_id, params=params)
    _refresh_stale(conn, params=params)


def _refresh_stale(conn: sqlite3.Connection, *, params: MatchParams, limit: int = 2) -> None:
    """Recompute the templates computed longest ago, a few per write."""
    questions = conn.execute("select value from notebook_meta where key = 'questions'").fetchone()[
        0
    ]
    rows = conn.execute(
        "select id from task_types where retired = 0 and template_questions * ? < ? "
        "order by template_questions limit ?",
        (params.refresh_growth, questions, limit),
    ).fetchall()
    for (type_id,) in rows:
        materialize(conn, type_id, params=params)


def create_type(
    conn: sqlite3.Connection,
    *,
    name: str,
    description: str,
    run_id: str | None,
    inherit_from: dict | None = None,
) -> str:
    """A new type; it starts from the experience of the most similar known type."""
    type_id = new_id("t")
    now = time.time()
    suggestions = inherit_from["suggestions"] if inherit_from else "[]"
    procedure = inherit_from["procedure"] if inherit_from else "[]"
    conn.execute(
        "insert into task_types (id, name, description, suggestions, procedure, "
        "inherited_from, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            type_id,
            name,
            description,
            suggestions,
            procedure,
            inherit_from["id"] if inherit_from else None,
            now,
            now,
        ),
    )
    record_type_history(
        conn,
        type_id,
        "created",
        run_id=run_id,
        detail={"name": name, "description": description},
    )
    if inherit_from and (suggestions != "[]" or procedure != "[]"):
        record_type_history(
            conn,
            type_id,
            "inherited",
            run_id=run_id,
            detail={"from": inherit_from["id"], "suggestions": suggestions, "procedure": procedure},
        )
    return type_id


def template_words(
    conn: sqlite3.Connection, type_id: str, limit: int = 6, *, question: str = ""
) -> list[str]:
    """The type's characteristic words (no shapes, no bare numbers).

    In the order they come in `question` when one is given (so they read as a phrase),
    else most frequent first.
    """
    from lessons.forms.terms import words as words_of

    rows = conn.execute(
        "select term from type_template where type_id = ? order by frequency desc, delta desc",
        (type_id,),
    ).fetchall()
    chosen = [r[0] for r in rows if not is_shape(r[0]) and not r[0].isdigit()][: limit * 3]
    if question:
        order = {w: i for i, w in reversed(list(enumerate(words_of(question))))}
        chosen.sort(key=lambda w: order.get(w, len(order)))
    return chosen[:limit]


def names_a_kind(shared: list[str]) -> bool:
    """Whether a type's shared words can name it: at least one of them a content word."""
    return any(is_content_word(word) for word in shared)


def template_name(question: str, shared: list[str], *, limit: int = 12) -> str:
    """The question's form in the kind's shared words: "use N N N N to make N".

    Words the kind keeps stay, numbers become N, anything else is one "…" per run, so the
    name says what the kind's questions look like rather than quoting one of them.
    """
    from lessons.forms.terms import words as words_of

    keep = set(shared)
    out: list[str] = []
    for word in words_of(question):
        token = word if word in keep else "N" if word.isdigit() else "…"
        if token == "…" and out and out[-1] == "…":
            continue
        out.append(token)
    while out and out[-1] == "…":
        out.pop()
    if len(out) > limit:
        out = [*out[:limit], "…"]
    return " ".join(out) if any(t not in ("N", "…") for t in out) else " ".join(shared)


def describe_offline(question: str, words: list[str]) -> tuple[str, str]:
    """A name and description for a new type without a model: what its questions hold."""
    from lessons.values import excerpt

    name = shape_name(question)
    description = f"Questions like “{excerpt(question, 160)}”."
    if words:
        description += " They contain: " + ", ".join(words) + "."
    return name, description


def shape_name(question: str) -> str:
    """A new type's name from the question's form, never its words (those are one
    question's particulars until a second question shows which words the kind keeps):
    `new kind: a question of 3 words and 5 numbers`. It counts the whole question, so it
    says so: "10 words" read as a list of ten when the question held six more."""
    from lessons.forms.terms import words as words_of

    found = words_of(question)
    numbers = sum(1 for w in found if w.isdigit())
    wordy = len(found) - numbers
    parts = []
    if wordy:
        parts.append(f"{wordy} word{'s' if wordy != 1 else ''}")
    if numbers:
        parts.append(f"{numbers} number{'s' if numbers != 1 else ''}")
    return "new kind: " + ("a question of " + " and ".join(parts) if parts else "no words")
