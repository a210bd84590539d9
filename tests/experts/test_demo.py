"""The offline demo model: right on every shipped item, or a labelled non-answer.

The whole-file test runs both shipped task files through `conductor batch` with the
demo and its real sandbox and scores them with the project's scorers; the rest run
the demo in-process with Python off (no sandbox needed) and check what is learned.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.config import Settings
from conductor.scoring import score
from conductor.session import build_session
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec
from conductor_kernel.events import NotesWritten, RunFinished
from conductor_kernel.limits.run_config import RunConfig
from experts.demo import Game24, Sorting, understand
from support import REPO, skip_or_fail

CONDUCTOR = [str(Path(sys.executable).with_name("conductor"))]


def _offline(python: bool = False, learn: bool = True) -> Settings:
    return Settings(model="demo", recall=False, learn=learn, run=RunConfig(python=python))


def _solve(question: str, settings_: Settings | None = None) -> list:
    session = build_session(settings_ or _offline())
    return list(session.solve(question))


def _finished(events: list) -> RunFinished:
    return next(e for e in events if isinstance(e, RunFinished))


def _items(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sandbox_or_skip() -> None:
    from conductor_kernel.errors import UserFacingError
    from sandbox.registry import resolve_name

    try:
        resolve_name("auto")
    except UserFacingError as exc:
        skip_or_fail(f"no sandbox can run here: {exc}", "CONDUCTOR_REQUIRE_DOCKER")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["GameOf24", "word_sorting"])
def test_demo_scores_every_item_of_the_shipped_file_with_its_sandbox(
    shared_dir: Path, name: str
) -> None:
    _sandbox_or_skip()
    task_file = shared_dir / "tasks" / f"{name}.jsonl"
    out = subprocess.run(
        [*CONDUCTOR, "batch", str(task_file), "--json", "--no-recall", "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    total = len(_items(task_file))
    assert report["items"]["finished"] == total
    assert report["sandbox_runs"] == total  # every answer's code really ran
    assert report["accuracy"]["correct"] == total, report["failure_examples"]


@pytest.mark.parametrize("name", ["GameOf24", "word_sorting"])
def test_demo_without_python_is_right_on_every_item(shared_dir: Path, name: str) -> None:
    spec = get_spec(name)
    session = build_session(_offline(python=False, learn=False))
    wrong = []
    for number, row in enumerate(_items(shared_dir / "tasks" / f"{name}.jsonl"), start=1):
        item = TaskItem(id=str(number), input=row["input"], target=row.get("target"), line=number)
        finished = _finished(list(session.solve(spec.prompt(row["input"]))))
        result = score(spec, finished.final_answer, item, with_paper=False)
        if finished.status != "answered" or not result.correct:
            wrong.append((number, finished.status, finished.final_answer, result.detail))
    assert wrong == []


def test_word_sorting_in_the_datas_format_leaves_out_the_label() -> None:
    q = "Sort the following words alphabetically: List: thrill splutter panicking scorch same"
    finished = _finished(_solve(q))
    assert finished.final_answer == "panicking same scorch splutter thrill"


def test_word_sorting_keeps_digits_ampersands_hyphens_and_apostrophes() -> None:
    finished = _finished(_solve("Sort these words: b2 a1 c-3 it&t o'neil"))
    assert finished.final_answer == "a1 b2 c-3 it&t o'neil"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.characters(
                whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="&-'."
            ),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=12,
    )
)
def test_any_word_list_is_sorted_exactly(words: list[str]) -> None:
    question = "Sort the following words alphabetically: List: " + " ".join(words)
    finished = _finished(_solve(question, _offline(learn=False)))
    assert finished.status == "answered"
    assert finished.final_answer == " ".join(sorted(words))


def test_game24_without_python_gives_an_expression_not_no_solution() -> None:
    finished = _finished(_solve("Use 4 5 6 10 to make 24"))
    assert finished.status == "answered"
    assert finished.final_answer not in (None, "no solution")
    verdict = score(
        "game24", finished.final_answer, TaskItem(id="1", input="4 5 6 10", target=None, line=1)
    )
    assert verdict.correct


@pytest.mark.parametrize(
    "question",
    [
        "",
        "   \n ",
        "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. How many are left?",
        "What is 2 + 3 + 4 + 5?",
        "Write a sonnet about the sea.",
    ],
)
def test_what_the_demo_cannot_do_is_a_labelled_non_answer_never_learned(question: str) -> None:
    events = _solve(question)
    finished = _finished(events)
    assert finished.status == "declined"
    assert finished.final_answer is None
    assert not [e for e in events if isinstance(e, NotesWritten)]
    from lessons.storage.stats import collect
    from lessons.storage.store import Notebook

    with Notebook() as book:
        counts = collect(book)
    assert counts["runs_learned"] == 0
    assert counts["notes"] == 0


def test_understand_reads_the_task_files_and_plain_phrasings() -> None:
    spec = get_spec("GameOf24")
    assert understand(spec.prompt("1 2 24 24")) == Game24((1, 2, 24, 24))
    assert understand("Use 1 3 4 6 to make 24") == Game24((1, 3, 4, 6))
    assert understand("make 24 from 2, 3, 4 and 5") == Game24((2, 3, 4, 5))
    sort_spec = get_spec("word_sorting")
    assert understand(sort_spec.prompt("Sort the following words alphabetically: List: b a")) == (
        Sorting(("b", "a"))
    )
    assert understand("How many legs do 4 cats, 5 dogs, 6 ants and 10 birds have?") is None


def test_the_demo_keeps_only_its_latest_requests() -> None:
    """A batch of thousands of items calls the demo thousands of times: it keeps the
    last few requests, not all (about 50 KB an item before)."""
    from conductor_kernel.interfaces import Message
    from experts.demo import DEMO_KEEPS, demo_model

    model = demo_model()
    for n in range(DEMO_KEEPS * 3):
        model.complete([Message("user", f"Use {n} 1 1 1 to make 24")], role="meta")
    assert len(model.requests) == DEMO_KEEPS
    assert "Use 47 1 1 1" in model.requests[-1][2][0].content


def test_a_recalled_program_is_not_called_checked_before_this_run_checks_it() -> None:
    """Recall says a program can be run on the puzzle as it is, not that it was checked
    on it: the demo's turn says what it knows, then runs the check (issue 36, item 13)."""
    from experts.demo import _run_recalled

    turn = _run_recalled("n1a2b", "print('(1+2+3)*4')", (1, 2, 3, 4))
    said = turn.split("Expert Python:")[0]
    assert "[n1a2b]" in said and "earlier run" in said
    assert "checked" not in said.lower() and "exactly this" not in said
    assert "check what it prints in the same run" in said


@pytest.mark.parametrize(
    "method", ["standard", "zero-shot-cot", "expert-static", "expert-dynamic", "multipersona"]
)
def test_a_baseline_run_is_declined_for_what_the_demo_is_not(
    method: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo conducts; asked as a baseline it says so, not a reason from a session it
    never held ("the expert gave no expression" for a Standard prompt)."""
    from conductor.cli import main
    from experts.demo import BASELINES_NEED_A_MODEL

    code = main(["solve", "Use 4 5 6 10 to make 24", "--method", method, "--json",
                 "--model", "demo", "--sandbox", "subprocess"])  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["status"] == "declined"
    assert BASELINES_NEED_A_MODEL in result["reason"] and "expert gave" not in result["reason"]


def test_meta_prompting_with_the_demo_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    from conductor.cli import main

    for method in ("meta", "meta-no-python"):
        code = main(["solve", "Use 4 5 6 10 to make 24", "--method", method, "--json",
                     "--model", "demo", "--sandbox", "subprocess"])  # fmt: skip
        assert code == 0, method
        assert json.loads(capsys.readouterr().out)["status"] == "answered"
