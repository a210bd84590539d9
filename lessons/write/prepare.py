"""The slow half of learning: a finished run's events in, a `PreparedRun` out.

Nothing here writes the notebook. It may read it (the type candidates the model picks
among, earlier runs that agree, stored tools that reproduce the answer), and on a Ray
worker what it reads is the driver's snapshot. The result is plain JSON data, so it
can cross Ray to the single writer, which hands it to `lessons.write.learn.write_prepared`.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from conductor_kernel.events import Event
from conductor_kernel.interfaces import ChatModel, Sandbox, TaskScoring
from conductor_kernel.limits.ledger import MeteredModel
from lessons import prompts
from lessons.forms.problems import core_input
from lessons.forms.tasktypes import PARAMS, MatchParams, TypeMatch, pick_allowed, score_types
from lessons.forms.terms import question_terms
from lessons.forms.toolbox import best_tools, run_tool, tool_draft
from lessons.forms.tools import Tool
from lessons.forms.tooltests import ToolBudget, run_tool_tests
from lessons.read.recall import semantic_wanted
from lessons.storage.store import Notebook
from lessons.values import NO_SCORING, NoteDraft, Verification, excerpt
from lessons.write.agreement import agreeing_runs, answers_agree, cited_notes, shown_its_own_answer
from lessons.write.asking import ask, echoes, is_placeholder
from lessons.write.budget import LearningBudget, OverBudget, idle_reason
from lessons.write.distill import distill_run, reflect
from lessons.write.verify import LEARNABLE_STATUSES, verify_run
from record.fold import RunOutline, outline

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
    """Where tools reproduce answers, new tools are tested and P3's `sat` runs (the
    run's own sandbox); None: none of these happens."""
    tool_budget: ToolBudget = field(default_factory=ToolBudget)
    """How much testing the run's new tools may take (lessons/forms/tooltests.py)."""
    semantic: bool = field(default_factory=lambda: semantic_wanted())
    """Write example notes' question vectors (the optional semantic index)."""
    model_share: float | None = 1.0
    """Learning's model calls and tokens per run, as a share of the run's own (1.0:
    never more than the run used); None: unbounded (lessons/write/budget.py)."""


@dataclass
class TypeChoice:
    type_id: str | None = None  # an existing type the model chose
    name: str = ""
    description: str = ""
    asked: bool = False
    # The model said none of the candidates fits (`KIND: none`); a reply out of form
    # says nothing, and the lexical match then stands.
    declined: bool = False


