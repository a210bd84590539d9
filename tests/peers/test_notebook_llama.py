"""The notebook's own model calls against llama-server with SmolLM2-135M-Instruct.

A run solved by a scripted conductor (the model under test is not asked to solve
anything) is learned with SmolLM2 as the notebook's model, through the real SDK:
reflection, the choice of task type, induction when due, and the recall's narrowing
before the next run. A 135M model writes little in the asked form, so these tests
check what must hold whatever it writes: notes are stored only in the keyed form the
parser accepts (or not at all), nothing of the prompt written back is kept, every call
is on the run's ledger as the server counted it, nothing raises. What the model wrote
is printed (`pytest -s`) and kept in the test's peers directory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from servers import LlamaServer

from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel.events import Event, NotesWritten, Recall, RunFinished
from conductor_kernel.interfaces import Completion, Message, Usage
from conductor_kernel.limits.run_config import RunConfig
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from experts.scripted import ScriptedModel
from lessons import prompts
from lessons.write.asking import is_placeholder
from lessons.write.distill import parse_reflection
from sandbox.subprocess_backend import SubprocessSandbox

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

SORT = "Sort the following words alphabetically: List: "
PROGRAM = "words = {words!r}\nprint(' '.join(sorted(words)))"
LISTS = [["pear", "apple", "fig"], ["kiwi", "yam", "date"], ["lime", "plum", "beet"]]
CALLS = {
    prompts.REFLECTION_SYSTEM: "reflection",
    prompts.TYPE_SYSTEM: "type choice",
    prompts.NARROW_SYSTEM: "narrowing",
    prompts.INDUCTION_SYSTEM: "induction",
}


class Recorder:
    """The real model, with every reply it gave kept for the assertions."""

    def __init__(self, model: Any) -> None:
        self.inner = model
        self.replies: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:
        completion = self.inner.complete(messages, **kwargs)
        self.replies.append(
            {
                "call": CALLS.get(kwargs.get("system") or "", "other"),
                "text": completion.text,
                "stop_reason": completion.stop_reason,
                "output_tokens": completion.usage.output_tokens,
                "estimated": completion.usage.estimated_calls,
            }
        )
        return completion


def conductor_turn(history: list[Message]) -> str:
    last = history[-1].content
    if last.startswith("ROUND 1"):
        words = re.findall(r"List: (.+)", last)[-1]
        return f'Expert Python:\n"""\nSort these words: {words}\n"""'
    printed = re.findall(r"stdout:\n```\n(.*?)\n```", last, re.S)
    return f'>> FINAL ANSWER:\n"""\n{printed[-1] if printed else "?"}\n"""'


def python_expert(_name: str, instruction: str) -> str:
    words = instruction.rsplit("Sort these words: ", 1)[-1].split()
    return f"```python\n{PROGRAM.format(words=words)}\n```\nPlease run this code!"


def smollm2(provider: str, llama: LlamaServer) -> Any:
    if provider == "openai":
        return OpenAIModel("smollm2", base_url=llama.openai_url, api_key="unused", max_retries=0)
    return AnthropicModel("smollm2", base_url=llama.root, api_key="unused", max_retries=0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_notebook_learns_with_smollm2_and_keeps_only_keyed_lessons(
    provider: str, llama: LlamaServer, tmp_path: Path, peers_dir: Path
) -> None:
    recorder = Recorder(smollm2(provider, llama))
    book = open_notebook(tmp_path / "nb.db")
    scripted = ScriptedModel(conductor_turn, python_expert)
    sandbox = SubprocessSandbox()
    session = Session(meta_model=scripted, expert_model=scripted, sandbox=sandbox,
                      config=RunConfig(max_rounds=3), runs_path=tmp_path / "runs")  # fmt: skip
    NotebookHooks(book, model=recorder).attach(session)
    predicted_before = llama.metric("tokens_predicted_total")
    runs: list[list[Event]] = []
    on_ledgers = []
    try:
        # Two runs see every call (the second recalls, narrows and induces); the third,
        # over the OpenAI endpoint only, recalls after an induction.
        for words in LISTS if provider == "openai" else LISTS[:2]:
            before = len(recorder.replies)
            runs.append(list(session.solve(SORT + " ".join(words), task="word_sorting",
                                           target=" ".join(sorted(words)))))  # fmt: skip
            assert session.ledger is not None
            ledger = session.ledger.total("recall", "learning")
            # Every call the notebook made for this run is on the run's ledger, and what
            # learning spent is what the run's NotesWritten says it cost.
            assert ledger.calls == len(recorder.replies) - before
            assert _written(runs[-1]).usage == session.ledger.total("learning")
            on_ledgers.append(ledger)
    finally:
        sandbox.close()
    report = {"provider": provider, "replies": recorder.replies}
    (peers_dir / f"notebook-smollm2-{provider}.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))

    # Every run ended and was learned; the reflection said what it did.
    for events in runs:
        assert isinstance(next(e for e in events if isinstance(e, RunFinished)), RunFinished)
        (written,) = [e for e in events if isinstance(e, NotesWritten)]
        assert re.fullmatch(r"ok: \d+ notes|failed: .+", written.reflection), written.reflection
        assert written.outcome == "correct"
    # Usage as the server counted it: exact when no stream was cut short, estimated
    # (and marked so) for a stream the repetition guard stopped.
    stopped = [r for r in recorder.replies if r["stop_reason"].startswith("stopped:")]
    total = sum(on_ledgers, Usage())
    assert total.calls == len(recorder.replies)
    assert total.estimated_calls == len(stopped)
    if not stopped:
        assert llama.metric("tokens_predicted_total") - predicted_before == total.output_tokens

    # Notes from reflection are in the keyed form the parser accepts, and were written
    # by the model, never the prompt's slots.
    reflected = book.read("select kind, key, text from notes where author = 'reflection'")
    replies = "\n".join(r["text"] for r in recorder.replies if r["call"] == "reflection")
    for note in reflected:
        line = f"{note['kind'].upper()} | {note['key']} | {note['text']}"
        (again,) = parse_reflection(line)
        assert (again.kind, again.key, again.text) == (note["kind"], note["key"], note["text"])
        assert note["text"] in " ".join(replies.split())
    said = [_written(r).reflection for r in runs]
    assert len(reflected) <= sum(int(s.split()[1]) for s in said if s.startswith("ok"))
    # Types and their experience hold nothing of the prompt written back, nothing twice.
    for kind in book.read("select name, description, suggestions, procedure from task_types"):
        items = json.loads(kind["suggestions"]) + json.loads(kind["procedure"])
        assert not any(is_placeholder(t) for t in [kind["name"], kind["description"], *items])
        assert len(json.loads(kind["suggestions"])) == len(set(json.loads(kind["suggestions"])))
    # A type choice out of form leaves the lexical match standing: one kind of question,
    # one type, unless the model explicitly said none of the known kinds fits.
    picks = [r["text"] for r in recorder.replies if r["call"] == "type choice"]
    if not any(re.search(r"(?im)^\s*KIND:\s*none", text) for text in picks):
        assert book.read_one("select count(*) as n from task_types")["n"] == 1
    # The recall before the later runs showed notes; a narrowing reply out of form kept
    # the lexical order, the best-tested tool first.
    for events in runs[1:]:
        (recall,) = [e for e in events if isinstance(e, Recall)]
        narrowed = [r["text"] for r in recorder.replies if r["call"] == "narrowing"]
        if not any(re.search(r"(?im)^\s*USE:", text) for text in narrowed):
            assert recall.notes and recall.notes[0]["kind"] == "tool"
    book.close()


def _written(events: list[Event]) -> NotesWritten:
    return next(e for e in events if isinstance(e, NotesWritten))
