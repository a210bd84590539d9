"""Once a printed line passes the task's own check, the enforcing carriers offer only
the answer; their last round always does.

Qwen2.5-Coder-1.5B, told that a program's line passed word_sorting's check, went on
consulting: once it wrote the right answer in a final_answer call beside a
consult_expert call, and the call ran while the answer was set aside (docs/methods.md).
Through a real `Conductor`, the real subprocess sandbox and the real check of
word_sorting, over generated scripts of meta turns (tool calls, calls written as text,
the grammar carrier's text) and generated programs.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring.answer_check import TaskAnswerCheck
from conductor_kernel import prompts
from conductor_kernel.carrier import compact_prompt
from conductor_kernel.carrier.grammar import PROTOCOL_ANSWER_GBNF
from conductor_kernel.events import (
    Event,
    ExpertCallStarted,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
)
from conductor_kernel.interfaces import Completion, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedToolModel
from record.fold import outline
from sandbox.subprocess_backend import SubprocessSandbox

PASSES = prompts.PROGRAM_PASSES_CHECK.split("{line}")[0]
WORDS = st.lists(
    st.text(alphabet="abcdefgh", min_size=2, max_size=6), min_size=2, max_size=5, unique=True
)
TURNS = ("consult", "consult_and_right", "consult_and_wrong", "wrong", "text_consult", "cite")


def question_for(words: list[str]) -> str:
    return f"Sort the following words alphabetically: List: {' '.join(words)}"


def program(line: str) -> str:
    return f"```python\nprint({line!r})\n```\nPlease run this code!"


def meta_turn(kind: str, carrier: str, words: list[str], n: int) -> Completion:
    """One scripted meta turn of `kind` in the carrier's own form."""
    right, wrong = " ".join(sorted(words)), " ".join(sorted(words, reverse=True))
    task = f"Sort: {' '.join(words)}"
    answer = {"consult_and_right": right, "consult_and_wrong": wrong, "wrong": wrong}.get(kind)
    consults = kind.startswith("consult") or kind == "text_consult"
    if carrier == "grammar" or kind == "text_consult":
        text = f'Expert Python:\n"""\n{task}\n"""\n' if consults else ""
        if answer is not None:
            text += f'>> FINAL ANSWER:\n"""\n{answer}\n"""'
        return Completion(text or 'Expert Python:\n"""\n\n"""')
    calls = []
    if consults:
        ask = json.dumps({"name": "Expert Python", "instruction": task})
        calls.append(ToolCall("consult_expert", ask, f"c{n}"))
    if answer is not None:
        calls.append(ToolCall("final_answer", json.dumps({"answer": answer}), f"a{n}"))
    if kind == "cite":
        calls.append(ToolCall("answer_with_checked_result", "{}", f"t{n}"))
    return Completion("", tool_calls=calls)


def solve(
    words: list[str], turns: list[str], printed: list[bool], carrier: str, *, once: bool
) -> tuple[list[Event], ScriptedToolModel, RunConfig]:
    right = " ".join(sorted(words))
    lines = iter([right if ok else "working on it" for ok in printed] + ["working"] * 9)
    script = [meta_turn(kind, carrier, words, n) for n, kind in enumerate(turns)]
    model = ScriptedToolModel(script, lambda _name, _text: program(next(lines)))
    config = RunConfig(
        max_rounds=len(turns),
        consult_first=False,
        protocol=carrier,  # type: ignore[arg-type]
        answer_once_checked=once,
        python_check_retries=0,
    )
    sandbox = SubprocessSandbox()
    try:
        conductor = Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck())
        return list(conductor.run(question_for(words))), model, config
    finally:
        sandbox.close()