@dataclass
class PreparedRun:
    """One run, ready for the single writer. Every field is JSON data (it crosses Ray)."""

    run_id: str
    question: str
    task: str
    answer: str | None
    target: str | None
    status: str
    verification: dict[str, str]  # a `Verification`
    drafts: list[dict[str, Any]]  # `NoteDraft`s, tool drafts among them
    tools: dict[str, str] = field(default_factory=dict)  # tool draft skeleton -> Tool JSON
    terms: list[str] = field(default_factory=list)
    choice: dict[str, Any] = field(default_factory=dict)  # a `TypeChoice`
    # The candidates the model saw and turned down: a type another writer created since
    # is still joined, these are not.
    rejected_types: list[str] = field(default_factory=list)
    recalled: list[dict[str, Any]] = field(default_factory=list)  # the notes it was shown
    cited: list[str] = field(default_factory=list)  # those the meta model named
    agreeing: list[str] = field(default_factory=list)  # earlier runs this one verifies
    vector: str | None = None  # the question's sentence vector, base64
    reflection: str = ""
    usage: dict[str, Any] = field(default_factory=dict)  # what preparing it cost
    # Tests of its tools made while learning, by tool hash (lessons/forms/tooltests.py).
    tool_tests: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_testing: str = ""  # what the testing did: tested / skipped / stopped, and why
    # What learning's model calls may still spend for this run (a `LearningBudget`;
    # empty: unbounded), and why it makes none, if it makes none.
    budget: dict[str, int] = field(default_factory=dict)
    idle: str = ""

    @property
    def checked(self) -> Verification:
        return Verification(**self.verification)

    def note_drafts(self) -> list[NoteDraft]:
        return [NoteDraft(**d) for d in self.drafts]

    def vector_blob(self) -> bytes | None:
        return base64.b64decode(self.vector) if self.vector is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreparedRun:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def prepare_run(
    book: Notebook | None,
    events: RunOutline | list[Event],
    *,
    model: ChatModel | None = None,
    options: LearnOptions | None = None,
) -> PreparedRun | None:
    """Everything slow about learning from a run (its events, or their fold when the
    caller has it); None when there is nothing to learn.

    The run is judged with the notebook's scorers (`book.scoring`); without a notebook,
    with none (no task known, no answer scored)."""
    options = options or LearnOptions()
    run = events if isinstance(events, RunOutline) else outline(events)
    if run.started is None or not run.question.strip():
        return None
    if run.status not in LEARNABLE_STATUSES:
        log.info("run %s ended %s: nothing learned", run.run_id, run.status)
        return None
    scoring = book.scoring if book is not None else NO_SCORING
    verification = _verify(book, run, scoring, options)
    drafts = distill_run(run, verification, scoring)
    tools = _tool_drafts(run, verification, scoring)
    drafts.extend(draft for draft, _tool in tools)
    online = model_can_reflect(model)
    reflection = "skipped: no model" if model is None else "skipped: offline model"
    idle = idle_reason(run, verification) if online else ""
    budget = None
    if idle:
        online, reflection = False, f"skipped: {idle}"
    elif online and options.model_share is not None:
        assert model is not None
        budget = LearningBudget.for_run(run, options.model_share)
        model = MeteredModel(model, budget)
    if online and options.reflect:
        assert model is not None
        extra, reflection = reflect(model, run, verification)
        drafts.extend(extra)
    elif online:
        reflection = "skipped: turned off"
    terms = question_terms(run.question)
    choice, rejected = TypeChoice(), []
    if online and options.pick_type and book is not None:
        assert model is not None
        with book.reading() as conn:
            candidates = score_types(conn, terms, limit=5, params=options.params)
        # Offered: the types the question's words allow the model to pick.
        best = candidates[0] if candidates else None
        offered = [m for m in candidates if pick_allowed(m, best, params=options.params)]
        choice = choose_type(model, run.question, _descriptions(book, offered))
        if choice.declined:
            rejected = [match.type_id for match in offered]
    tool_tests, tool_testing = _test_tools(book, run, tools, terms, choice, options)
    agreeing = (
        agreeing_runs(book, run) if book is not None and verification.level == "independent" else []
    )
    vector = _vector(run.question, scoring) if options.semantic else None
    return PreparedRun(
        run_id=run.run_id,
        question=run.question,
        task=run.task,
        answer=run.answer,
        target=run.target,
        status=run.status,
        verification=asdict(verification),
        drafts=[asdict(d) for d in drafts],
        tools={draft.skeleton: tool.to_json() for draft, tool in tools},
        terms=sorted(terms),
        choice=asdict(choice),
        rejected_types=rejected,
        recalled=list(run.recall.notes) if run.recall is not None else [],
        cited=sorted(cited_notes(run)),
        agreeing=agreeing,
        vector=base64.b64encode(vector).decode("ascii") if vector is not None else None,
        reflection=reflection,
        tool_tests=tool_tests,
        tool_testing=tool_testing,
        budget=budget.to_dict() if budget is not None else {},
        idle=idle,
    )


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
    prompt += "\n" + prompts.TYPE_NAME
    try:
        reply = ask(model, prompt, system=prompts.TYPE_SYSTEM, max_tokens=200).text
    except OverBudget:  # not made: the run's learning budget is spent
        return TypeChoice()
    except Exception as exc:  # the lexical choice stands in
        log.warning("task type choice by the model failed: %s", exc)
        return TypeChoice()
    choice = TypeChoice(asked=True)
    kind = re.search(r"(?im)^\s*KIND:\s*(\w+)", reply)
    if kind and kind.group(1).isdigit() and 1 <= int(kind.group(1)) <= len(candidates):
        choice.type_id = candidates[int(kind.group(1)) - 1][0].type_id
    choice.declined = kind is not None and kind.group(1).lower() == "none"
    description = re.search(r"(?im)^\s*DESCRIPTION:\s*(.+)$", reply)
    name = re.search(r"(?im)^\s*NAME:\s*(.+)$", reply)
    choice.description = _stated(description.group(1), 300) if description else ""
    choice.name = _stated(name.group(1), 60) if name else ""
    return choice


