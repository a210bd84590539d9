"""The batch runner resumes: after a kill -9 (a real subprocess), after a stop, after an
interrupted item and after a line torn by a crash; the batch id that finds the folder again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from batch_support import (
    BATCH_FLAGS,
    ITEM,
    OFFLINE,
    answer,
    batch_folder,
    consult_then_answer,
    item_number,
    numbered_tasks,
    plan_for,
    results,
)

from conductor.batch.report import summarize
from conductor.batch.runner import BatchRunner
from conductor.batch.store import ResultsLog, batch_id
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor_kernel.interfaces import Completion, Message
from conductor_kernel.limits.run_config import RunConfig
from equipment.wire_server import WireServer
from experts.scripted import ScriptedModel

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_kill_9_mid_batch_then_rerun_finishes_without_repeating_finished_items(
    tmp_path: Path, isolated_home: Path
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 12)
    command = [sys.executable, "-m", "conductor.cli", "batch", str(tasks), *BATCH_FLAGS]
    command += [*OFFLINE, "--concurrency", "3", "--json"]
    with WireServer(responder=consult_then_answer, latency_s=0.3) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.openai_url, "OPENAI_API_KEY": "k"}
        first = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        results_file = isolated_home / "batches"
        deadline = time.monotonic() + 120
        finished: list[dict[str, Any]] = []
        while time.monotonic() < deadline and first.poll() is None:
            found = list(results_file.glob("*/results.jsonl"))
            finished = [r for r in results(found[0].parent) if r["final"]] if found else []
            if len(finished) >= 4:
                break
            time.sleep(0.02)
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = len(server.requests)
        folder = batch_folder(isolated_home)
        done_before = {r["item_id"] for r in results(folder) if r["final"]}
        assert 4 <= len(done_before) < 12

        second = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
        assert second.returncode == 0, second.stderr
        asked_after = {f"i{item_number(r.body):02d}" for r in server.requests[killed_at:]}

    assert not done_before & asked_after  # no finished item ran again
    finals = Counter(r["item_id"] for r in results(folder) if r["final"])
    assert sorted(finals) == [f"i{n:02d}" for n in range(12)]
    assert set(finals.values()) == {1}
    report = json.loads(second.stdout.strip().splitlines()[-1])
    assert report["items"] == {
        "total": 12,
        "finished": 12,
        "remaining": 0,
        "scored": 12,
        "unscored": 0,
    }
    assert report["accuracy"]["percent"] == 100.0
    assert report["session"]["ran"] == 12 - len(done_before)


def scripted_sessions(tmp_path: Path, **config: Any) -> tuple[ScriptedModel, Any]:
    def meta(messages: list[Message]) -> str:
        n = int(ITEM.search(messages[0].content).group(1))  # type: ignore[union-attr]
        return answer(str(2 * n))

    model = ScriptedModel(meta)

    def make(item: TaskItem) -> Session:
        cfg = RunConfig(python=False, **config)
        return Session(model, model, None, cfg, runs_path=tmp_path / "batch" / "runs")

    return model, make


def test_a_stopped_batch_resumes_and_reruns_only_unfinished_items(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, 10)
    model, make = scripted_sessions(tmp_path)
    runner = BatchRunner(plan, make, concurrency=1)
    runner.on_record = lambda record, tally: tally.done >= 4 and runner.stop("test stop")
    outcome = runner.run()
    assert outcome.stopped == "test stop" and outcome.finished == 4
    asked_first = len(model.requests)

    again = BatchRunner(plan, make, concurrency=3)
    assert [i.id for i in again.pending()] == [f"i{n:02d}" for n in range(4, 10)]
    outcome = again.run()
    assert outcome.ran == 6 and outcome.stopped is None
    questions = [r[2][0].content for r in model.requests[asked_first:]]
    assert not any(f"item {n}." in q for q in questions for n in range(4))
    latest = again.log.read()
    assert all(latest[f"i{n:02d}"]["score"]["correct"] for n in range(10))
    assert again.tally.done == 10 and again.tally.accuracy == 100.0


def test_an_interrupted_item_is_recorded_non_final_and_runs_again(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, 3)
    started = threading.Event()

    class Slow(ScriptedModel):
        def complete(self, messages: list[Message], **kw: Any) -> Completion:
            started.set()
            time.sleep(0.5)
            return super().complete(messages, **kw)

    model = Slow(lambda messages: answer("0"))

    def make(item: TaskItem) -> Session:
        return Session(model, model, None, RunConfig(python=False), runs_path=tmp_path / "runs")

    runner = BatchRunner(plan, make, concurrency=1)
    threading.Thread(target=lambda: started.wait(5) and runner.stop("Ctrl-C")).start()
    outcome = runner.run()
    assert outcome.interrupted == 1 and outcome.finished == 0
    (record,) = results(plan.folder)
    assert record["final"] is False and record["status"] == "interrupted"
    report = summarize([record], total=3, header={})
    assert report["failures"]["interrupted"] == 1 and report["items"]["remaining"] == 3
    assert len(BatchRunner(plan, make).pending()) == 3


def test_a_line_torn_by_a_crash_is_skipped_and_the_next_append_starts_afresh(
    tmp_path: Path,
) -> None:
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append({"item_id": "a", "final": True, "status": "answered"})
    with log.path.open("a", encoding="utf-8") as fh:
        fh.write('{"item_id": "b", "final": tr')  # kill -9 mid-write
    assert set(log.read()) == {"a"}
    assert "results.jsonl:2: unreadable result line" in log.problems[0]
    log.append({"item_id": "c", "final": True, "status": "answered"})
    assert set(log.read()) == {"a", "c"}


def test_the_batch_id_is_stable_and_changes_with_what_decides_results() -> None:
    same = batch_id("GameOf24", {"model": "m", "task_file": "/x"})
    assert same == batch_id("GameOf24", {"task_file": "/x", "model": "m"})
    assert same != batch_id("GameOf24", {"model": "other", "task_file": "/x"})
    assert re.fullmatch(r"GameOf24-[0-9a-f]{12}", same)
