"""A comparison says what it measured: a method none of whose answers was graded gets
no interval, no Δ and no test but the plain batch's diagnosis; the terminal table fits
80 columns, one line per method; the progress line shows each method's accuracy so far;
`conductor score` of a comparison folder gives one row per method."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from batch_support import BATCH_FLAGS, answer, item_number, numbered_tasks
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.batch.compare import Comparison, pair_id
from conductor.batch.compare_report import comparison_report
from conductor.batch.compare_text import MethodTally, terminal_text
from conductor.batch.records import ItemRecord, Tally
from conductor.batch.session import NOTHING_SCORED
from conductor.cli import main
from conductor.cli.progress import Progress
from conductor.methods import METHODS, label
from conductor.methods import prompts as method_prompts
from conductor.tasks.files import TaskItem
from equipment.wire_server import WireServer

OFFLINE = ["--no-recall", "--no-learn"]
METHODS_RUN = "standard,zero-shot-cot,meta"


def method_of(body: dict[str, Any]) -> str:
    """Which of the three methods (or meta's expert) a request came from."""
    messages = body.get("messages") or []
    system = messages[0].get("content", "") if messages else ""
    first = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    if str(system).startswith("You are Expert"):
        return "meta:expert"
    if "You are the Conductor" in first:
        return "meta"
    return "zero-shot-cot" if method_prompts.STEP_BY_STEP in first else "standard"


def responder(body: dict[str, Any]) -> str:
    """Standard never follows the answer format; zero-shot-cot answers odd items wrong;
    meta consults an expert, then answers right."""
    n, method = item_number(body), method_of(body)
    turns = sum(m.get("role") == "assistant" for m in body.get("messages") or [])
    if method == "meta:expert":
        return f"Checked item {n}."
    if method == "meta":
        return answer(str(2 * n)) if turns else f'Expert Checker:\n"""\nDouble item {n}.\n"""'
    if method == "zero-shot-cot":
        return answer(str(2 * n + n % 2))
    return f"It is surely {2 * n}, I would say."


@pytest.fixture
def comparison(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> tuple[int, dict[str, Any], str]:
    """A comparison of three methods over four items: exit code, report, printed text."""
    with WireServer(responder=responder) as wire:
        monkeypatch.setenv("OPENAI_BASE_URL", wire.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("COLUMNS", "80")
        tasks = numbered_tasks(tmp_path / "tasks.jsonl", 4)
        code = main(["batch", str(tasks), *BATCH_FLAGS, *OFFLINE, "--methods", METHODS_RUN])
    printed = capsys.readouterr().out
    folder = next((isolated_home / "batches").glob("*-compare-*"))
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return code, report, printed


@pytest.mark.slow
def test_a_method_with_no_graded_answer_says_why_instead_of_statistics(
    comparison: tuple[int, dict[str, Any], str],
) -> None:
    code, report, printed = comparison
    # Every run finished, but one method measured nothing: as a plain batch, exit 3.
    assert code == NOTHING_SCORED
    standard = report["by_method"]["standard"]
    assert standard["accuracy"]["answers_scored"] == 0
    assert standard["accuracy"]["wilson95"] is None
    why = standard["not_measured"]
    assert why == standard["diagnosis"] and "4 of 4 finished items" in why
    assert "hit a limit" in why and "--max-rounds" in why  # the plain batch's words
    pair = report["paired"]["standard"]
    assert pair["difference_points"] is None and pair["mcnemar_p"] is None
    assert pair["ci95_points"] is None and "Standard" in pair["not_measured"]
    assert "Standard" in report["diagnosis"]
    # The methods that answered keep their figures.
    cot = report["by_method"]["zero-shot-cot"]
    assert cot["not_measured"] is None and cot["accuracy"]["wilson95"] is not None
    assert report["paired"]["zero-shot-cot"]["difference_points"] == -50.0
    # The terminal: 80 columns, one line per method, Standard's row has no figures.
    lines = printed.splitlines()
    assert all(len(line) <= 80 for line in lines)
    rows = {
        m: [ln for ln in lines if ln.startswith(label(m) + " ")] for m in METHODS_RUN.split(",")
    }
    assert all(len(found) == 1 for found in rows.values()), rows
    assert "not measured" in rows["standard"][0] and "[" not in rows["standard"][0]
    assert "50.0%" in rows["zero-shot-cot"][0] and "-50.0" in rows["zero-shot-cot"][0]
    assert "--max-rounds" in printed
    # The markdown report and the HTML page say it too.
    folder = Path(report["folder"])
    assert "## Not measured" in (folder / "report.md").read_text(encoding="utf-8")
    assert main(["batch-report", report["batch_id"], "--html"]) == 0
    page = (folder / "html" / "index.html").read_text(encoding="utf-8")
    assert 'id="not-measured"' in page and "--max-rounds" in page


@pytest.mark.slow
def test_score_of_a_comparison_folder_gives_one_row_per_method(
    comparison: tuple[int, dict[str, Any], str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, report, _ = comparison
    assert main(["score", report["folder"], "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["method"] for r in rows] == [m for m in METHODS if m in report["methods"]]
    for row in rows:
        figures = report["by_method"][row["method"]]["accuracy"]
        assert (row["n"], row["ours_correct"]) == (figures["scored"], figures["correct"])


def record(item: str, method: str, status: str, right: bool, final: bool) -> ItemRecord:
    graded = status in ("answered", "declined", "no_answer", "limit")
    return {
        "item_id": pair_id(item, method),
        "task_item_id": item,
        "method": method,
        "final": final,
        "status": status,
        "answer": "4" if status == "answered" else None,
        "score": {"scored": True, "correct": right and status == "answered"} if graded else None,
        "usage": {"calls": 1, "input_tokens": 10, "output_tokens": 5},
        "rounds": 1,
        "duration_s": 0.1,
    }


STATUSES = st.sampled_from(["answered", "declined", "no_answer", "limit", "error"])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    methods=st.lists(st.sampled_from(METHODS), min_size=1, unique=True),
    n_items=st.integers(1, 300),
    outcomes=st.data(),
)
def test_generated_comparisons_measure_only_graded_answers_and_fit_80_columns(
    methods: list[str], n_items: int, outcomes: st.DataObject
) -> None:
    items = [TaskItem(f"i{n}", str(n), "4", line=n + 1) for n in range(n_items)]
    # Each method ends one way on most items, so all-declined methods come up often.
    latest: dict[str, ItemRecord] = {}
    for method in methods:
        usual = outcomes.draw(STATUSES)
        for item in items:
            status = usual if outcomes.draw(st.integers(0, 9)) else outcomes.draw(STATUSES)
            right = outcomes.draw(st.booleans())
            latest[pair_id(item.id, method)] = record(item.id, method, status, right, True)
    header = {"batch_id": "T-compare-0", "task": "T" * 40, "model": "m", "folder": "/x" * 50}
    report = comparison_report(Comparison.of(items, methods), latest, header=header)
    so_far = MethodTally(methods)
    so_far.seed(latest.values())
    shown = so_far.text()
    for method in methods:
        figures = report["by_method"][method]
        answered = figures["accuracy"]["answers_scored"] > 0
        assert (figures["not_measured"] is None) == answered
        assert (figures["accuracy"]["wilson95"] is not None) == answered
        assert f"{label(method)} -" in shown or answered
        pair = report["paired"].get(method)
        if pair is not None:
            both = answered and report["by_method"]["meta"]["not_measured"] is None
            assert (pair["mcnemar_p"] is not None) == both
            assert (pair["difference_points"] is not None) == both
    text = terminal_text(report, width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    for method in methods:
        assert sum(line.startswith(label(method) + " ") for line in text.splitlines()) == 1


def test_the_progress_line_shows_each_methods_accuracy_so_far() -> None:
    from rich.console import Console
    from rich.text import Text

    so_far = MethodTally(["standard", "meta"])

    def by_method(rec: ItemRecord | None) -> str:
        if rec is not None:
            so_far.add(rec)
        return so_far.text()

    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    progress = Progress(enabled=True, console=console, by_method=by_method)
    tally = Tally(total=4)
    with progress.shown(tally) as bar:
        for rec in (
            record("a", "standard", "declined", False, True),
            record("a", "meta", "answered", True, True),
            record("b", "meta", "answered", False, True),
        ):
            tally.add(rec)
            progress.update(rec, tally)
        lines = [str(r) for r in bar.get_renderables() if isinstance(r, Text)]
        columns = [getattr(c, "text_format", "") for c in bar.columns]
    assert lines == ["accuracy so far: Standard -, Meta + Python 50%"]
    assert not any("acc" in str(c) for c in columns)  # no pooled accuracy of the methods


def test_accuracy_so_far_takes_records_from_every_worker_at_once() -> None:
    # The batch's workers report records concurrently while the progress line is drawn
    # (a "dictionary changed size during iteration" once ended a worker thread).
    import threading

    from conductor.batch.compare_text import MethodTally

    so_far = MethodTally(["standard", "meta"])
    failures: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(300):
                so_far.add(
                    {"item_id": f"{n}-{i}", "method": "meta", "final": True,
                     "status": "answered", "score": {"correct": True, "scored": True}}  # type: ignore[typeddict-item]
                )  # fmt: skip
                so_far.text()
        except BaseException as exc:  # any failure of a worker is the finding
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert so_far.counts()["meta"][1] == 8 * 300
