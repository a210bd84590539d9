"""The conductor loop driven by scripted models, with real code execution."""

from __future__ import annotations

import threading

import pytest

from conductor_kernel import prompts
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunFinished,
    SandboxExec,
    TextDelta,
)
from conductor_kernel.interfaces import Completion, ModelError, Usage
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel
from sandbox.subprocess_backend import SubprocessSandbox

ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'


def call(name: str, instruction: str) -> str:
    return f'{name}:\n"""\n{instruction}\n"""'


def run(conductor: Conductor, question: str = "What is 6*7?") -> list[Event]:
    return list(conductor.run(question))


def of(events: list[Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


@pytest.fixture
def sandbox():
    box = SubprocessSandbox()
    yield box
    box.close()


def test_direct_answer_finishes_in_one_round() -> None:
    events = run(Conductor(ScriptedModel([ANSWER])))
    finished = of(events, RunFinished)[0]
    assert finished.status == "answered"
    assert finished.final_answer == "42"
    assert finished.rounds == 1
    assert of(events, FinalAnswer)[0].answer == "42"


def test_expert_sees_only_its_instruction_and_output_returns_to_meta() -> None:
    model = ScriptedModel(
        [call("Expert Mathematician", "Compute 6 times 7."), ANSWER],
        lambda name, instruction: f"{name} says 42",
    )
    events = run(Conductor(model), "SECRET QUESTION TEXT")
    expert_requests = [r for r in model.requests if r[0] == "expert"]
    assert len(expert_requests) == 1
    _, system, messages = expert_requests[0]
    assert [m.content for m in messages] == ["Compute 6 times 7."]
    assert "SECRET QUESTION TEXT" not in (system or "") + messages[0].content
    started = of(events, ExpertCallStarted)[0]
    assert (
        started.prompt == "Compute 6 times 7." and "Expert Mathematician" in started.system_prompt
    )
    # Round 2's user turn quotes the expert's output under its name, then feedback.
    round2 = next(e for e in of(events, MetaTurnStarted) if e.round == 2).user_message
    assert round2.startswith("ROUND 2:")
    assert "Expert Mathematician's output:" in round2 and "Expert Mathematician says 42" in round2
    assert prompts.FEEDBACK in round2


def test_expert_events_nest_under_their_meta_turn() -> None:
    model = ScriptedModel([call("Expert A", "x"), ANSWER], lambda n, i: "ok")
    events = run(Conductor(model))
    turn = of(events, MetaTurnStarted)[0]
    started = of(events, ExpertCallStarted)[0]
    finished = of(events, ExpertCallFinished)[0]
    assert started.parent_id == turn.id
    assert finished.parent_id == started.id
    assert len({e.id for e in events}) == len(events)


def test_turn_without_call_or_answer_is_nudged() -> None:
    model = ScriptedModel(["Let me think about it.", ANSWER])
    events = run(Conductor(model))
    assert [o.reason for o in of(events, Observation)] == ["no_call_or_answer"]
    round2 = of(events, MetaTurnStarted)[1].user_message
    assert round2 == "ROUND 2:\n\n" + prompts.NUDGE
    assert of(events, RunFinished)[0].status == "answered"


def test_empty_instruction_is_not_sent_and_the_meta_model_is_told() -> None:
    model = ScriptedModel([call("Expert Poet", "   "), ANSWER], lambda n, i: "never")
    events = run(Conductor(model))
    assert not [r for r in model.requests if r[0] == "expert"]
    assert "empty_instruction" in [o.reason for o in of(events, Observation)]
    assert "Expert Poet had an empty instruction" in of(events, MetaTurnStarted)[1].user_message


def test_calls_and_answer_in_one_turn_runs_calls_first() -> None:
    both = call("Expert Checker", "check 42") + "\n\n" + ANSWER.replace("42", "41")
    model = ScriptedModel([both, ANSWER], lambda n, i: "42 is right")
    events = run(Conductor(model))
    assert len(of(events, ExpertCallFinished)) == 1
    assert of(events, RunFinished)[0].final_answer == "42"
    assert "calls_and_answer" in [o.reason for o in of(events, Observation)]


def test_calls_and_answer_policy_answer_takes_the_answer() -> None:
    both = call("Expert Checker", "check") + "\n\n" + ANSWER
    model = ScriptedModel([both], lambda n, i: "unused")
    events = run(Conductor(model, config=RunConfig(calls_and_answer="answer")))
    assert of(events, RunFinished)[0].final_answer == "42"
    assert not of(events, ExpertCallStarted)


def test_round_limit_with_last_round_notice() -> None:
    model = ScriptedModel(["thinking"] * 3)
    events = run(Conductor(model, config=RunConfig(max_rounds=3)))
    finished = of(events, RunFinished)[0]
    assert finished.status == "limit" and finished.rounds == 3
    assert of(events, LimitHit)[0].limit == "rounds"
    notices = [e.round for e in of(events, MetaTurnStarted) if prompts.LAST_ROUND in e.user_message]
    assert notices == [2]


def test_token_limit_is_checked_while_the_first_call_streams() -> None:
    model = ScriptedModel(["thinking " * 40] * 10, chunk_chars=4)
    events = run(Conductor(model, config=RunConfig(max_tokens=1)))
    assert of(events, LimitHit)[0].limit == "tokens"
    finished = of(events, RunFinished)[0]
    assert finished.status == "limit" and finished.rounds == 1
    turn = of(events, MetaTurnFinished)[0]
    # Stopped after its first piece, not streamed to the end; its usage is still counted.
    assert turn.stop_reason == "stopped:limit:tokens" and turn.text == "thin"
    assert finished.usage.calls == 1 and finished.usage.output_tokens == 1


class PricedModel(ScriptedModel):
    def complete(self, messages, **kwargs) -> Completion:  # type: ignore[override]
        completion = super().complete(messages, **kwargs)
        completion.usage.cost_usd = 0.5
        return completion


def test_cost_limit() -> None:
    events = run(Conductor(PricedModel(["x"] * 10), config=RunConfig(max_cost_usd=1.0)))
    assert of(events, LimitHit)[0].limit == "cost"
    assert of(events, RunFinished)[0].rounds == 2


def test_several_calls_in_one_turn_run_concurrently() -> None:
    # Each expert waits until all three are in their call at once: run one after
    # another, the first would wait for ever (the barrier's timeout only ends a failure).
    all_in = threading.Barrier(3, timeout=60)
    active, peak, lock = [0], [0], threading.Lock()

    def meeting_expert(name: str, instruction: str) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        all_in.wait()
        with lock:
            active[0] -= 1
        return f"{name} done"

    turn = "\n\n".join(call(f"Expert Number{i}", f"task {i}") for i in range(3))
    model = ScriptedModel([turn, ANSWER], meeting_expert)
    events = run(Conductor(model))
    assert peak[0] == 3
    assert [e.error for e in of(events, ExpertCallFinished)] == [None] * 3
    # Output order follows the calls, not completion order.
    round2 = of(events, MetaTurnStarted)[1].user_message
    positions = [round2.index(f"Expert Number{i}'s output") for i in range(3)]
    assert positions == sorted(positions)


def test_streamed_text_arrives_as_deltas_and_adds_up() -> None:
    text = "Some long reasoning " * 10 + ANSWER
    events = run(Conductor(ScriptedModel([text], chunk_chars=7)))
    turn_id = of(events, MetaTurnStarted)[0].id
    deltas = [e.text for e in of(events, TextDelta) if e.parent_id == turn_id]
    assert len(deltas) > 5 and "".join(deltas) == text


def test_python_expert_code_runs_in_the_sandbox(sandbox) -> None:
    code_reply = "```python\nprint(sum(range(10)))\n```\nPlease run this code!"
    model = ScriptedModel([call("Expert Python", "Sum 0..9"), ANSWER], [code_reply])
    events = run(Conductor(model, sandbox=sandbox))
    execs = of(events, SandboxExec)
    assert len(execs) == 1 and execs[0].result.stdout == "45\n" and execs[0].source == "expert"
    assert "45" in of(events, MetaTurnStarted)[1].user_message
    assert of(events, RunFinished)[0].sandbox_runs == 1


def test_code_in_the_instruction_runs_without_a_model_call(sandbox) -> None:
    instruction = "```python\nprint('direct')\n```\nPlease run this code!"
    model = ScriptedModel([call("Expert Python", instruction), ANSWER], [])
    events = run(Conductor(model, sandbox=sandbox))
    assert not [r for r in model.requests if r[0] == "expert"]
    assert of(events, SandboxExec)[0].result.stdout == "direct\n"
    assert of(events, SandboxExec)[0].source == "instruction"


def test_marker_without_code_is_an_observation_not_a_crash(sandbox) -> None:
    model = ScriptedModel(
        [call("Expert Python", "go"), ANSWER], ["I forgot the code. Please run this code!"]
    )
    events = run(Conductor(model, sandbox=sandbox))
    assert "no_code" in [o.reason for o in of(events, Observation)]
    assert not of(events, SandboxExec)
    assert "No program was run" in of(events, MetaTurnStarted)[1].user_message


def test_raising_code_and_timeouts_are_fed_back(sandbox) -> None:
    replies = [
        "```python\nraise ValueError('boom')\n```\nPlease run this code!",
        "```python\nwhile True: pass\n```\nPlease run this code!",
    ]
    model = ScriptedModel([call("Expert Python", "a"), call("Expert Python", "b"), ANSWER], replies)
    cfg = RunConfig(python_timeout_s=1, parallel_experts=False)
    events = run(Conductor(model, sandbox=sandbox, config=cfg))
    first, second = of(events, SandboxExec)
    assert first.result.exit_code == 1 and "ValueError: boom" in first.result.stderr
    assert second.result.timed_out
    rounds = of(events, MetaTurnStarted)
    assert "ValueError: boom" in rounds[1].user_message
    assert "stopped after 1 seconds" in rounds[2].user_message


def test_program_output_is_capped_for_the_meta_model(sandbox) -> None:
    reply = "```python\nprint('x' * 100000)\n```\nPlease run this code!"
    model = ScriptedModel([call("Expert Python", "flood"), ANSWER], [reply])
    events = run(Conductor(model, sandbox=sandbox, config=RunConfig(output_cap_chars=1000)))
    round2 = of(events, MetaTurnStarted)[1].user_message
    assert len(round2) < 5000 and "characters cut" in round2


class FailingModel:
    name = "failing"

    def complete(self, messages, **kwargs) -> Completion:
        raise ModelError("the server said no; check it and retry")


def test_system_failure_is_recorded_then_raised() -> None:
    events: list[Event] = []
    with pytest.raises(ModelError):
        for event in Conductor(FailingModel()).run("q"):
            events.append(event)
    assert of(events, ErrorEvent)[0].message.startswith("the server said no")
    assert of(events, RunFinished)[0].status == "error"


class BlockedModel:
    """A model whose call does not return until the test lets it."""

    name = "blocked"

    def __init__(self) -> None:
        self.called = threading.Event()
        self.release = threading.Event()
        self.returned = False

    def complete(self, messages, **kwargs) -> Completion:
        self.called.set()
        self.release.wait(60)
        self.returned = True
        return Completion(text=ANSWER, usage=Usage())


def test_cancel_interrupts_a_run_and_it_still_finishes() -> None:
    model = BlockedModel()
    conductor = Conductor(model)
    threading.Thread(target=lambda: model.called.wait(60) and conductor.cancel()).start()
    events = run(conductor)
    # The run ended while the model's call was still blocked: the cancel did not wait for it.
    assert not model.returned
    model.release.set()
    assert of(events, RunFinished)[0].status == "interrupted"


@pytest.mark.parametrize(
    ("turn", "reason"),
    [
        ("Expert Mathematician:\nCheck 6*7.", "no instruction in triple quotes"),
        ('Expert Mathematician: """Check 6*7."""', "on the same line"),
        ("So the final answer is 42.", "not as the marker"),
        ('<think>\nExpert Math:\n"""\nCheck\n"""\n</think>', "inside a reasoning block"),
        ('Expert Math\'s output:\n"""\n42\n"""', "output yourself"),
    ],
)
def test_the_nudge_says_why_the_turn_was_not_accepted(turn: str, reason: str) -> None:
    events = run(Conductor(ScriptedModel([turn, ANSWER])))
    round2 = of(events, MetaTurnStarted)[1].user_message
    assert reason in round2 and round2.endswith(prompts.NUDGE)
    assert reason in of(events, Observation)[0].message
    assert of(events, RunFinished)[0].final_answer == "42"
