"""What an Expert Python program prints is held to the task's own check at once.

Qwen2.5-Coder-1.5B's Game of 24 programs printed a guess or a partial search, and the
model passed it on (docs/methods.md). Now, when no printed line passes the task's check
(one that needs no known answer) and one fails it, the expert is told why and writes
the program again (`python_check_retries` times at most); a line that passes is said
beside the output and, with tools, can be cited. Through a real `Conductor`, the real
subprocess sandbox and the real check of word_sorting, over generated word lists and
generated sequences of programs.
"""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring.answer_check import TaskAnswerCheck
from conductor_kernel import prompts
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    MetaTurnStarted,
    Observation,
    SandboxExec,
)
from conductor_kernel.interfaces import Completion, Message, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel, ScriptedToolModel
from record.fold import outline
from sandbox.subprocess_backend import SubprocessSandbox

TOLD = prompts.PROGRAM_FAILS_CHECK.split("{line}")[0]
PASSES = prompts.PROGRAM_PASSES_CHECK.split("{line}")[0]
FAILED = prompts.PROGRAM_FAILED.split("{status}")[0]
WORDS = st.lists(st.text(alphabet="abcdefgh", min_size=2, max_size=6), min_size=2, max_size=6)


def question_for(words: list[str]) -> str:
    return f"Sort the following words alphabetically: List: {' '.join(words)}"


CRASH = "<raise>"  # a program line that raises


def program(lines: list[str]) -> str:
    body = "\n".join(
        "raise ValueError('no candidate left')" if line == CRASH else f"print({line!r})"
        for line in lines
    )
    return f"```python\n{body or 'pass'}\n```\nPlease run this code!"


def solve(words: list[str], attempts: list[list[str]], retries: int) -> list[Event]:
    """Round 1 asks Expert Python, whose n-th reply prints `attempts[n]`; round 2 answers
    with the line said to pass, if any, else gives up with a word."""
    replies = iter(attempts)

    def meta(history: list[Message]) -> str:
        last = history[-1].content
        if last.startswith("ROUND 1"):
            return f'Expert Python:\n"""\nSort these words: {" ".join(words)}\n"""'
        named = last.split(PASSES, 1)[1].split("\n", 1)[0].strip() if PASSES in last else "x"
        return f'>> FINAL ANSWER:\n"""\n{named}\n"""'

    model = ScriptedModel(meta, lambda _name, _text: program(next(replies)))
    config = RunConfig(max_rounds=2, consult_first=False, python_check_retries=retries)
    sandbox = SubprocessSandbox()
    try:
        return list(
            Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                question_for(words)
            )
        )
    finally:
        sandbox.close()


@given(WORDS, st.data(), st.integers(min_value=0, max_value=2))
@settings(max_examples=25, deadline=None)
def test_a_failing_program_goes_back_until_one_passes_or_the_retries_run_out(
    words: list[str], data: st.DataObject, retries: int
) -> None:
    right = " ".join(sorted(words))
    wrong = " ".join(sorted(words, reverse=True)) if len(set(words)) > 1 else words[0] + " zz"
    kinds = {
        "right": ["working", right],
        "wrong": [wrong],
        "undecided": [],
        "both": [wrong, right],
        "crash": ["working", CRASH],
    }
    chosen = data.draw(st.lists(st.sampled_from(sorted(kinds)), min_size=3, max_size=3))
    events = solve(words, [kinds[k] for k in chosen], retries)

    # How many programs should run: the first, then one more per failure (a printed
    # line the check rejects, or a program that raised), while retries last; a program
    # that printed a passing line, or none the check decides, ends it, and the same
    # program sent back is not run again.
    expected, asked, same = 1, 0, False
    for before, after in itertools.pairwise(chosen[: retries + 1]):
        if before not in ("wrong", "crash"):
            break
        asked += 1
        if after == before:
            same = True
            break
        expected += 1
    ran = [e for e in events if isinstance(e, SandboxExec)]
    told = [e for e in events if isinstance(e, Observation) and e.reason == "program_fails_check"]
    assert len(ran) == expected and len(told) == asked
    assert same == any(isinstance(e, Observation) and e.reason == "same_program" for e in events)
    for kind, note in zip(chosen, told, strict=False):
        if kind == "wrong":  # the expert is told the line and the check's reason
            assert TOLD in note.message and wrong in note.message
        else:  # or that its program failed, and the end of its traceback
            assert FAILED in note.message and "no candidate left" in note.message
    # One expert call, however many programs it took; the meta model reads its output.
    assert len([e for e in events if isinstance(e, ExpertCallFinished)]) == 1
    shown = [e for e in events if isinstance(e, MetaTurnStarted)][1].user_message
    last = chosen[expected - 1]
    run = outline(events)
    if last in ("right", "both"):
        assert PASSES + right in shown
        assert run.answer == right
    else:
        assert PASSES not in shown and run.answer != right


