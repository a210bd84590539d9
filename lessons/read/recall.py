"""The recall path: a question in, the relevant experience out, before round 1.

1. The question's task types, by lexical evidence (lessons/forms/tasktypes.py).
2. Candidate notes of each type that matches (lessons/read/candidates.py): full-text search
   on the question's own particulars (the words not in the type's template: the same
   list of words, the same numbers) ranks notes within the type; the best-trusted notes
   of the type join them.
3. Notes of the same problem in any type or language (lessons/read/kin.py), by its
   quantities and rare words, fused with the optional semantic index.
4. Each note's *relevance* is its type's match, refined by the particulars it shares;
   its *score* weighs relevance by trust: how it was verified and how often it helped
   or hurt. Notes under the relevance threshold are never shown.
5. The best-tested tool that applies comes first (lessons/forms/toolbox.py); given a
   sandbox, its answer to the question is checked first where a checker can judge it
   (lessons/read/tool_check.py), and a tool whose answer fails is not shown.
6. With a real model, the model may narrow the candidates to those it judges helpful.
7. Rendered under a token budget (lessons/read/render.py).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.interfaces import ChatModel, Message, Sandbox
from conductor_kernel.text.quoted import inline
from lessons import prompts
from lessons.forms.problems import core_input, same_question
from lessons.forms.tasktypes import PARAMS, MatchParams, TypeMatch, score_types
from lessons.forms.terms import question_terms
from lessons.forms.toolbox import StoredTool, best_tools
from lessons.forms.tools import instantiate
from lessons.read.candidates import ScoredNote, candidates_for, trust
from lessons.read.difference import difference
from lessons.read.kin import kin_candidates
from lessons.read.render import NOTE_WORDS, Rendered, render_recall
from lessons.read.tool_check import check_tool_here
from lessons.storage.store import Notebook
from lessons.values import NOTE_KINDS, excerpt, trust_name

log = logging.getLogger("conductor.notebook")


def semantic_wanted() -> bool:
    """The semantic index is used only when asked for: lexical recall is the default."""
    import os

    return os.environ.get("CONDUCTOR_NOTEBOOK_SEMANTIC", "") == "1"


__all__ = ["RecallOptions", "RecallResult", "ScoredNote", "kin_candidates", "recall",
           "semantic_wanted", "tool_candidate", "trust"]  # fmt: skip


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
class RecallResult:
    matches: list[TypeMatch]
    best_type: dict[str, Any] | None
    candidates: list[ScoredNote]
    shown: list[ScoredNote]
    rendered: Rendered

    def checked(self) -> list[dict[str, Any]]:
        """The shown tools whose answer to this question the task's own check accepted
        in a fresh sandbox (never one of another question): the `Recall` event's
        `checked`."""
        return [
            {
                "note": s.note["id"],
                "code": s.note["code"],
                "answer": s.note["checked_answer"],
                "check": s.note.get("checked_why", ""),
            }
            for s in self.shown
            if s.note.get("checked_answer") is not None
            and s.note.get("code")
            and not s.note.get("differs")
        ]

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
                # How the note's question differs from this one (None: it fits as asked);
                # the rendered note names the same difference.
                "differs": s.note.get("differs"),
            }
            for rank, s in enumerate(self.shown, start=1)
        ]


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
        f"{i}. ({c.note['kind'] if c.note['kind'] in NOTE_KINDS else 'note'}) "
        + inline(NOTE_WORDS, excerpt(c.note["text"], 240))
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


def _fits_beside_a_tool(item: ScoredNote) -> bool:
    """A note still worth showing beside a tool that answers the question as asked:
    one of this question (no difference named), and no procedure (the tool is how)."""
    return item.note["kind"] != "procedure" and not item.note.get("differs")


# Fitting tools run on the question before round 1, at most: each is a sandbox run.
TOOLS_CHECKED = 3


def runnable(stored: StoredTool, note: dict[str, Any]) -> bool:
    """Whether the meta model is told it can run a fitting tool as it is: its answer to
    this question passed the check, or its answer was checked where it was made, or it
    passed nine in ten of at least three tests, and no test says otherwise."""
    if note.get("checked_answer") is not None:
        return True
    checked = trust_name(note["verification"], note.get("outcome", "")) == "checked"
    tested = stored.tests >= 3 and stored.pass_rate >= 0.9
    return (checked and (not stored.tests or stored.pass_rate >= 0.9)) or tested


def tool_candidate(
    book: Notebook,
    question: str,
    type_ids: list[str],
    *,
    exclude_question: bool,
    sandbox: Sandbox | None = None,
) -> ScoredNote | None:
    """The best-tested tool that applies to the question, written out for it.

    With a sandbox, a tool whose answer to this question a checker can judge is run on
    it first (lessons/read/tool_check.py): one that fails is passed over, one that
    passes carries its checked answer. When none applies, a tool that would if its
    words could hold signs (`it&t` in a list learned from plain words) is run too, and
    shown only when its answer passes."""
    tools = best_tools(book, question, type_ids, exclude_question=exclude_question)
    found = _first_fitting(book, question, tools, sandbox, checked_only=False)
    if found is None and sandbox is not None:
        signed = best_tools(
            book, question, type_ids, exclude_question=exclude_question, signs_in_words=True
        )
        found = _first_fitting(book, question, signed, sandbox, checked_only=True)
    return found


def _first_fitting(
    book: Notebook,
    question: str,
    tools: list[StoredTool],
    sandbox: Sandbox | None,
    *,
    checked_only: bool,
) -> ScoredNote | None:
    """The first of `tools` written out for the question that no check rejects (that a
    check accepts, when `checked_only`), at most TOOLS_CHECKED of them run."""
    checks = 0
    for stored in tools:
        program = instantiate(stored.tool, question, scoring=book.scoring)
        # By its whole id: find_note would take another note whose id starts with it.
        row = book.read_one("select * from notes where id = ?", (stored.note_id,))
        if program is None or row is None:
            continue
        note = dict(row)
        if sandbox is not None:
            if checks >= TOOLS_CHECKED:
                return None  # the best few failed here: the rest are no better bets
            checks += 1
            check = check_tool_here(stored, question, sandbox, scoring=book.scoring)
            if check.verdict is False or (checked_only and not check.verdict):
                log.info("recall: tool %s passed over: %s", stored.note_id, check.why)
                continue
            if check.verdict:
                note["checked_answer"] = check.answer
                note["checked_why"] = check.why
        elif checked_only:
            return None
        note["text"] = stored.describe() + " Written out for this question:"
        note["code"] = program
        note["tool_pass_rate"] = stored.pass_rate
        note["tool_tests"] = stored.tests
        note["runnable"] = runnable(stored, note)
        relevance = max(0.5, stored.rank_score)
        return ScoredNote(note, relevance, 1.0 + stored.rank_score, None)
    return None


def recall(
    book: Notebook,
    question: str,
    *,
    model: ChatModel | None = None,
    options: RecallOptions | None = None,
    sandbox: Sandbox | None = None,
) -> RecallResult:
    """What the notebook holds for `question`; `sandbox` (a fresh one, never a run's)
    lets a fitting tool's answer be checked on the question before it is offered."""
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
    # A note of another question (other numbers, other words) comes after every note
    # that fits, with the difference named (lessons/read/difference.py).
    limit = options.k * 2 if model is not None else options.k
    fitting, different = [], []
    for item in scored:
        differs = difference(
            core_input(item.note.get("source_question") or "", book.scoring),
            core_input(question, book.scoring),
        )
        if differs is None:
            fitting.append(item)
        else:
            item.note = {**item.note, "differs": differs}
            different.append(item)
    candidates = _diversify(fitting, limit)
    candidates += _diversify(different, limit - len(candidates))
    tool = None
    if options.tools:
        # Tools are matched by what they can read, not by type (lessons/forms/tools.py).
        tool = tool_candidate(
            book, question, [], exclude_question=options.exclude_question, sandbox=sandbox
        )
    if tool is not None:  # the best-tested tool first; a plain copy of code is then noise
        candidates = [tool, *[c for c in candidates if c.note["kind"] != "code"]]
    runs_it = tool is not None and tool.note["runnable"]
    shown = candidates[: options.k]
    if runs_it:
        # It answers the question as asked: other questions' answers and procedures
        # would only lengthen every later turn; what fits this question stays.
        shown = [c for c in candidates if c is tool or _fits_beside_a_tool(c)][: options.k]
    if model is not None and options.narrow and len(candidates) > 1:
        # A tool whose tests in the sandbox passed is measured evidence: the model's
        # narrowing picks among the rest and never drops or demotes it (a small model
        # answering "none" or "3, 1" once hid the tool that answers the question).
        kept = [tool] if tool is not None and tool.note.get("tool_pass_rate") else []
        rest = [c for c in candidates if c is not tool] if kept else candidates
        room = options.k - len(kept)
        shown = kept + (narrow_with_model(model, question, rest, room) if room > 0 else [])
    best = None
    if usable:
        row = book.read_one("select * from task_types where id = ?", (usable[0].type_id,))
        best = dict(row) if row else None
    procedure_note = any(s.note["kind"] == "procedure" for s in shown)
    experience = best is not None and not runs_it
    rendered = render_recall(
        type_name=best["name"] if best else None,
        description=best["description"] if best else "",
        suggestions=json.loads(best["suggestions"]) if best and experience else [],
        # At most one procedure: the type's list only when no procedure note is shown.
        procedure=json.loads(best["procedure"])
        if best and experience and not procedure_note
        else [],
        notes=[s.note for s in shown],
        budget_tokens=options.budget_tokens,
    )
    shown = [s for s in shown if s.note["id"] in rendered.note_ids]
    return RecallResult(matches, best, candidates, shown, rendered)
