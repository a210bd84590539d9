"""Every method, run through `Session` like a real run: its events, transcript, runs.db
row, audit, fold and exports are complete, and the same shape for every method."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conductor.export.html.run_page import run_html
from conductor.export.markdown import to_markdown
from conductor.methods import BASELINES, METHODS, get_method, parse_methods
from conductor.methods import prompts as method_prompts
from conductor.session import Session
from conductor_kernel import prompts
from conductor_kernel.events import (
    Event,
    FinalAnswer,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunFinished,
    RunStarted,
)
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from record.audit import audit_outline
from record.fold import outline, outline_file
from record.reader import read_transcript
from transcripts.index import RunIndex
from transcripts.run_diff import diff_runs

QUESTION = "What is 17 + 25? Give the number."
ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'
PROSE = "Seventeen and twenty-five make forty-two, I believe."
IDENTITY = "You are an arithmetician who adds two-digit numbers in your head."


def script(method: str, *turns: str) -> list[str]:
    """The model's turns; expert-dynamic's first call writes the expert's description."""
    return [IDENTITY, *turns] if method == "expert-dynamic" else list(turns)


def solve(
    method: str, turns: list[str], tmp_path: Path, **config: Any
) -> tuple[list[Event], ScriptedModel, Session]:
    model = ScriptedModel(turns)
    index = RunIndex(tmp_path / "runs.db")
    session = Session(
        model,
        model,
        None,
        RunConfig(python=False, **config),
        index=index,
        runs_path=tmp_path / "runs",
        method=get_method(method),
    )
    events = [e for e in session.solve(QUESTION, task="arith", target="42") if not e.transient]
    return events, model, session


def of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_records_a_whole_run_the_same_way(method: str, tmp_path: Path) -> None:
    events, model, session = solve(method, script(method, PROSE, ANSWER), tmp_path)
    extra = 1 if method == "expert-dynamic" else 0

    started = events[0]
    assert isinstance(started, RunStarted) and started.method == method
    assert started.method_name == method and started.system_prompt == prompts.META_SYSTEM
    assert started.sandbox == ("none" if method == "meta" else "off")  # no sandbox given
    [finished] = [
        e for e in events if isinstance(e, RunFinished)
    ]  # a scored run ends with its verdict
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.final_answer) == ("answered", "42")
    # One meta turn per model call, in pairs, numbered 1..n.
    turns_started, turns_finished = of(events, MetaTurnStarted), of(events, MetaTurnFinished)
    assert [t.round for t in turns_started] == list(range(1, 3 + extra))
    assert [t.parent_id for t in turns_finished] == [t.id for t in turns_started]
    assert finished.rounds == 2 + extra == len(model.requests)
    assert finished.usage.calls == len(model.requests) == finished.meta_usage.calls
    assert finished.expert_calls == 0 and finished.sandbox_runs == 0
    # The turn without an answer was told why, and the next turn's message says so.
    nudge = of(events, Observation)
    assert [n.reason for n in nudge] == ["no_call_or_answer"]
    assert nudge[0].parent_id == turns_started[extra].id
    assert nudge[0].message in turns_started[extra + 1].user_message
    assert "FINAL ANSWER" in turns_started[extra + 1].user_message
    (answer,) = of(events, FinalAnswer)
    assert (answer.answer, answer.round, answer.parent_id) == (
        "42",
        2 + extra,
        turns_started[-1].id,
    )
    # Each call sent the question, in the method's own way.
    assert QUESTION in turns_started[extra].user_message

    # The transcript holds exactly what was yielded.
    path = tmp_path / "runs" / f"{started.run_id}.jsonl"
    transcript = read_transcript(path)
    assert [e.to_dict() for e in transcript.events] == [e.to_dict() for e in events]
    # runs.db, the audit, the fold and the exports read it with no case of their own.
    row = session.index.get(started.run_id)  # type: ignore[union-attr]
    assert row is not None
    assert (row["method"], row["status"], row["rounds"]) == (method, "answered", 2 + extra)
    assert row["final_answer"] == "42"
    findings = audit_outline(outline(list(transcript.events))).counts()
    assert findings.get("nudged") == 1 and findings.get("unconfirmed_answer") == 1
    run = outline_file(path)
    assert len(run.rounds) == 2 + extra and run.final is not None and run.status == "answered"
    assert [r.text for r in run.rounds] == model_turns(model, events)
    markdown = to_markdown(outline_file(path))
    assert "42" in markdown and f"Round {2 + extra}" in markdown
    page = run_html(run)
    assert method in page and "42" in page


def model_turns(model: ScriptedModel, events: list[Event]) -> list[str]:
    return [e.text for e in of(events, MetaTurnFinished)]


