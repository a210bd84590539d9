"""Learning that pays for itself (issue 25): its model calls are bounded per run (by
default never more calls or tokens than the run used), made only when there is
something to learn from (an expert, a program, a check), and reported with their cost.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import run_events

from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel.events import Event, NotesWritten, RunFinished
from conductor_kernel.interfaces import Completion, Message, Usage
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.text.tokens import estimate_tokens
from experts.scripted import ScriptedModel
from lessons.write.learn import LearnOptions, learn_from_run

REFLECTION = "INSIGHT: check the sum of every column before answering.\n" * 4


class OnlineModel:
    """A model that counts as a real one (the notebook asks it to reflect, pick a type
    and induce) and reports honest usage: its prompt, and a reply within `max_tokens`."""

    name = "counting"
    offline = False

    def __init__(self, reply: str = REFLECTION) -> None:
        self.reply = reply
        self.calls = 0
        self.tokens = 0

    def complete(
        self, messages: list[Message], *, system: str | None = None, **kw: object
    ) -> Completion:
        limit = kw.get("max_tokens")
        text = self.reply
        while isinstance(limit, int) and estimate_tokens(text) > limit and text:
            text = text[: len(text) // 2]
        prompt = estimate_tokens((system or "") + "".join(m.content for m in messages))
        usage = Usage(input_tokens=prompt, output_tokens=estimate_tokens(text), calls=1)
        self.calls += 1
        self.tokens += usage.total_tokens
        return Completion(text=text, usage=usage, model=self.name)


def _with_usage(events: list[Event], rounds: int, tokens: int) -> list[Event]:
    """The run's `RunFinished` with what the run itself spent."""
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    experts = sum(1 for e in events if e.kind == "expert_call_started")
    finished.rounds = rounds
    finished.expert_calls = experts
    finished.usage = Usage(
        input_tokens=tokens - tokens // 4, output_tokens=tokens // 4, calls=rounds + experts
    )
    return events


def test_a_run_with_nothing_to_learn_from_makes_no_learning_call(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    model = OnlineModel()
    events = _with_usage(run_events("r1", "What is six times seven?", "42"), 1, 5_000)
    written = learn_from_run(book, events, model=model)  # type: ignore[arg-type]
    assert written is not None and model.calls == 0
    assert written.reflection.startswith("skipped: nothing to learn from")
    # The same run with an expert call has something to learn from.
    events = _with_usage(
        run_events("r2", "What is six times eight?", "48", experts=("Expert Mathematician",)),
        2,
        5_000,
    )
    written = learn_from_run(book, events, model=model)  # type: ignore[arg-type]
    assert written is not None and model.calls >= 1 and written.budget["calls"] == 3
    book.close()


def test_a_scripted_session_without_experts_or_code_learns_for_free(tmp_path: Path) -> None:
    model = ScriptedModel(['>> FINAL ANSWER:\n"""\n42\n"""'], None, name="scripted-online")
    model.offline = False  # type: ignore[attr-defined]  # a real model as far as learning knows
    session = Session(
        meta_model=model,
        expert_model=model,
        config=RunConfig(max_rounds=3),
        runs_path=tmp_path / "runs",
    )
    NotebookHooks(open_notebook(tmp_path / "nb.db"), model=model).attach(session, recall=False)
    events = list(session.solve("What is six times seven?"))
    written = [e for e in events if isinstance(e, NotesWritten)]
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.usage.calls == 1 and len(written) == 1
    assert written[0].usage.calls == 0 and written[0].usage.total_tokens == 0
    assert len(model.requests) == 1  # the run's own turn, and nothing after it


@st.composite
def runs(draw: st.DrawFn) -> list[tuple[list[Event], int, int]]:
    """Finished runs of one kind: experts, a program, a target, each or not, and what
    the run itself spent (calls, tokens)."""
    out = []
    for i in range(draw(st.integers(1, 6))):
        a, b = draw(st.integers(2, 99)), draw(st.integers(2, 99))
        experts = tuple(draw(st.lists(st.sampled_from(["Expert Mathematician",
                                                         "Expert Checker"]), max_size=3)))  # fmt: skip
        code = draw(st.booleans())
        events = run_events(
            f"r{i}",
            f"A shop sells {a} boxes of {b} pens. How many pens does it sell?",
            str(a * b),
            target=str(a * b) if draw(st.booleans()) else None,
            code=f"print({a} * {b})" if code else None,
            experts=experts,
            expert_replies=tuple(f"Answer: {a * b}" for _ in experts),
        )
        rounds = draw(st.integers(1, 5))
        tokens = draw(st.integers(0, 6_000))
        out.append((_with_usage(events, rounds, tokens), rounds + len(experts) + code, tokens))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=runs(), share=st.sampled_from([1.0, 0.5]))
def test_learning_never_spends_more_than_its_share_of_the_run(
    generated: list[tuple[list[Event], int, int]], share: float
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        book = open_notebook(Path(folder) / "nb.db")
        options = LearnOptions(induction_every=1, model_share=share)  # induction each run
        for events, calls, tokens in generated:
            model = OnlineModel()
            written = learn_from_run(book, events, model=model, options=options)  # type: ignore[arg-type]
            assert written is not None
            assert model.calls <= int(calls * share)
            assert model.tokens <= int(tokens * share)
        book.close()


def test_without_a_bound_learning_asks_what_it_always_did(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    model = OnlineModel()
    events = _with_usage(
        run_events("r1", "What is 6 * 7?", "42", experts=("Expert Mathematician",)), 1, 0
    )
    bounded = learn_from_run(book, events, model=model)  # type: ignore[arg-type]
    assert bounded is not None and model.calls == 0  # a run that spent no tokens
    assert bounded.reflection.startswith("skipped: learning's budget")
    events = _with_usage(
        run_events("r2", "What is 6 * 9?", "54", experts=("Expert Mathematician",)), 1, 0
    )
    free = learn_from_run(book, events, model=model, options=LearnOptions(model_share=None))  # type: ignore[arg-type]
    assert free is not None and model.calls >= 2 and free.budget == {}
    book.close()


@given(
    calls=st.integers(0, 9),
    tokens=st.integers(0, 10**6),
    cost=st.floats(0, 5, allow_nan=False),
    bound=st.one_of(st.just({}), st.fixed_dictionaries({"calls": st.integers(0, 9),
                                                         "tokens": st.integers(0, 10**6)})),
)  # fmt: skip
def test_the_runs_summary_shows_what_learning_cost_and_was_allowed(
    calls: int, tokens: int, cost: float, bound: dict[str, int]
) -> None:
    from rich.console import Console

    from conductor.export.markdown import _md
    from conductor.export.terminal import RENDERERS

    usage = Usage(input_tokens=tokens, calls=calls, cost_usd=cost)
    event = NotesWritten(run_id="r", note_ids=["n1"], usage=usage, budget=bound)
    console = Console(width=400, record=True)
    console.print(RENDERERS[NotesWritten](event))
    shown = console.export_text()
    markdown = _md(event) or ""
    if calls or bound:
        said = f"learning: {calls} model call{'' if calls == 1 else 's'}, {tokens:,} tokens, ${cost:.4f}"
        assert said in shown and said in markdown
        if bound:
            assert f"{bound['tokens']:,} tokens)" in shown
    else:
        assert "learning:" not in shown and "learning:" not in markdown