def test_nothing_goes_back_where_nothing_can_check_the_question() -> None:
    """Not a failing line, not a program that raised: the meta model decides there."""

    def meta(history: list[Message]) -> str:
        if history[-1].content.startswith("ROUND 1"):
            return 'Expert Python:\n"""\nWhat is 6 times 7?\n"""'
        return '>> FINAL ANSWER:\n"""\n41\n"""'

    model = ScriptedModel(meta, lambda _n, _t: program(["41", CRASH]))
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=3, consult_first=False)
        events = list(
            Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                "What is 6*7?"
            )
        )
    finally:
        sandbox.close()
    assert len([e for e in events if isinstance(e, SandboxExec)]) == 1
    assert not [
        e for e in events if isinstance(e, Observation) and e.reason == "program_fails_check"
    ]


def test_with_tools_a_passing_line_can_be_cited_in_the_next_round() -> None:
    """The round after a program printed a line that passes offers
    answer_with_checked_result, which gives the line word for word; never before."""
    words = ["pear", "apple", "fig", "kiwi"]
    right = " ".join(sorted(words))
    ask = json.dumps({"name": "Expert Python", "instruction": f"Sort: {' '.join(words)}"})
    model = ScriptedToolModel(
        [
            Completion("", tool_calls=[ToolCall("consult_expert", ask, "c1")]),
            Completion("", tool_calls=[ToolCall("answer_with_checked_result", "{}", "c2")]),
        ],
        lambda _n, _t: program(["sorting...", right]),
    )
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=3, consult_first=False, protocol="tools")
        events = list(
            Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                question_for(words)
            )
        )
    finally:
        sandbox.close()
    offered = [names or () for names in model.offered]
    assert "answer_with_checked_result" not in offered[0]
    assert "answer_with_checked_result" in offered[1]
    assert outline(events).answer == right and outline(events).status == "answered"


def test_code_the_meta_model_wrote_that_fails_goes_to_expert_python() -> None:
    """The meta model's own program (run as given, without an expert's reply) that
    raises is handed to Expert Python with its traceback, where the check applies; the
    fixed program's passing line is what the meta model is then told of."""
    words = ["pear", "apple", "fig"]
    right = " ".join(sorted(words))
    broken = "```python\nwords = 'pear apple fig'.split()\nprint(' '.join(sorted(word)))\n```\nPlease run this code!"
    asked: list[str] = []

    def meta(history: list[Message]) -> str:
        last = history[-1].content
        if last.startswith("ROUND 1"):
            return f'Expert Python:\n"""\n{broken}\n"""'
        named = last.split(PASSES, 1)[1].split("\n", 1)[0].strip() if PASSES in last else "x"
        return f'>> FINAL ANSWER:\n"""\n{named}\n"""'

    def expert(_name: str, text: str) -> str:
        asked.append(text)
        return program([right])

    for question, checked in ((question_for(words), True), ("Print the words sorted.", False)):
        asked.clear()
        model = ScriptedModel(meta, expert)
        sandbox = SubprocessSandbox()
        try:
            config = RunConfig(max_rounds=2, consult_first=False)
            events = list(
                Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                    question
                )
            )
        finally:
            sandbox.close()
        ran = [e for e in events if isinstance(e, SandboxExec)]
        if checked:
            assert [e.source for e in ran] == ["instruction", "expert"]
            assert len(asked) == 1 and "NameError" in asked[0] and broken in asked[0]
            assert outline(events).answer == right
        else:  # no check applies: the meta model reads the traceback and decides
            assert [e.source for e in ran] == ["instruction"] and not asked


def test_the_retry_is_a_fresh_request_holding_the_program_and_its_fault() -> None:
    """Continued in its own conversation, a small model sent the same program back word
    for word; the retry is a new request: the instruction, the program, the fault."""
    words = ["pear", "apple", "fig"]
    right, wrong = " ".join(sorted(words)), " ".join(sorted(words, reverse=True))
    replies = iter([program([wrong]), program([right])])

    def meta(history: list[Message]) -> str:
        if history[-1].content.startswith("ROUND 1"):
            return f'Expert Python:\n"""\nSort these words: {" ".join(words)}\n"""'
        return '>> FINAL ANSWER:\n"""\nx\n"""'

    model = ScriptedModel(meta, lambda _n, _t: next(replies))
    sandbox = SubprocessSandbox()
    try:
        config = RunConfig(max_rounds=2, consult_first=False)
        list(
            Conductor(model, model, sandbox, config, answer_check=TaskAnswerCheck()).run(
                question_for(words)
            )
        )
    finally:
        sandbox.close()
    experts = [messages for role, _system, messages in model.requests if role == "expert"]
    assert len(experts) == 2 and [len(m) for m in experts] == [1, 1]
    # Sampled, not at the model's own temperature: at 0 the same program came back.
    temperatures = [
        t
        for (role, _s, _m), t in zip(model.requests, model.temperatures, strict=True)
        if role == "expert"
    ]
    assert temperatures == [None, config.python_retry_temperature]
    again = experts[1][0].content
    assert again.startswith("Sort these words") and f"print({wrong!r})" in again
    assert TOLD in again and "not in alphabetical order" in again
