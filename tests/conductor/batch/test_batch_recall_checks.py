"""A batch item's recall checks a fitting tool on its question, as `solve`'s does: the
recall a batch shares between its items is rebound to each item's sandboxes (it was
built on a template session without one, so no batch ever checked a tool), and the
checked answer reaches the run's `Recall` event."""

from __future__ import annotations

from pathlib import Path

from conductor.batch.setup import live_setup
from conductor.config import load_settings
from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.session.notebook_hooks import NotebookHooks
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec
from conductor_kernel.events import Recall
from conductor_kernel.limits.run_config import RunConfig
from experts.demo import demo_model
from lessons.read.render import CHECKED_HERE
from sandbox.subprocess_backend import SubprocessSandbox


def _learned_notebook(path: Path, runs: Path) -> None:
    """A notebook holding the Game of 24 tool the demo's first puzzle leaves."""
    model, book = demo_model(), open_notebook(path)
    session = Session(
        meta_model=model,
        expert_model=model,
        sandbox=SubprocessSandbox(),
        config=RunConfig(max_rounds=6, python_timeout_s=30),
        runs_path=runs,
    )
    NotebookHooks(book, model=model).attach(session, recall=False)
    with session:
        question = get_spec("GameOf24").prompt("4 6 3 1")
        assert session.run(question, task="GameOf24", target="24").answer
    book.close()


def test_a_batch_items_recall_checks_the_tool_on_its_question(
    tmp_path: Path, isolated_home: Path
) -> None:
    notebook = tmp_path / "nb.db"
    _learned_notebook(notebook, tmp_path / "learn-runs")
    overrides = {
        "model": "demo",
        "sandbox": "subprocess",
        "notebook": str(notebook),
        "learn": False,
        "run": {"max_rounds": 6, "python_timeout_s": 30},
    }
    spec = get_spec("GameOf24")
    setup = live_setup(load_settings(overrides), spec, lambda: tmp_path / "runs")
    item = TaskItem(id="a", input="4 5 6 10")
    with setup.make_session(item) as session:
        events = list(session.solve(setup.question(item)))
    [recall] = [e for e in events if isinstance(e, Recall)]
    [checked] = recall.checked
    assert checked["code"] and checked["answer"]
    assert CHECKED_HERE.split(":")[0] in recall.rendered
    assert session.last.answer is not None