def test_runs_of_two_methods_diff_round_by_round(tmp_path: Path) -> None:
    left, _, _ = solve("standard", [ANSWER], tmp_path)
    right, _, _ = solve("expert-dynamic", [IDENTITY, ANSWER], tmp_path)
    runs = [outline_file(tmp_path / "runs" / f"{e[0].run_id}.jsonl") for e in (left, right)]
    diff = diff_runs(*runs)
    assert len(diff.rounds) == 2 and not diff.identical


def test_expert_dynamic_answers_in_a_new_conversation_as_the_expert_it_described(
    tmp_path: Path,
) -> None:
    events, model, _ = solve("expert-dynamic", [IDENTITY, PROSE, ANSWER], tmp_path)
    (_, system1, messages1), (_, system2, messages2), (_, _, messages3) = model.requests
    assert system1 == method_prompts.IDENTITY_SYSTEM and len(messages1) == 1
    assert QUESTION in messages1[0].content and "Do not answer" in messages1[0].content
    # The answer is asked for afresh: one message, the description first, then the question.
    assert system2 == prompts.META_SYSTEM and len(messages2) == 1
    first = messages2[0].content
    assert (
        first.index(IDENTITY) < first.index(method_prompts.AS_THAT_EXPERT) < first.index(QUESTION)
    )
    assert len(messages3) == 3  # the answer conversation goes on with the nudge
    started = of(events, MetaTurnStarted)
    assert started[0].system_prompt == method_prompts.IDENTITY_SYSTEM
    assert not started[0].new_conversation and started[1].new_conversation
    assert started[1].system_prompt == "" and not started[2].new_conversation


def test_a_cut_or_empty_description_is_said_and_the_answer_still_asked_for(
    tmp_path: Path,
) -> None:
    events, model, _ = solve("expert-dynamic", ["", ANSWER], tmp_path)
    notes = of(events, Observation)
    assert [n.reason for n in notes] == ["empty_reply"]
    assert method_prompts.FALLBACK_IDENTITY in model.requests[1][2][0].content
    assert of(events, RunFinished)[0].status == "answered"


@pytest.mark.parametrize(
    ("method", "first_has", "first_lacks"),
    [
        ("standard", (), (method_prompts.STEP_BY_STEP, method_prompts.STATIC_EXPERT)),
        ("zero-shot-cot", (method_prompts.STEP_BY_STEP,), (method_prompts.STATIC_EXPERT,)),
        ("expert-static", (method_prompts.STATIC_EXPERT,), (method_prompts.STEP_BY_STEP,)),
        ("multipersona", ("Participants:", "Discussion ends."), (method_prompts.STATIC_EXPERT,)),
        ("meta", ("Expert Python",), (method_prompts.STEP_BY_STEP,)),
        ("meta-no-python", ("Expert Geometer",), ("Expert Python",)),
    ],
)
def test_each_method_sends_its_own_first_message(
    method: str, first_has: tuple[str, ...], first_lacks: tuple[str, ...], tmp_path: Path
) -> None:
    _, model, _ = solve(method, [ANSWER], tmp_path)
    first = model.requests[0][2][0].content
    assert first.startswith("ROUND 1:\n\n") and QUESTION in first
    for text in first_has:
        assert text in first
    for text in first_lacks:
        assert text not in first


def test_the_round_cap_ends_a_baseline_without_an_answer(tmp_path: Path) -> None:
    events, model, _ = solve("standard", [PROSE] * 3, tmp_path, max_rounds=3)
    [finished] = [
        e for e in events if isinstance(e, RunFinished)
    ]  # a scored run ends with its verdict
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.final_answer, finished.rounds) == ("limit", None, 3)
    assert len(model.requests) == 3
    assert prompts.LAST_ROUND in model.requests[1][2][-1].content  # round 2 of 3


def test_limits_are_checked_before_every_model_call(tmp_path: Path) -> None:
    # The first turn alone spends more than the run may: no second call is made.
    events, model, _ = solve("expert-dynamic", [IDENTITY * 40, ANSWER], tmp_path, max_tokens=50)
    [finished] = [
        e for e in events if isinstance(e, RunFinished)
    ]  # a scored run ends with its verdict
    assert isinstance(finished, RunFinished) and finished.status == "limit"
    assert len(model.requests) == 1
    assert [e.limit for e in events if e.kind == "limit_hit"] == ["tokens"]


def test_a_cancel_before_the_first_call_makes_none(tmp_path: Path) -> None:
    model = ScriptedModel([ANSWER])
    session = Session(
        model,
        model,
        None,
        RunConfig(python=False),
        runs_path=tmp_path,
        method=get_method("standard"),
    )
    session.cancel()
    events = list(session.solve(QUESTION))
    assert events[-1].status == "interrupted" and model.requests == []  # type: ignore[attr-defined]


