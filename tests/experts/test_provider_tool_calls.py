"""Tool calls through the real SDKs against the wire server (issue 34): streamed call
deltas are put together exactly, and a whole run with the tools carrier ends recorded
for every shape a turn's calls take (two at once, one cut off by the output limit, one
with malformed arguments, one to a tool that was not offered), each call answered under
its id in the provider's own form; a server that refuses tools gets the text protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_models import PROVIDERS, make_model

from conductor.session import Session
from conductor_kernel import prompts
from conductor_kernel.carrier.grammar import PROTOCOL_GBNF
from conductor_kernel.carrier.tools import offered_tools
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    Observation,
    RunFinished,
    RunStarted,
)
from conductor_kernel.interfaces import GrammarSupport, Message
from conductor_kernel.limits.run_config import RunConfig
from equipment.wire_server import Reply, WireCall, WireServer
from experts.openai_model import OpenAIModel
from record.reader import read_transcript

TOOLS = offered_tools(python=True, answer=True)
ANSWER = WireCall("final_answer", json.dumps({"answer": "42"}))
CUT = {"anthropic": "max_tokens", "openai": "length"}


def consult(name: str, instruction: str) -> WireCall:
    return WireCall("consult_expert", json.dumps({"name": name, "instruction": instruction}))


def meta_turns(*turns: Reply, expert: str = "It is 42.") -> Callable[[dict[str, Any]], Reply]:
    """A responder: a meta request (it offers tools) gets the turn of its round, counted
    by the assistant messages in it; an expert's request gets `expert`."""

    def respond(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(expert)
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return turns[min(done, len(turns) - 1)]

    return respond


def solve(provider: str, server: WireServer, tmp_path: Path, **config: Any) -> list[Event]:
    model = make_model(provider, server)
    cfg = RunConfig(python=False, parallel_experts=False, **config)
    events = list(Session(meta_model=model, config=cfg, runs_path=tmp_path).solve("6 times 7?"))
    recorded = read_transcript(tmp_path / f"{events[0].run_id}.jsonl")
    assert recorded.problem is None
    assert [e.kind for e in recorded.events if not e.transient] == [
        e.kind for e in events if not e.transient
    ]
    assert [e.status for e in events if isinstance(e, RunFinished)] == ["answered"]
    return events


def meta_bodies(server: WireServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.body.get("tools") and r.body.get("stream")]


def results_sent(provider: str, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(call id, content, is an error) of each tool result in a request, in its form."""
    if provider == "openai":
        return [
            (m["tool_call_id"], m["content"], False)
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]
    return [
        (b["tool_use_id"], b["content"], bool(b.get("is_error")))
        for b in last_user["content"]
        if b["type"] == "tool_result"
    ]


def calls_in_history(provider: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(call id, arguments) of the calls the history's assistant messages carry."""
    found: list[tuple[str, Any]] = []
    for m in body["messages"]:
        if m["role"] != "assistant":
            continue
        if provider == "openai":
            found += [(c["id"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
        else:
            blocks = m["content"] if isinstance(m["content"], list) else []
            found += [(b["id"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    return found


ARG_TEXT = st.text(max_size=80)


@pytest.mark.slow  # two SDK calls an example: about 3 s a provider
@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    calls=st.lists(st.tuples(ARG_TEXT, ARG_TEXT), min_size=1, max_size=3),
    text=ARG_TEXT,
    chunk=st.integers(1, 12),
)
def test_streamed_call_deltas_are_put_together_exactly(
    provider: str, calls: list[tuple[str, str]], text: str, chunk: int
) -> None:
    wire = [consult(name, instruction) for name, instruction in calls]
    with WireServer([Reply(text, tool_calls=wire)] * 2, tools=True, chunk_chars=chunk) as server:
        model = make_model(provider, server)
        streamed = model.complete([Message("user", "go")], tools=TOOLS, on_text=lambda _: None)
        whole = model.complete([Message("user", "go")], tools=TOOLS)
    for completion in (streamed, whole):
        assert completion.text == text
        assert [(c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [
            ("consult_expert", {"name": n, "instruction": i}) for n, i in calls
        ]
        assert len({c.id for c in completion.tool_calls}) == len(calls)
        assert completion.stop_reason in ("tool_use", "tool_calls")
    offered = server.requests[0].body["tools"]
    names = [t["name"] if provider == "anthropic" else t["function"]["name"] for t in offered]
    assert names == [t.name for t in TOOLS]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_calls_in_one_turn_both_run_and_both_are_answered(
    provider: str, tmp_path: Path
) -> None:
    two = Reply(
        "Two at once.",
        tool_calls=[consult("Arithmetician", "6*7?"), consult("Checker", "Is 6*7 42?")],
    )
    with WireServer(
        responder=meta_turns(two, Reply("", tool_calls=[ANSWER])), tools=True
    ) as server:
        events = solve(provider, server, tmp_path)
        bodies = meta_bodies(server)
    started = next(e for e in events if isinstance(e, RunStarted))
    assert (started.protocol, started.protocol_reason) == (
        "tools",
        "auto: the server took tool definitions",
    )
    experts = [e.name for e in events if isinstance(e, ExpertCallStarted)]
    assert experts == ["Expert Arithmetician", "Expert Checker"]
    ids = [c[0] for c in calls_in_history(provider, bodies[1])]
    assert [r[0] for r in results_sent(provider, bodies[1])] == ids
    assert all(content == "It is 42." for _, content, _ in results_sent(provider, bodies[1]))
    assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["42"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_cut_off_by_the_output_limit_is_never_run(provider: str, tmp_path: Path) -> None:
    cut = Reply("", CUT[provider], tool_calls=[WireCall("run_python", '{"code": "print(6 *')])
    with WireServer(
        responder=meta_turns(cut, Reply("", tool_calls=[ANSWER])), tools=True
    ) as server:
        events = solve(provider, server, tmp_path, consult_first=False)
        bodies = meta_bodies(server)
    first = next(e for e in events if isinstance(e, MetaTurnFinished))
    assert first.truncated
    assert [c["arguments"] for c in first.tool_calls] == ['{"code": "print(6 *']
    assert not [e for e in events if isinstance(e, ExpertCallStarted)]
    assert [e.reason for e in events if isinstance(e, Observation)] == ["truncated"]
    assert calls_in_history(provider, bodies[1]) == []  # a cut call is not in the history
    assert "cut off by the output limit" in json.dumps(bodies[1]["messages"][-1])
    assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["42"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_arguments_are_told_back_under_the_calls_id(
    provider: str, tmp_path: Path
) -> None:
    bad = Reply("", tool_calls=[WireCall("consult_expert", '{"name": "Judge", instruction: 7}')])
    with WireServer(
        responder=meta_turns(bad, Reply("", tool_calls=[ANSWER])), tools=True
    ) as server:
        events = solve(provider, server, tmp_path, consult_first=False)
        bodies = meta_bodies(server)
    assert not [e for e in events if isinstance(e, ExpertCallStarted)]
    assert [e.reason for e in events if isinstance(e, Observation)] == ["no_call_or_answer"]
    [(call_id, arguments)] = calls_in_history(provider, bodies[1])
    assert arguments in ("{}", {})  # what a chat template can render; the result says why
    [(result_id, content, error)] = results_sent(provider, bodies[1])
    assert result_id == call_id and "not valid JSON" in content
    assert error or provider == "openai"  # Chat Completions has no error flag
    assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["42"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_calls_to_tools_not_offered_are_refused_with_a_reason(
    provider: str, tmp_path: Path
) -> None:
    round_one = Reply(
        "", tool_calls=[WireCall("search_web", '{"q": "6*7"}'), ANSWER, consult("Judge", "6*7?")]
    )
    round_two = Reply("", tool_calls=[consult("Judge", "6*7?")])
    with WireServer(
        responder=meta_turns(round_one, round_two, Reply("", tool_calls=[ANSWER])), tools=True
    ) as server:
        events = solve(provider, server, tmp_path, ready_call=False)
        bodies = meta_bodies(server)
    # No answer is offered before an expert is consulted (consult first): not in round 1.
    offered = bodies[0]["tools"]
    assert "final_answer" not in json.dumps(offered)
    reasons = [e.reason for e in events if isinstance(e, Observation)]
    assert reasons == ["bad_tool_call", "answer_before_consult"]
    sent = results_sent(provider, bodies[1])
    assert "no tool named 'search_web'" in sent[0][1]
    assert sent[1][1] == prompts.ANSWER_NOT_YET
    assert "came after the final_answer" in sent[2][1]
    assert bodies[1]["messages"][-1]["content"] != ""
    assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["42"]
    assert not [e for e in events if isinstance(e, ErrorEvent)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_refuses_tools_gets_the_text_protocol(provider: str, tmp_path: Path) -> None:
    with WireServer(['>> FINAL ANSWER:\n"""\n42\n"""'] * 2) as server:
        first = solve(provider, server, tmp_path, consult_first=False)
        second = solve(provider, server, tmp_path, consult_first=False)
        refused = server.refused_tools
    for events in (first, second):
        started = events[0]
        assert isinstance(started, RunStarted) and started.protocol == "text"
        assert "refused tool definitions (HTTP 400" in started.protocol_reason
        assert [e.answer for e in events if isinstance(e, FinalAnswer)] == ["42"]
    assert len(refused) == 1  # asked once: the answer is remembered for the endpoint
    assert refused[0].body["max_tokens"] == 1  # the probe asks for one token


def test_a_grammar_goes_to_an_openai_compatible_server_and_never_to_openai(
    server: WireServer,
) -> None:
    server.add('Expert Poet:\n"""\nA haiku.\n"""')
    model = make_model("openai", server)
    assert model.grammar_support()[0]
    model.complete([Message("user", "go")], grammar=PROTOCOL_GBNF, on_text=lambda _: None)
    assert server.requests[0].body["grammar"] == PROTOCOL_GBNF
    official = OpenAIModel("gpt-4o", api_key="test-key")
    assert not official.grammar_support()[0]
    assert not isinstance(make_model("anthropic", server), GrammarSupport)