@given(
    WORDS,
    st.lists(st.sampled_from(TURNS), min_size=2, max_size=5),
    st.lists(st.booleans(), min_size=5, max_size=5),
    st.sampled_from(["tools", "grammar"]),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_after_a_passing_line_and_in_the_last_round_only_the_answer_is_open(
    words: list[str], turns: list[str], printed: list[bool], carrier: str, once: bool
) -> None:
    events, model, config = solve(words, turns, printed, carrier, once=once)
    # The round in which a program's line passed: the meta model is told so next round.
    told = [
        e.round - 1
        for e in events
        if isinstance(e, MetaTurnStarted)
        and PASSES in e.user_message + "".join(r["content"] for r in e.tool_results)
    ]
    first_pass = min(told, default=None)

    def answer_only(round_no: int) -> bool:
        checked = once and first_pass is not None and round_no > first_pass
        return round_no >= config.max_rounds or checked

    rounds = [e.round for e in events if isinstance(e, MetaTurnFinished)]
    for round_no, offered, grammar in zip(rounds, model.offered, model.grammars, strict=True):
        if carrier == "tools":
            assert offered is not None
            assert ("consult_expert" in offered) == (not answer_only(round_no))
            assert "final_answer" in offered
            if answer_only(round_no) and first_pass is not None:
                assert "answer_with_checked_result" in offered
        else:
            assert (grammar == PROTOCOL_ANSWER_GBNF) == answer_only(round_no)
    started = [e.round for e in events if isinstance(e, ExpertCallStarted)]
    assert not [r for r in started if answer_only(r)], "an expert ran where only answers were"

    # The turn after the pass wrote the right answer beside a call: with the answer
    # alone open, that answer is the run's; with consulting open, it was set aside.
    right = " ".join(sorted(words))
    run = outline(events)
    if first_pass is not None and first_pass < len(turns):
        after = turns[first_pass]  # the turn of round first_pass + 1
        if after == "consult_and_right" and (once or first_pass + 1 == config.max_rounds):
            assert run.answer == right and run.status == "answered"
        if after == "cite" and carrier == "tools":
            assert run.answer == right
    if any(isinstance(e, Observation) and e.reason == "calls_not_offered" for e in events):
        assert carrier == "grammar" or "text_consult" in turns


def test_off_the_round_after_a_pass_still_consults() -> None:
    """`--no-answer-once-checked`: as before, the calls run and the answer beside them
    is set aside (the last round excepted, which offers only the answer)."""
    words = ["pear", "apple", "fig"]
    events, model, _config = solve(
        words, ["consult", "consult_and_right", "consult"], [True], "tools", once=False
    )
    assert model.offered[1] is not None and "consult_expert" in model.offered[1]
    assert [e.round for e in events if isinstance(e, ExpertCallStarted)] == [1, 2]
    assert outline(events).status == "limit"

    events, model, _config = solve(
        words, ["consult", "consult_and_right", "consult"], [True], "tools", once=True
    )
    assert model.offered[1] == ("final_answer", "answer_with_checked_result")
    assert outline(events).answer == " ".join(sorted(words))


def test_an_answer_before_any_consultation_gets_the_ready_call_made() -> None:
    """Consult first, enforced by the conductor (`ready_call`): the model answered in a
    round that withholds the answer, so the call its first message showed is made for
    it (the question, to Expert Python), and it reads the reply; the program's line
    passed, so the next round offers only the answer, and the cited line is the run's."""
    words = ["pear", "apple", "fig", "kiwi"]
    question, right = question_for(words), " ".join(sorted(words))
    guess = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "fig"}', "a1")])
    cite = Completion("", tool_calls=[ToolCall("answer_with_checked_result", "{}", "c1")])
    model = ScriptedToolModel([guess, cite], lambda _n, _t: program(right))
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=4, protocol="tools")
        conductor = Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck())
        events = list(conductor.run(question))
    finally:
        sandbox.close()
    name, instruction = compact_prompt.example_call(question, python=True)
    started = [e for e in events if isinstance(e, ExpertCallStarted)]
    assert [(e.round, e.name, e.instruction) for e in started] == [(1, name, instruction)]
    reasons = [e.reason for e in events if isinstance(e, Observation)]
    assert "ready_call_made" in reasons and "answer_before_consult" not in reasons
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert second.tool_results[0]["content"] == prompts.ANSWER_NOT_YET
    assert prompts.READY_CALL_MADE.format(name=name) in second.user_message
    assert PASSES + right in second.user_message
    assert model.offered[1] == ("final_answer", "answer_with_checked_result")
    assert outline(events).answer == right and outline(events).status == "answered"
