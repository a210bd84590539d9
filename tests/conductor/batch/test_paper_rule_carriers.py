"""The paper's rule reads a meta turn written in its text protocol. A run whose answer
came as a tool call has no `>> FINAL ANSWER` in its turn, and its right answer was
scored wrong by the paper's rule (Qwen2.5-Coder-1.5B's `-50` on multistep arithmetic:
ours right, the paper's wrong). Such a run is read by its answer, the same way in the
batch's own record and in `conductor score` of the batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conductor.batch.runner import BatchPlan, BatchRunner
from conductor.batch.scores import score_batch
from conductor.batch.setup import make_scorer
from conductor.config import load_settings
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec
from conductor_kernel.interfaces import Completion, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel, ScriptedToolModel


def _tools_session(answer: str, runs: Path) -> Session:
    """The call made natively, with words beside it."""
    call = [ToolCall("final_answer", json.dumps({"answer": answer}), "c1")]
    return _tools(Completion("The expression evaluates as follows.", tool_calls=call), runs)


def _tools_written_session(answer: str, runs: Path) -> Session:
    """The call written as text, as the small model wrote it."""
    call = json.dumps({"name": "final_answer", "arguments": {"answer": answer}})
    return _tools(Completion(f"<tools></tools>\n\n{call}"), runs)


def _tools(turn: Completion, runs: Path) -> Session:
    model = ScriptedToolModel([turn])
    config = RunConfig(python=False, consult_first=False, protocol="tools", answer_check=False)
    return Session(model, config=config, runs_path=runs)


def _text_session(answer: str, runs: Path) -> Session:
    model = ScriptedModel([f'>> FINAL ANSWER:\n"""\n{answer}\n"""'])
    return Session(model, config=RunConfig(python=False, consult_first=False), runs_path=runs)


@pytest.mark.parametrize(
    "carried",
    [_tools_session, _tools_written_session, _text_session],
    ids=["tools", "tools written as text", "text"],
)
@pytest.mark.parametrize("answer", ["-50", "-49"])
def test_the_papers_rule_reads_a_call_carried_answer_as_the_answer(
    tmp_path: Path, carried, answer: str
) -> None:
    spec = get_spec("multistep_arithmetic_two")
    items = [TaskItem(id="a", input="((-1 + 2) * 5 - 55) =", target="-50", line=1)]
    folder = tmp_path / "batch"
    scorer = make_scorer(spec, None, load_settings())
    plan = BatchPlan(folder, "t-0123456789ab", spec.name, items, lambda i: i.input, scorer)
    runner = BatchRunner(plan, lambda item: carried(answer, folder / "runs"), concurrency=1)
    runner.run()
    (record,) = runner.log.read().values()
    right = answer == "-50"
    assert record["answer"] == answer
    assert record["score"]["correct"] is right
    assert record["score"]["paper_correct"] is right
    (tally,) = score_batch(folder / "results.jsonl", spec)
    assert (tally.ours_correct, tally.paper_correct) == (int(right), int(right))