def test_the_baselines_neither_recall_nor_learn_unless_asked(tmp_path: Path, monkeypatch) -> None:
    from conductor.config import load_settings
    from conductor.session import build_session

    settings = load_settings({"model": "demo", "notebook": str(tmp_path / "nb.db")})
    assert settings.recall and settings.learn
    for method in BASELINES:
        session = build_session(settings, method=method, index=False)
        assert session.recall is None and session.after_run == [] and session.sandbox is None
        assert session.method is not None and session.method.name == method
    meta = build_session(settings, method="meta-no-python", index=False)
    assert meta.recall is not None and meta.after_run and meta.sandbox is None
    both = build_session(settings, method="standard", index=False, notebook_for_baselines=True)
    assert both.recall is not None and both.after_run


def test_method_lists_are_checked(tmp_path: Path) -> None:
    from conductor.methods import UnknownMethodError

    assert parse_methods("all") == list(METHODS)
    assert parse_methods(" meta , standard,meta") == ["meta", "standard"]
    with pytest.raises(UnknownMethodError, match=r"unknown method 'cot'.*zero-shot-cot"):
        parse_methods("standard,cot")
    with pytest.raises(UnknownMethodError):
        parse_methods(" , ")


def test_solve_takes_the_method_and_says_it(tmp_path: Path, capsys, monkeypatch) -> None:
    from conductor.cli import main

    code = main(["solve", "Use 4 5 6 10 to make 24", "--model", "demo", "--method",
                 "standard", "--json", "--no-recall", "--no-learn"])  # fmt: skip
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["method"] == "standard" and code in (0, 1)
    assert main(["solve", "x", "--model", "demo", "--method", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--method" in err and "'nope' is not allowed" in err and "zero-shot-cot" in err


@pytest.mark.parametrize("method", ["standard", "expert-dynamic", "multipersona"])
def test_a_baseline_with_the_notebook_on_learns_and_recalls(method: str, tmp_path: Path) -> None:
    """Off by default, the notebook works for a baseline as for meta-prompting when
    turned on: the run is judged and learned, and a later question is shown the notes
    before its question."""
    from conductor.scoring.notebook import open_notebook
    from conductor.session.notebook_hooks import NotebookHooks
    from conductor_kernel.events import NotesWritten, Recall

    def model_reply(messages: list) -> str:
        text = messages[-1].content
        if "Describe the expert" in text:
            return IDENTITY
        words = text.rsplit("List: ", 1)[-1].split("\n")[0].split()
        return ANSWER.replace("42", " ".join(sorted(words)))

    model = ScriptedModel(model_reply)
    book = open_notebook(tmp_path / "notebook.db")  # with the application's scorers
    session = Session(
        model, model, None, RunConfig(python=False), runs_path=tmp_path / "runs",
        method=get_method(method),
    )  # fmt: skip
    NotebookHooks(book, model=model).attach(session)
    ask = "Sort the following words alphabetically: List: "
    try:
        first = list(session.solve(ask + "pear apple fig", target="apple fig pear"))
        second = list(session.solve(ask + "kiwi date lime", target="date kiwi lime"))
    finally:
        book.close()
    (written,) = [e for e in first if isinstance(e, NotesWritten)]
    assert written.outcome == "correct" and written.note_ids
    (recall,) = [e for e in second if isinstance(e, Recall)]
    assert recall.notes and recall.rendered
    answering = [e for e in second if isinstance(e, MetaTurnStarted)][-1]
    assert recall.rendered in answering.user_message
    assert answering.user_message.index(recall.rendered) < answering.user_message.index("kiwi")


def test_the_method_is_a_setting_from_every_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conductor.config import load_settings
    from conductor.session import build_session
    from conductor_kernel.errors import ConfigError

    config = Path(__import__("os").environ["CONDUCTOR_CONFIG"])
    config.write_text('model = "demo"\nmethod = "expert-dynamic"\n', encoding="utf-8")
    assert load_settings().method == "expert-dynamic"
    monkeypatch.setenv("CONDUCTOR_METHOD", "multipersona")
    assert load_settings().method == "multipersona"
    settings = load_settings({"method": "zero-shot-cot"})
    assert settings.method == "zero-shot-cot"
    session = build_session(settings, index=False)
    assert session.method is not None and session.method.name == "zero-shot-cot"
    no_python = load_settings({"method": "meta", "run": {"python": False}})
    assert build_session(no_python, index=False).method.name == "meta-no-python"  # type: ignore[union-attr]
    monkeypatch.setenv("CONDUCTOR_METHOD", "chain")
    with pytest.raises(ConfigError, match="CONDUCTOR_METHOD"):
        load_settings()