def _stated(text: str, limit: int) -> str:
    """A name or description the model wrote, or "" when it only wrote back a slot or
    an instruction of the prompt (the offline one then stands)."""
    text = excerpt(text, limit)
    asked = prompts.TYPE_SYSTEM + prompts.TYPE_PICK + prompts.TYPE_NAME
    return "" if is_placeholder(text) or echoes(text, asked) else text


def _test_tools(
    book: Notebook | None,
    run: RunOutline,
    tools: list[tuple[NoteDraft, Tool]],
    terms: set[str],
    choice: TypeChoice,
    options: LearnOptions,
) -> tuple[dict[str, dict[str, Any]], str]:
    """The run's tools tested on stored questions of their kind, in the run's sandbox."""
    if not tools:
        return {}, ""
    if options.sandbox is None:
        return {}, "skipped: no sandbox"
    if book is None:
        return {}, "skipped: no notebook"
    try:
        type_ids = [] if run.task else _kind_types(book, terms, choice, options.params)
        return run_tool_tests(
            book,
            options.sandbox,
            tools,
            run_id=run.run_id,
            question=run.question,
            task=run.task,
            type_ids=type_ids,
            budget=options.tool_budget,
        )
    except Exception as exc:  # the tools stay, untested; the run's learning goes on
        log.warning("testing the run's tools failed: %s", exc)
        return {}, f"failed: {excerpt(f'{type(exc).__name__}: {exc}', 160)}"


def _kind_types(
    book: Notebook, terms: set[str], choice: TypeChoice, params: MatchParams
) -> list[str]:
    """The task type a question without a task will join: the model's pick, else the
    lexical match strong enough to join (as `write_prepared` places it)."""
    if choice.type_id:
        return [choice.type_id]
    with book.reading() as conn:
        best = score_types(conn, terms, limit=1, params=params)
    return [best[0].type_id] if best and best[0].evidence >= params.join_evidence else []


def _descriptions(book: Notebook, matches: list[TypeMatch]) -> list[tuple[TypeMatch, str]]:
    out = []
    for match in matches:
        row = book.read_one("select description from task_types where id = ?", (match.type_id,))
        out.append((match, row["description"] if row else ""))
    return out


def _verify(
    book: Notebook | None, run: RunOutline, scoring: TaskScoring, options: LearnOptions
) -> Verification:
    """The scorer's verdict; without a target, a tested tool's or another run's agreement."""
    verification = verify_run(
        run, scoring=scoring, sandbox=options.sandbox, use_target=options.use_target
    )
    if book is None or verification.level != "none" or verification.outcome != "unverified":
        return verification
    assert run.answer is not None
    if options.sandbox is not None and not shown_its_own_answer(book, run):
        for stored in best_tools(book, run.question, exclude_question=True)[:1]:
            if stored.tests and stored.pass_rate >= 0.9:
                try:
                    answer = run_tool(stored.tool, run.question, options.sandbox, scoring=scoring)
                except Exception as exc:  # no reproduction; the other evidence still counts
                    log.warning("a stored tool could not run in the sandbox: %s", exc)
                    answer = None
                judge = scoring.judge_for(run.task)
                if answer is not None and answers_agree(
                    scoring, judge, run.question, answer, run.answer
                ):
                    return verify_run(
                        run, scoring=scoring, reproduced=True, use_target=options.use_target
                    )
    if agreeing_runs(book, run):
        return Verification(
            "independent", "verified", "another run not shown it gave the same answer"
        )
    return verification


def _tool_drafts(
    run: RunOutline, verification: Verification, scoring: TaskScoring
) -> list[tuple[NoteDraft, Tool]]:
    """Tools from the programs that printed a trusted answer (one per distinct program)."""
    if not verification.trustworthy or run.answer is None:
        return []
    out: dict[str, tuple[NoteDraft, Tool]] = {}
    for x in run.execs:
        if x.result.ok and x.code.strip():
            made = tool_draft(run.question, x.code, x.result.stdout, run.answer, scoring=scoring)
            if made is not None:
                out.setdefault(made[1].tool_hash, made)
    return list(out.values())


def _vector(question: str, scoring: TaskScoring) -> bytes | None:
    """The question's sentence vector, made before the write transaction (it is slow)."""
    from lessons.read import semantic

    if not semantic.available():
        return None
    return semantic.vector_blob(core_input(question, scoring))
