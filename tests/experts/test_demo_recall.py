"""Recall that pays, on the demo (issue 25): with learning on, the second Game of 24
puzzle of a kind is answered by running the program the first one left (the recall says
it can be run as it is), in fewer rounds and fewer tokens, and its answer is still
checked correct by the task's scorer. Learning off, every puzzle costs the same.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks, open_notebook
from conductor_kernel.events import Event, Recall, RunFinished, RunScored
from conductor_kernel.limits.run_config import RunConfig
from experts.demo import demo_model, game24_solutions, recalled_program
from sandbox.subprocess_backend import SubprocessSandbox

NUMBER = st.integers(1, 13)
SOLVABLE = st.tuples(NUMBER, NUMBER, NUMBER, NUMBER).filter(
    lambda ns: next(game24_solutions(ns), None) is not None
)


def _solve(session: Session, numbers: tuple[int, ...]) -> list[Event]:
    return list(session.solve("Use {} {} {} {} to make 24".format(*numbers)))


def _outcome(events: list[Event]) -> tuple[int, int, bool]:
    finished = next(e for e in events if isinstance(e, RunFinished))
    scored = next(e for e in events if isinstance(e, RunScored))
    assert finished.status == "answered", finished
    return finished.rounds, finished.usage.total_tokens, bool(scored.correct)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=SOLVABLE, second=SOLVABLE)
def test_the_second_puzzle_of_a_kind_costs_less_and_is_still_right(
    first: tuple[int, ...], second: tuple[int, ...]
) -> None:
    model = demo_model()
    sandbox = SubprocessSandbox()
    with tempfile.TemporaryDirectory() as folder:
        book = open_notebook(Path(folder) / "nb.db")
        session = Session(
            meta_model=model,
            expert_model=model,
            sandbox=sandbox,
            config=RunConfig(max_rounds=6, python_timeout_s=30),
            runs_path=Path(folder) / "runs",
        )
        NotebookHooks(book, model=model).attach(session)
        try:
            rounds_1, tokens_1, right_1 = _outcome(_solve(session, first))
            events = _solve(session, second)
            rounds_2, tokens_2, right_2 = _outcome(events)
        finally:
            sandbox.close()
            book.close()
    recall = next(e for e in events if isinstance(e, Recall))
    assert recalled_program(recall.rendered + "\n\nQuestion:\n") is not None
    assert right_1 and right_2
    assert rounds_2 < rounds_1 and tokens_2 < tokens_1


def test_without_learning_the_second_puzzle_costs_what_the_first_did(tmp_path: Path) -> None:
    model = demo_model()
    sandbox = SubprocessSandbox()
    session = Session(
        meta_model=model,
        expert_model=model,
        sandbox=sandbox,
        config=RunConfig(max_rounds=6, python_timeout_s=30),
        runs_path=tmp_path / "runs",
    )
    try:
        first = _outcome(_solve(session, (4, 5, 6, 10)))
        second = _outcome(_solve(session, (1, 2, 3, 4)))
    finally:
        sandbox.close()
    assert first[0] == second[0] == 3 and first[2] and second[2]


def test_a_recalled_program_that_fails_its_check_falls_back_to_a_new_search(
    tmp_path: Path,
) -> None:
    """A recall whose program prints a wrong expression: the check in the same run says
    so, and the usual search and check follow, a round later."""
    model = demo_model()
    sandbox = SubprocessSandbox()
    wrong = (
        "[n0123456789a] tool · checked: the task's scorer checked it · helped 0, hurt 0\n"
        "  YOU CAN RUN IT: this program fits your question as asked.\n"
        "```python\nprint('1 + 2 + 3 + 4')\n```"
    )
    session = Session(
        meta_model=model,
        expert_model=model,
        sandbox=sandbox,
        config=RunConfig(max_rounds=6, python_timeout_s=30),
        runs_path=tmp_path / "runs",
        recall=lambda question, ledger=None: Recall(notes=[], rendered=wrong, tokens=40),
    )
    try:
        rounds, _tokens, right = _outcome(_solve(session, (4, 5, 6, 10)))
    finally:
        sandbox.close()
    assert right and rounds == 4
