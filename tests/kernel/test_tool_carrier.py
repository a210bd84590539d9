"""The protocol carried by tool calls (issue 34): a `tools` turn folds to the same events
as the `text` turn it corresponds to, round 1 offers no answer under consult-first, an
answer ends its turn, calls written into the text are read and said to be, and every
call that cannot be acted on gets a reason back under its own id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import INSTRUCTION, NAME, Q, render

from conductor_kernel import prompts
from conductor_kernel.carrier import compact_prompt
from conductor_kernel.carrier.choice import choose_carrier
from conductor_kernel.carrier.grammar import PROTOCOL_GBNF
from conductor_kernel.errors import ConfigError
from conductor_kernel.events import (
    Event,
    ExpertCallStarted,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunStarted,
)
from conductor_kernel.interfaces import Completion, Message, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from conductor_kernel.run.tool_turns import answer_withheld
from experts.demo import demo_model
from experts.scripted import ScriptedModel, ScriptedToolModel
from record.fold import outline


@dataclass(frozen=True)
class Consult:
    name: str
    instruction: str


@dataclass(frozen=True)
class Answer:
    answer: str


Act = Consult | Answer
# What the text form can carry: a `<think>` in it opens reasoning, which hides the rest
# of a text turn (conductor_kernel/reasoning.py), while a tool call's argument is data.
TEXT = INSTRUCTION.filter(lambda t: "<think" not in t.lower() and "</think" not in t.lower())
ACT = st.one_of(st.builds(Consult, NAME, TEXT), st.builds(Answer, TEXT))
# A run's script: turns of zero to three acts each (zero: prose that does neither).
SCRIPT = st.lists(st.lists(ACT, max_size=3), min_size=1, max_size=5)


def as_text(acts: list[Act]) -> str:
    parts = ["Let me think."]
    for act in acts:
        if isinstance(act, Consult):
            parts.append(render(act.name, act.instruction))
        else:
            parts.append(f">> FINAL ANSWER:\n{Q}\n{act.answer}\n{Q}")
    return "\n\n".join(parts)


def as_tools(acts: list[Act], turn: int) -> Completion:
    calls = []
    for i, act in enumerate(acts):
        if isinstance(act, Consult):
            args = {"name": act.name, "instruction": act.instruction}
            calls.append(ToolCall("consult_expert", json.dumps(args), f"call-{turn}-{i}"))
        else:
            calls.append(
                ToolCall("final_answer", json.dumps({"answer": act.answer}), f"c{turn}{i}")
            )
    return Completion("Let me think.", tool_calls=calls)


def expert(name: str, instruction: str) -> str:
    return f"{name} read {len(instruction)} characters."


def run(model: ScriptedModel, config: RunConfig) -> list[Event]:
    return list(Conductor(model, config=config).run("What is asked?"))


def folded(events: list[Event]) -> tuple[object, ...]:
    """What the one fold of a run says it did: each round's calls and the answer it
    wrote (taken or set aside, as the audit reads it), the observations, the answer,
    how it ended."""
    out = outline(events)
    calls = [[(c.name, c.instruction) for c in r.calls] for r in out.rounds]
    written = [r.answer_written for r in out.rounds]
    reasons = [
        e.reason
        for r in out.rounds
        for e in r.events
        if isinstance(e, Observation) and e.reason != "read_from_text"
    ]
    return calls, written, reasons, out.answer, out.status


# One call at a time, so the order the calls start in is the order written.
CONFIG = RunConfig(python=False, consult_first=False, max_rounds=6, parallel_experts=False)


@settings(max_examples=120)
@given(SCRIPT)
def test_a_tools_turn_folds_like_the_text_turn_it_corresponds_to(script: list[list[Act]]) -> None:
    text = ScriptedModel([as_text(t) for t in script] + ["nothing"] * 6, expert)
    tools = ScriptedToolModel([as_tools(t, n) for n, t in enumerate(script)] + ["x"] * 6, expert)
    by_text, by_tools = (
        run(text, CONFIG.model_copy(update={"protocol": "text"})),
        run(tools, CONFIG),
    )
    assert by_text[0].protocol == "text" and by_tools[0].protocol == "tools"  # type: ignore[attr-defined]
    assert folded(by_tools) == folded(by_text)


def test_consult_first_withholds_the_answer_until_an_expert_is_consulted() -> None:
    answer = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "42"}', "a1")])
    consult = Completion(
        "", tool_calls=[ToolCall("consult_expert", '{"name": "Judge", "instruction": "6*7?"}')]
    )
    model = ScriptedToolModel([answer, answer, consult, answer], expert)
    events = run(model, RunConfig(python=False, ready_call=False))
    only_consult, both = ("consult_expert",), ("consult_expert", "final_answer")
    assert model.offered == [only_consult, only_consult, only_consult, both]
    refused = [e for e in events if isinstance(e, Observation)]
    assert [e.reason for e in refused] == ["answer_before_consult"] * 2
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert second.tool_results == [
        {
            "call_id": "a1",
            "name": "final_answer",
            "content": prompts.ANSWER_NOT_YET,
            "is_error": False,
        }
    ]
    # A ready call, made from the question, to copy.
    ready = compact_prompt.consult_first("What is asked?", tools=True, python=False)
    assert second.user_message.endswith(ready) and "Task: What is asked?" in ready
    assert outline(events).answer == "42"


@settings(max_examples=80)
@given(
    max_rounds=st.integers(1, 5),
    notice=st.booleans(),
    notice_at=st.none() | st.integers(1, 5),
    consult_first=st.booleans(),
)
def test_the_answer_waits_for_a_consultation_and_never_when_it_must_answer(
    max_rounds: int, notice: bool, notice_at: int | None, consult_first: bool
) -> None:
    cfg = RunConfig(
        max_rounds=max_rounds,
        last_round_notice=notice,
        last_round_notice_at=notice_at,
        consult_first=consult_first,
    )
    rounds = range(1, max_rounds + 1)
    withheld = [r for r in rounds if answer_withheld(cfg, r)]
    told_to_answer = [r for r in rounds if notice and r >= (notice_at or max_rounds - 1)]
    expected = [r for r in rounds if r < max_rounds and r not in told_to_answer]
    assert withheld == (expected if consult_first else [])
    assert not [r for r in rounds if answer_withheld(cfg, r, consulted=True)]
    assert not [r for r in rounds if answer_withheld(cfg, r, handed=True)]


def test_an_answer_ends_its_turn_and_later_calls_are_not_run() -> None:
    calls = [
        ToolCall("final_answer", '{"answer": "7"}', "a"),
        ToolCall("consult_expert", '{"name": "Checker", "instruction": "check 7"}', "b"),
    ]
    events = run(ScriptedToolModel([Completion("", tool_calls=calls)], expert), CONFIG)
    assert not [e for e in events if isinstance(e, ExpertCallStarted)]
    assert outline(events).answer == "7"


def test_a_call_written_as_text_is_read_and_recorded_as_recovered() -> None:
    call = {"name": "consult_expert", "arguments": {"name": "Poet", "instruction": "a haiku"}}
    written = f"I will ask.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    model = ScriptedToolModel([written, '>> FINAL ANSWER:\n"""\ndone\n"""'], expert)
    events = run(model, CONFIG)
    first = next(e for e in events if isinstance(e, MetaTurnFinished))
    assert [(c["name"], c["source"]) for c in first.tool_calls] == [("consult_expert", "text")]
    assert [e.name for e in events if isinstance(e, ExpertCallStarted)] == ["Expert Poet"]
    reasons = [e.reason for e in events if isinstance(e, Observation)]
    assert reasons == ["calls_from_text", "read_from_text"]
    # No ids to answer under: the outputs go back in the text, as the text protocol's do.
    _, _, sent = model.requests[2]
    assert sent[-1].tool_results == ()
    assert "Expert Poet's output:" in sent[-1].content
    assert outline(events).answer == "done"


def test_every_call_gets_a_result_under_its_id_bad_ones_a_reason() -> None:
    calls = [
        ToolCall("consult_expert", '{"name": "Judge", "instruction": "is 2 prime?"}', "ok"),
        ToolCall("consult_expert", '{"name": "Judge", "instruction": ', "cut"),
        ToolCall("search_web", '{"q": "primes"}', "unknown"),
        ToolCall("consult_expert", '{"instruction": "nameless"}', "noname"),
    ]
    answer = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "yes"}', "z")])
    model = ScriptedToolModel([Completion("", tool_calls=calls), answer], expert)
    events = run(model, CONFIG)
    _, _, sent = model.requests[2]
    assistant, user = sent[-2], sent[-1]
    assert [c.id for c in assistant.tool_calls] == ["ok", "cut", "unknown", "noname"]
    results = {r.call_id: r for r in user.tool_results}
    assert list(results) == ["ok", "cut", "unknown", "noname"]
    assert not results["ok"].is_error and "Judge read" in results["ok"].content
    assert results["cut"].is_error and "not valid JSON" in results["cut"].content
    assert (
        results["unknown"].is_error and "no tool named 'search_web'" in results["unknown"].content
    )
    assert results["noname"].is_error and '"name"' in results["noname"].content
    bad = [e.message for e in events if isinstance(e, Observation) and e.reason == "bad_tool_call"]
    assert len(bad) == 3
    assert outline(events).answer == "yes"


def test_a_turn_of_only_bad_calls_is_a_nudge_and_counts_as_off_protocol() -> None:
    bad = Completion("", tool_calls=[ToolCall("nope", "{}", "n")])
    events = run(ScriptedToolModel([bad] * 5, expert), CONFIG)
    reasons = [e.reason for e in events if isinstance(e, Observation)]
    assert reasons == ["no_call_or_answer"] * 3 + ["off_protocol"]


def test_the_carrier_is_chosen_and_recorded() -> None:
    scripted, tools = ScriptedModel(["x"]), ScriptedToolModel(["x"])
    assert choose_carrier("auto", scripted, method_carriers=("text", "tools")).carrier == "text"
    assert choose_carrier("auto", tools, method_carriers=("text", "tools")).carrier == "tools"
    assert choose_carrier("auto", tools, method_carriers=("text",)).carrier == "text"
    assert choose_carrier("text", tools, method_carriers=("text", "tools")).carrier == "text"
    with pytest.raises(ConfigError, match="--protocol text or auto"):
        choose_carrier("tools", demo_model(), method_carriers=("text", "tools"))
    started = run(
        ScriptedToolModel(['>> FINAL ANSWER:\n"""\n1\n"""'] * 2),
        RunConfig(python=False, consult_first=False),
    )[0]
    assert isinstance(started, RunStarted)
    assert (started.protocol, started.protocol_reason) == (
        "tools",
        "auto: the scripted model takes tools",
    )
    assert started.system_prompt == prompts.META_TOOLS_SYSTEM


def test_a_model_without_tools_is_never_offered_them() -> None:
    class Plain:
        """A model that predates tools: its `complete` has no such argument."""

        name = "plain"

        def complete(self, messages: list[Message], **kw: object) -> Completion:
            assert "tools" not in kw
            return Completion('>> FINAL ANSWER:\n"""\n1\n"""')

    events = list(Conductor(Plain(), config=RunConfig(python=False)).run("Q?"))  # type: ignore[arg-type]
    assert outline(events).answer == "1"
    assert events[0].protocol == "text"  # type: ignore[attr-defined]


def test_a_call_sent_without_an_id_gets_one_and_its_result_goes_under_it() -> None:
    call = ToolCall("consult_expert", '{"name": "Judge", "instruction": "is 2 prime?"}')
    answer = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "yes"}')])
    model = ScriptedToolModel([Completion("", tool_calls=[call]), answer], expert)
    run(model, CONFIG)
    _, _, sent = model.requests[2]
    [made] = sent[-2].tool_calls
    assert made.id and [r.call_id for r in sent[-1].tool_results] == [made.id]


def test_the_grammar_carrier_holds_every_meta_turn_to_the_text_protocol() -> None:
    model = ScriptedToolModel(
        ['Expert Poet:\n"""\nA haiku.\n"""', '>> FINAL ANSWER:\n"""\nok\n"""'], expert
    )
    events = run(model, CONFIG.model_copy(update={"protocol": "grammar"}))
    assert model.grammars == [PROTOCOL_GBNF, PROTOCOL_GBNF]
    assert model.offered == [None, None]  # no tools: the text forms, held by the grammar
    assert isinstance(events[0], RunStarted) and events[0].protocol == "grammar"
    assert events[0].system_prompt == prompts.META_SYSTEM
    turns = [e for e in events if isinstance(e, MetaTurnFinished)]
    assert [t.carrier for t in turns] == ["grammar", "grammar"]
    assert outline(events).answer == "ok"
    with pytest.raises(ConfigError, match="--protocol grammar: the model 'demo'"):
        choose_carrier("grammar", demo_model(), method_carriers=("text", "tools", "grammar"))
