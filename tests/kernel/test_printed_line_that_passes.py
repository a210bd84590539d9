"""Once the model's own answer fails the task's check, a line the run's programs printed
that the check accepts is named to it.

Qwen2.5-Coder-1.5B on word_sorting: its program printed the right order, and the model
answered "The program contains a syntax error." (docs/methods.md). Through a real
`Conductor` with scripted models, the real subprocess sandbox and the real check of the
task (conductor/scoring/answer_check.py): over generated word lists and programs that
print the right order or a wrong one, a line is named exactly when one printed passes,
and the one named always passes.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring.answer_check import TaskAnswerCheck, rejection
from conductor_kernel import prompts
from conductor_kernel.events import Event, MetaTurnStarted, Observation
from conductor_kernel.interfaces import Completion, Message, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel, ScriptedToolModel
from record.fold import outline
from sandbox.subprocess_backend import SubprocessSandbox

NAMED = prompts.PRINTED_PASSES.split("{answer}")[0]
WRONG_GUESS = "The program contains a syntax error."


def question_for(words: list[str]) -> str:
    return f"Sort the following words alphabetically: List: {' '.join(words)}"


def solve(words: list[str], printed: list[str]) -> list[Event]:
    """Round 1 asks Expert Python, whose program prints `printed`; round 2 answers with
    a guess; round 3 gives the line it was named, if any, else the guess again."""
    program = "\n".join(f"print({line!r})" for line in printed)

    def meta(history: list[Message]) -> str:
        last = history[-1].content
        if last.startswith("ROUND 1"):
            return f'Expert Python:\n"""\nSort these words: {" ".join(words)}\n"""'
        if NAMED in last:
            named = last.split(NAMED, 1)[1].split("\n\n", 1)[0].strip()
            return f'>> FINAL ANSWER:\n"""\n{named}\n"""'
        return f'>> FINAL ANSWER:\n"""\n{WRONG_GUESS}\n"""'

    expert = f"```python\n{program}\n```\nPlease run this code!"
    model = ScriptedModel(meta, lambda _name, _text: expert)
    config = RunConfig(max_rounds=4, consult_first=False)
    sandbox = SubprocessSandbox()
    try:
        conductor = Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck())
        return list(conductor.run(question_for(words)))
    finally:
        sandbox.close()


WORDS = st.lists(st.text(alphabet="abcdefgh", min_size=2, max_size=6), min_size=2, max_size=6)


@given(WORDS, st.data())
@settings(max_examples=20, deadline=None)
def test_a_printed_line_is_named_exactly_when_one_passes(words: list[str], data) -> None:
    right = " ".join(sorted(words))
    wrong = data.draw(st.sampled_from([" ".join(sorted(words, reverse=True)), words[0]]))
    printed = data.draw(
        st.sampled_from([["working...", right, "done"], [wrong], ["working...", wrong]])
    )
    events = solve(words, printed)
    question = question_for(words)
    told = [e for e in events if isinstance(e, MetaTurnStarted)][2].user_message
    passes = [line for line in printed if rejection(question, "", line) is None]
    if passes:
        assert NAMED in told
        named = told.split(NAMED, 1)[1].split("\n\n", 1)[0].strip()
        assert rejection(question, "", named) is None  # what is named passes the check
        assert outline(events).answer == named
    else:
        assert NAMED not in told and prompts.ANSWER_SEARCH_AGAIN in told
    assert "answer_fails_check" in [e.reason for e in events if isinstance(e, Observation)]


def test_nothing_is_named_where_nothing_can_check_the_question() -> None:
    def meta(history: list[Message]) -> str:
        if history[-1].content.startswith("ROUND 1"):
            return 'Expert Python:\n"""\nWhat is 6 times 7?\n"""'
        return '>> FINAL ANSWER:\n"""\n41\n"""'

    model = ScriptedModel(meta, lambda _n, _t: "```python\nprint(42)\n```\nPlease run this code!")
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=4, consult_first=False)
        events = list(
            Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                "What is 6*7?"
            )
        )
    finally:
        sandbox.close()
    assert outline(events).answer == "41"  # no check: taken at once, nothing named
    assert not any(NAMED in e.user_message for e in events if isinstance(e, MetaTurnStarted))


def test_with_tools_the_named_line_can_be_cited_and_is_taken_exactly() -> None:
    """Once a program has printed a line that passes, answer_with_checked_result is
    offered and gives it word for word (a small model copying a long list drops words);
    never before."""
    words = ["pear", "apple", "fig", "kiwi"]
    right = " ".join(sorted(words))

    def call(name: str, arguments: str, call_id: str) -> Completion:
        return Completion("", tool_calls=[ToolCall(name, arguments, call_id)])

    ask = json.dumps({"name": "Expert Python", "instruction": f"Sort: {' '.join(words)}"})
    model = ScriptedToolModel(
        [
            call("consult_expert", ask, "c1"),
            call("final_answer", json.dumps({"answer": WRONG_GUESS}), "c2"),
            call("answer_with_checked_result", "{}", "c3"),
        ],
        lambda _n, _t: f"```python\nprint({right!r})\n```\nPlease run this code!",
    )
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=4, consult_first=False, protocol="tools")
        conductor = Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck())
        events = list(conductor.run(question_for(words)))
    finally:
        sandbox.close()
    offered = [names or () for names in model.offered]
    assert "answer_with_checked_result" not in offered[0]
    assert "answer_with_checked_result" in offered[1] and "answer_with_checked_result" in offered[2]
    assert outline(events).answer == right and outline(events).status == "answered"
