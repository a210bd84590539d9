"""`check_before_answer` (issue 26): a final answer given before any expert was
consulted is sent back once, asking for one check. Over generated scripts of turns
(answer, expert call, neither) and round limits, the run ends exactly as a reference
reading of the rule says, and with the option off exactly as before.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel import prompts
from conductor_kernel.events import FinalAnswer, Observation, RunFinished
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.conversation import OFF_PROTOCOL_TURNS
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel

TURNS = st.lists(st.sampled_from(["answer", "call", "neither"]), min_size=1, max_size=8)


def _text(kind: str, i: int) -> str:
    if kind == "answer":
        return f'>> FINAL ANSWER:\n"""\n{i}\n"""'
    if kind == "call":
        return f'Expert Checker:\n"""\ncheck candidate {i}\n"""'
    return "Let me think about this some more."


def _expected(turns: list[str], max_rounds: int, check: bool) -> tuple[str | None, bool]:
    """The answer the rule accepts (the turn's index), and whether it sent one back."""
    consulted = asked = False
    idle = 0  # turns in a row that neither call nor answer: the off-protocol stop
    for i, kind in enumerate(turns[:max_rounds]):
        last = i + 1 >= max_rounds
        idle = idle + 1 if kind == "neither" else 0
        if idle >= OFF_PROTOCOL_TURNS:
            return None, asked
        if kind == "answer":
            if check and not consulted and not asked and not last:
                asked = True
                continue
            return str(i), asked
        if kind == "call":
            consulted = True
    return None, asked


@settings(max_examples=200, deadline=None)
@given(turns=TURNS, max_rounds=st.integers(1, 6), check=st.booleans())
def test_an_answer_before_any_check_is_sent_back_once(
    turns: list[str], max_rounds: int, check: bool
) -> None:
    texts = [_text(kind, i) for i, kind in enumerate(turns)] + ["(out of script)"] * 10
    model = ScriptedModel(texts, lambda name, instruction: "looks right")
    config = RunConfig(max_rounds=max_rounds, check_before_answer=check, last_round_notice=False)
    events = list(Conductor(model, config=config).run("What is 6*7?"))
    finished = next(e for e in events if isinstance(e, RunFinished))
    answer, asked = _expected(turns, max_rounds, check)
    assert finished.final_answer == answer, (turns, max_rounds, check)
    sent_back = [
        e for e in events if isinstance(e, Observation) and e.reason == "answer_before_check"
    ]
    assert len(sent_back) == int(asked)
    if asked:
        # The ready call names the question and the answer sent back.
        first_answer = str(turns.index("answer"))
        assert sent_back[0].message == prompts.check_first("What is 6*7?", first_answer)
        assert 'Expert Checker:\n"""' in sent_back[0].message
    answers = [e for e in events if isinstance(e, FinalAnswer)]
    assert len(answers) == (answer is not None)
