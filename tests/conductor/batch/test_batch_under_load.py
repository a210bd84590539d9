"""The same accuracy under load: the demo batch of the paper's first 20 word-sorting
items, run in a real sandbox at concurrency 1 on the machine as it is, then at
concurrency 8 while the test loads every core twice over with CPU-burning processes.

Concurrency and load decide only how fast a batch goes, never a grade: the items scored
in both runs are graded alike, and so the accuracy is the same. An item that ends
`error` under load (a sandbox that could not start in time) is the system's failure,
not the model's: it is listed by its cause and counted in no accuracy. Nothing here
asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from batch_support import batch_folder, real_sandbox, results

from conductor.batch.outcomes import SYSTEM_CAUSES
from conductor.cli import main

ITEMS = 20


@contextmanager
def cpu_burners(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` processes spinning on a core each, killed on leaving whatever happened."""
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            burners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        yield burners
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


def run_batch(
    home: Path,
    tasks: Path,
    sandbox: str,
    concurrency: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The batch in a home of its own (so the second run is not a resume of the first):
    its report and its final record per item."""
    monkeypatch.setenv("CONDUCTOR_HOME", str(home))
    args = ["batch", str(tasks), "--task", "word_sorting", "--model", "demo", "--limit", "20"]
    args += ["--sandbox", sandbox, "--no-recall", "--no-learn"]
    code = main([*args, "--concurrency", str(concurrency), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    report = json.loads(out)
    assert code in (0, 3), (code, err)  # every item in scope finished
    final = {r["item_id"]: r for r in results(batch_folder(home)) if r.get("final")}
    assert len(final) == ITEMS and report["items"]["finished"] == ITEMS
    return report, final


def check_errors_are_listed_and_ungraded(
    report: dict[str, Any], final: dict[str, dict[str, Any]]
) -> set[str]:
    """Every `error` item is listed by its cause and left out of accuracy; the items
    graded are the rest. Returns the ids of the graded items."""
    errors = {i for i, r in final.items() if r["status"] == "error"}
    for item in errors:
        assert final[item]["error"]["cause"] in SYSTEM_CAUSES, final[item]
        assert final[item].get("score") is None or not final[item]["score"].get("correct")
    causes: dict[str, int] = {}
    for item in errors:
        causes[final[item]["error"]["cause"]] = causes.get(final[item]["error"]["cause"], 0) + 1
    assert report["errors_by_cause"] == causes
    assert report["failures"]["error"] == len(errors)
    listed = {e["item_id"] for e in report["failure_examples"] if e["kind"] == "error"}
    assert listed == errors
    graded = set(final) - errors
    assert report["accuracy"]["scored"] == len(graded)
    correct = sum(bool((final[i].get("score") or {}).get("correct")) for i in graded)
    assert report["accuracy"]["correct"] == correct
    return graded


@pytest.mark.slow
@pytest.mark.shared
def test_the_demo_batch_grades_alike_at_concurrency_8_on_a_loaded_machine(
    shared_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = shared_dir / "tasks" / "word_sorting.jsonl"
    sandbox = real_sandbox()
    quiet, quiet_final = run_batch(tmp_path / "c1", tasks, sandbox, 1, monkeypatch, capsys)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with cpu_burners(2 * (cores or 1)) as burners:
        loaded, loaded_final = run_batch(tmp_path / "c8", tasks, sandbox, 8, monkeypatch, capsys)
        assert all(b.poll() is None for b in burners)  # the load lasted the whole batch

    with capsys.disabled():  # seen with -s: what each run measured
        for name, report in (("concurrency 1", quiet), ("concurrency 8, loaded", loaded)):
            accuracy = report["accuracy"]
            print(
                f"\n{name}: {accuracy['correct']}/{accuracy['scored']} correct, errors by "
                f"cause {report['errors_by_cause']}, item seconds {report['item_seconds']}"
            )
    assert set(quiet_final) == set(loaded_final)
    # Python was on and its cells really ran in the sandbox.
    assert all(r["sandbox_runs"] >= 1 for r in quiet_final.values() if r["status"] != "error")
    quiet_graded = check_errors_are_listed_and_ungraded(quiet, quiet_final)
    loaded_graded = check_errors_are_listed_and_ungraded(loaded, loaded_final)

    def correctness(final: dict[str, dict[str, Any]], items: set[str]) -> dict[str, bool]:
        return {i: bool((final[i].get("score") or {}).get("correct")) for i in sorted(items)}

    both = quiet_graded & loaded_graded
    assert correctness(quiet_final, both) == correctness(loaded_final, both)
    if quiet_graded == loaded_graded:
        assert quiet["accuracy"] == loaded["accuracy"]
    # The demo sorts words right: an item graded wrong would be a grade the load gave.
    assert all(correctness(loaded_final, loaded_graded).values())
