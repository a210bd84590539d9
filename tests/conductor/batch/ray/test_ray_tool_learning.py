"""On Ray, the tools a run makes are tested on its worker, in the run's own sandbox,
against the worker's snapshot of the notebook; the results travel with the prepared run
and the driver writes them (conductor/batch/ray/worker.py, lessons/forms/tooltests.py)."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster

from conductor.batch.ray.worker import ItemWorker
from conductor.cli import main
from conductor.scoring.notebook import open_notebook
from conductor.session.notebook_hooks import NotebookHooks
from conductor_kernel import prompts
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult
from equipment.wire_server import WireServer
from experts.scripted import ScriptedModel
from lessons import prompts as notebook_prompts
from lessons.storage.store import Notebook
from lessons.write.learn import learn_from_run, write_prepared
from lessons.write.prepare import PreparedRun
from sandbox.subprocess_backend import SubprocessSandbox

SORT = "Sort the following words alphabetically: List: "
PROGRAM = "words = {words!r}\nprint(' '.join(sorted(words)))"
LISTS = [["pear", "apple", "fig"], ["kiwi", "yam", "date"], ["lime", "plum", "beet"],
         ["okra", "zest", "leek"], ["rye", "oat", "corn"], ["mint", "sage", "dill"],
         ["nut", "tea", "bay"], ["rice", "bran", "wheat"]]  # fmt: skip


def sort_run(run_id: str, words: list[str], *, code: bool = True) -> list[Event]:
    answer = " ".join(sorted(words))
    events: list[Event] = [RunStarted(run_id=run_id, question=SORT + " ".join(words),
                                      target=answer, task="word_sorting")]  # fmt: skip
    if code:
        call = ExpertCallStarted(run_id=run_id, name="Expert Python", is_python=True, round=1)
        events += [
            call,
            SandboxExec(
                run_id=run_id,
                parent_id=call.id,
                code=PROGRAM.format(words=words),
                result=ExecResult(stdout=answer + "\n", exit_code=0),
            ),
            ExpertCallFinished(run_id=run_id, parent_id=call.id, name="Expert Python", text="ok"),
        ]
    return [
        *events,
        FinalAnswer(run_id=run_id, answer=answer, round=2),
        RunFinished(run_id=run_id, status="answered", final_answer=answer, rounds=2),
    ]


def bare_worker(snapshot: Notebook) -> ItemWorker:
    """An `ItemWorker` without a Ray runtime: only what `_distill` uses."""
    worker = ItemWorker.__new__(ItemWorker)
    worker._lock = threading.Lock()
    worker._learned = {}
    worker.meta = ScriptedModel(["unused"])
    worker._hooks = NotebookHooks(snapshot)
    return worker


def test_a_worker_tests_the_runs_tool_in_its_sandbox_and_the_driver_keeps_the_result(
    tmp_path: Path,
) -> None:
    # The driver's notebook, and the snapshot of it a worker recalls from and tests on.
    driver = open_notebook(tmp_path / "driver.db")
    for i, words in enumerate(LISTS[:3]):
        learn_from_run(driver, sort_run(f"eye{i}", words, code=False))
    driver.close()
    snapshot_path = tmp_path / "snapshot.db"
    snapshot_path.write_bytes((tmp_path / "driver.db").read_bytes())
    worker = bare_worker(open_notebook(snapshot_path))
    sandbox = SubprocessSandbox()
    try:
        assert worker._distill(sort_run("made", LISTS[3]), sandbox=sandbox) == []
        assert worker._distill(sort_run("bare", LISTS[4])) == []  # no sandbox given
    finally:
        sandbox.close()
    made = PreparedRun.from_dict(json.loads(json.dumps(worker._learned["made"])))  # via Ray
    assert made.tool_testing == "tested 1 tool(s) on 3 question(s): 3 passed"
    assert worker._learned["bare"]["tool_testing"] == "skipped: no sandbox"
    driver = open_notebook(tmp_path / "driver.db")
    try:
        written = write_prepared(driver, made)
        assert written is not None and list(written.tools.values()) == [[3, 3]]
        (row,) = driver.read("select tests, passes, tested_on from tools")
        assert (row["tests"], row["passes"]) == (3, 3)
        assert sorted(json.loads(row["tested_on"])) == ["eye0", "eye1", "eye2"]
    finally:
        driver.close()


def sorting_responder(body: dict[str, Any]) -> str:
    """A conductor that has Expert Python sort, and the notebook's own calls."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content")) if messages else ""
    last = str(messages[-1].get("content")) if messages else ""
    if system == prompts.META_SYSTEM:
        if not any(m.get("role") == "assistant" for m in messages):
            words = re.findall(r"List: (.+)", last)[-1]
            return f'Expert Python:\n"""\nSort these words: {words}\n"""'
        printed = re.findall(r"stdout:\n```\n(.*?)\n```", last, re.S)
        return f'>> FINAL ANSWER:\n"""\n{printed[-1] if printed else "?"}\n"""'
    if system.startswith("You are Expert Python"):
        words = last.rsplit("Sort these words: ", 1)[-1].split()
        return f"```python\n{PROGRAM.format(words=words)}\n```\nPlease run this code!"
    if system == notebook_prompts.TYPE_SYSTEM:
        return "KIND: 1\nDESCRIPTION: Put words in dictionary order.\nNAME: word sorting"
    if system == notebook_prompts.REFLECTION_SYSTEM:
        return "INSIGHT | sort words | Let a program sort the words."
    if system == notebook_prompts.NARROW_SYSTEM:
        return "USE: 1, 2"
    return "SUGGESTIONS:\n- Sort with a program.\nPROCEDURE:\n1. Ask Expert Python."


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_a_ray_batch_with_python_measures_its_tools_on_the_workers(
    ray_cluster: LocalCluster,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = tmp_path / "sorting.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"i{n}", "input": SORT + " ".join(w), "target": " ".join(sorted(w))})
            + "\n"
            for n, w in enumerate(LISTS)
        ),
        encoding="utf-8",
    )
    notebook = tmp_path / "nb.db"
    with WireServer(responder=sorting_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        code = main(["batch", str(tasks), "--task", "word_sorting", "--model", "openai:t",
                     "--sandbox", "subprocess", "--notebook", str(notebook),
                     "--concurrency", "2", "--learning", "waves", "--learn-every", "4",
                     "--ray", ray_cluster.address, "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    report = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert report["ray"]["learning"]["runs_merged"] == len(LISTS)
    with sqlite3.connect(notebook) as db:
        ((tests, passes, tested_on, source),) = db.execute(
            "select t.tests, t.passes, t.tested_on, n.source_run from tools t "
            "join notes n on n.id = t.note_id"
        ).fetchall()
        first_wave = {
            r for (r,) in db.execute("select run_id from distilled_runs order by at limit 4")
        }
    # The second wave's workers tested the tool (learned in the first wave) on the first
    # wave's other questions, in their sandboxes; each question counts once.
    assert (tests, passes) == (3, 3)
    assert set(json.loads(tested_on)) == first_wave - {source}
