"""A comparison of every method on three tasks against llama-server with SmolLM2-135M.

Two items of each task under all seven methods, short outputs, two rounds: SmolLM2
cannot do these tasks, so the accuracies will be near zero; what is under test is the
whole path with a real server. Every method's every run is recorded (a transcript with
its start and end, a runs.db row under its method), scored, and reported in its task's
comparison and in the suite's table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, spec
from servers import LlamaServer

from conductor.methods import METHODS
from record.reader import read_transcript
from transcripts.index import RunIndex

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

TASKS = {
    "GameOf24": [("4 5 6 10", "24"), ("1 2 3 4", "24")],
    "word_sorting": [
        ("Sort the following words alphabetically: List: pear apple fig", "apple fig pear"),
        ("Sort the following words alphabetically: List: kiwi date", "date kiwi"),
    ],
    "multistep_arithmetic_two": [("((2 + 3) * (4 - 1)) =", "15"), ("((6 - 1) + (2 * 2)) =", "9")],
}


def test_every_method_runs_scored_and_reported_against_smollm2(
    llama: LlamaServer, tmp_path: Path, isolated_home: Path
) -> None:
    files = []
    for task, items in TASKS.items():
        path = tmp_path / f"{task}.jsonl"
        path.write_text(
            "".join(json.dumps({"input": q, "target": t}) + "\n" for q, t in items),
            encoding="utf-8",
        )
        files.append(str(path))
    proc = run_cli(
        "batch", *files, "--methods", "all", "--model", spec("openai", "smollm2", llama),
        "--max-rounds", "2", "--sandbox", "subprocess", "--concurrency", "2", "--json",
        timeout=1200,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # 0 when every method had an answer graded; 3 (as a plain batch's) when some method
    # had none: a tiny model often hits the rounds limit, and its figures measure nothing.
    unmeasured = [
        method
        for report in out["comparisons"]
        for method, figures in report["by_method"].items()
        if figures["not_measured"]
    ]
    assert proc.returncode == (3 if unmeasured else 0), proc.stderr[-3000:]
    print(json.dumps(out["suite"], indent=1))

    suite = out["suite"]
    assert set(suite["tasks"]) == set(TASKS) and suite["methods"] == list(METHODS)
    index = RunIndex()
    for report in out["comparisons"]:
        assert report["methods"] == list(METHODS) and "smollm2" in report["model"]
        assert report["items"]["pairs_finished"] == report["items"]["pairs"] == 14
        assert report["notebook"]["recall"] is False and report["notebook"]["learn"] is False
        for method in METHODS:
            figures = report["by_method"][method]
            assert figures["items"]["finished"] == 2 and figures["failures"]["error"] == 0
            acc = figures["accuracy"]
            assert acc["scored"] == 2 and 0 <= acc["correct"] <= 2  # no answer is wrong
            assert figures["tokens"]["input"] > 0 and figures["tokens"]["output"] > 0
            calls = 2 if method == "expert-dynamic" else 1
            assert figures["tokens"]["model_calls"] >= 2 * calls
            cell = suite["cells"][report["task"]][method]
            assert (cell["correct"], cell["scored"]) == (acc["correct"], 2)
            if method != "meta":
                pair = report["paired"][method]
                if figures["not_measured"] or report["by_method"]["meta"]["not_measured"]:
                    # Nothing graded on one side: no test, and the reason instead.
                    assert pair["mcnemar_p"] is None and pair["not_measured"]
                else:
                    assert pair["items"] == 2 and 0 < pair["mcnemar_p"] <= 1
        # Every run is recorded under its method, start to end, and indexed.
        folder = Path(report["folder"])
        finals = [
            json.loads(line)
            for line in (folder / "results.jsonl").read_text().splitlines()
            if json.loads(line)["final"]
        ]
        assert sorted(r["method"] for r in finals) == sorted(METHODS * 2)
        for record in finals:
            assert record["score"] is not None and record["score"]["scored"]
            transcript = read_transcript(folder / record["transcript"])
            assert transcript.started is not None and transcript.finished is not None
            assert transcript.started.method == record["method"]
            assert transcript.finished.status in ("answered", "no_answer", "limit")
            row = index.get(record["run_id"])
            assert row is not None and row["method"] == record["method"]
            assert row["status"] == transcript.finished.status
        assert (folder / "report.md").read_text().count(" | ") > 50
