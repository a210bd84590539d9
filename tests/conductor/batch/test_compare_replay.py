"""A comparison of all seven methods on GameOf24, word_sorting and
multistep_arithmetic_two, every run answered from the paper's published runs
(`--replay-dir`): the report's figures are those of the published outputs.

The expected figures are computed here from the published files themselves (each
record's `output`, scored by the task's scorer), not from our runs; the full-file run
also meets the paper's Table 1 counts the data README gives.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conductor.cli import main
from conductor.methods import METHODS, PUBLISHED_FOLDERS
from conductor.scoring import score
from conductor.tasks.files import read_task_file
from conductor.tasks.specs import resolve_spec
from conductor_kernel.protocol import parse_final_answer
from conductor_kernel.stats import mcnemar_exact, wilson_interval

TASKS = ("GameOf24", "word_sorting", "multistep_arithmetic_two")
FOLDER = {method: folder for folder, method in PUBLISHED_FOLDERS.items()}
# The paper's rule on the full published files (the data README's Table 1 counts).
PAPER_COUNTS = {
    "GameOf24": (3, 11, 3, 2, 25, 11, 67),
    "word_sorting": (201, 209, 208, 213, 198, 210, 249),
    "multistep_arithmetic_two": (210, 208, 208, 197, 229, 212, 225),
}


def published_verdicts(shared: Path, task: str, method: str, limit: int | None) -> list[bool]:
    """Our scorer's verdict on each published output of `method` on `task`, in order."""
    folder = FOLDER[method]
    base = shared / "transcripts"
    path = base / folder if folder.endswith("-python") else base / "baselines" / folder
    spec = resolve_spec(task, task=task)
    items = read_task_file(path / f"{task}.jsonl").items[:limit]
    verdicts = []
    for item in items:
        output = item.metadata["output"]
        verdicts.append(score(spec, parse_final_answer(output)[0], item, output=output).correct)
    return verdicts


def compare(shared: Path, limit: int | None, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    files = [str(shared / "tasks" / f"{task}.jsonl") for task in TASKS]
    argv = ["batch", *files, "--methods", "all", "--replay-dir", str(shared / "transcripts")]
    argv += ["--no-python", "--concurrency", "4", "--json"]
    if limit:
        argv += ["--limit", str(limit)]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def check(output: dict[str, Any], shared: Path, limit: int | None) -> None:
    suite = output["suite"]
    assert set(suite["tasks"]) == set(TASKS) and suite["methods"] == list(METHODS)
    for report in output["comparisons"]:
        task = report["task"]
        verdicts = {m: published_verdicts(shared, task, m, limit) for m in METHODS}
        n = len(verdicts["meta"])
        assert report["items"]["scored_by_every_method"] == n
        for method in METHODS:
            mine = report["by_method"][method]
            right = sum(verdicts[method])
            assert mine["accuracy"]["correct"] == right and mine["accuracy"]["scored"] == n
            low, high = wilson_interval(right, n)
            assert mine["accuracy"]["wilson95"] == [round(100 * low, 2), round(100 * high, 2)]
            cell = suite["cells"][task][method]
            assert (cell["correct"], cell["scored"]) == (right, n)
            if method == "meta":
                continue
            pair = report["paired"][method]
            ref = verdicts["meta"]
            r2w = sum(1 for a, b in zip(ref, verdicts[method], strict=True) if a and not b)
            w2r = sum(1 for a, b in zip(ref, verdicts[method], strict=True) if b and not a)
            assert (pair["right_to_wrong"], pair["wrong_to_right"]) == (r2w, w2r)
            assert math.isclose(pair["mcnemar_p"], mcnemar_exact(w2r, r2w))
            assert pair["difference_points"] == round(100 * (w2r - r2w) / n, 2)
    for method in METHODS:
        tasks = [suite["cells"][t][method]["percent"] for t in TASKS]
        assert suite["macro_average"][method] == round(sum(tasks) / len(tasks), 2)


def test_all_methods_replayed_on_three_tasks_give_the_published_figures(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check(compare(shared_dir, 15, capsys), shared_dir, 15)


@pytest.mark.slow
def test_the_whole_files_give_table_1(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = compare(shared_dir, None, capsys)
    check(output, shared_dir, None)
    for report in output["comparisons"]:
        paper = tuple(report["by_method"][m]["accuracy"]["paper_rule_correct"] for m in METHODS)
        assert paper == PAPER_COUNTS[report["task"]]
