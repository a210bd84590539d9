"""Reasoning through the real SDKs, in every form a server sends it: the calls and the
answer a model only thought about are never acted on, and the thinking is kept in the
transcript as a `<think>` block (issue 27, item 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_provider_faults import make_model

from conductor.session import Session
from conductor_kernel.events import ExpertCallStarted, FinalAnswer, MetaTurnFinished
from conductor_kernel.interfaces import Message
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.reasoning import split_reasoning
from equipment.wire_server import Reply, WireServer
from experts.retry import Backoff
from record.reader import read_transcript

THOUGHT = (
    'Maybe ask Expert Checker:\n"""\nIs 6*7 41?\n"""\n\n'
    'Expert Python:\n"""\n```python\nprint(41)\n```\nPlease run this code!\n"""\n\n'
    '>> FINAL ANSWER:\n"""\n41\n"""'
)
ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'
# The same thought as each server form sends it: apart from the text, in the content,
# opened by the chat template, and left open by a turn cut mid-thought.
FORMS = {
    "apart": Reply("Checked it.\n" + ANSWER, reasoning=THOUGHT),
    "in content": Reply(f"<think>\n{THOUGHT}\n</think>\nChecked it.\n{ANSWER}"),
    "opened by template": Reply(f"{THOUGHT}\n</think>\n\n{ANSWER}"),
    "unclosed": Reply(f"Hmm.\n<think>\n{THOUGHT}"),
}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_thought_is_kept_and_never_acted_on(provider: str, form: str, tmp_path: Path) -> None:
    with WireServer([FORMS[form], ANSWER]) as server:
        model = make_model(provider, server, backoff=Backoff(base_s=0.01, cap_s=0.05))
        session = Session(meta_model=model, config=RunConfig(python=False), runs_path=tmp_path)
        events = list(session.solve("What is 6 times 7?"))
    assert not [e for e in events if isinstance(e, ExpertCallStarted)]
    answers = [e.answer for e in events if isinstance(e, FinalAnswer)]
    assert answers == ["42"]
    run_id = events[0].run_id
    turns = [
        e
        for e in read_transcript(tmp_path / f"{run_id}.jsonl").events
        if isinstance(e, MetaTurnFinished)
    ]
    kept = split_reasoning(turns[0].text)
    assert kept.has_reasoning
    assert "print(41)" in kept.reasoning[0]
    assert "41" not in kept.visible


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_reasoning_apart_from_the_text_is_folded_in_a_plain_reply(provider: str) -> None:
    with WireServer([FORMS["apart"]]) as server:
        completion = make_model(provider, server).complete([Message("user", "6*7?")])
    split = split_reasoning(completion.text)
    assert split.reasoning == (THOUGHT,)
    assert split.visible.strip() == "Checked it.\n" + ANSWER
