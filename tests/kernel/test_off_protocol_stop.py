"""A run stops early when the meta model ignores the protocol several turns in a row:
the model or its chat template does not follow the format, and more rounds would only
cost prompts. Turns that call an expert or answer reset the count."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.events import Observation, RunFinished
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.conversation import OFF_PROTOCOL, OFF_PROTOCOL_TURNS
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel

CALL = 'Expert Checker:\n"""\nCheck 6*7.\n"""'
ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'
# Prose a small model writes instead of the protocol: letters, digits, punctuation.
PROSE = st.text(st.sampled_from("abcdefghij XYZ 0123456789.,!?\n"), min_size=1, max_size=80)
PROSE = PROSE.filter(lambda t: t.strip() != "")


def expected(kinds: list[str], max_rounds: int) -> tuple[str, int]:
    """(status, rounds) the run should end with, turn kinds played in order."""
    streak = 0
    for number, kind in enumerate(kinds[:max_rounds], start=1):
        if kind == "answer":
            return "answered", number
        streak = streak + 1 if kind in ("prose", "empty") else 0
        if streak >= OFF_PROTOCOL_TURNS and number < max_rounds:
            return "no_answer", number
    return "limit", min(len(kinds), max_rounds)


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["prose", "empty", "call"]), min_size=12, max_size=12).map(
        lambda k: [*k, "answer"]
    ),
    prose=PROSE,
)
def test_the_run_stops_after_turns_in_a_row_off_protocol(kinds: list[str], prose: str) -> None:
    text = {"prose": prose, "empty": "", "call": CALL, "answer": ANSWER}
    model = ScriptedModel([text[k] for k in kinds], lambda name, instruction: "Fine.")
    config = RunConfig(max_rounds=15, last_round_notice=False)
    events = list(Conductor(model, config=config).run("What is 6*7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    status, rounds = expected(kinds, config.max_rounds)
    assert (finished.status, finished.rounds) == (status, rounds), kinds
    stopped = [e for e in events if isinstance(e, Observation) and e.reason == OFF_PROTOCOL]
    assert len(stopped) == (status == "no_answer")
    if stopped:
        assert "chat template does not follow the format" in stopped[0].message
