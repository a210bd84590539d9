"""`conductor batch --ray` on a real two-node Ray cluster, models from the wire server.

The `openai` SDK in the workers talks to the local wire server (tests/equipment/wire_server.py);
the driver is the CLI, in this process or in a subprocess when it is to be killed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from batch_support import consult_then_answer, item_number
from batch_support import results as read_results
from local_cluster import LocalCluster

from conductor.cli import main
from equipment.wire_server import Answer, Fault, WireServer

REPO = Path(__file__).resolve().parents[4]
FLAGS = ["--scorer", "exact", "--description", "Double it.", "--model", "openai:t", "--no-python"]
OFFLINE = [*FLAGS, "--no-recall", "--no-learn"]


def write_tasks(path: Path, count: int) -> Path:
    rows = [
        {"id": f"i{n:03d}", "input": f"Double item {n}.", "target": str(2 * n)}
        for n in range(count)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def results(home: Path) -> list[dict[str, Any]]:
    found = list((home / "batches").glob("*/results.jsonl"))
    return read_results(found[0].parent) if found else []


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["batch", *args, "--json"])
    out, err = capsys.readouterr()
    reports = [line for line in out.splitlines() if line.startswith('{"format_version"')]
    assert reports or code != 0, f"no report in the output:\n{out[-3000:]}\n{err[-3000:]}"
    return code, (json.loads(reports[-1]) if reports else {}), err


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_200_items_on_two_nodes_are_each_recorded_once(
    ray_cluster: LocalCluster,
    wire: WireServer,
    tmp_path: Path,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 200)
    args = [str(tasks), *OFFLINE, "--concurrency", "16", "--ray", ray_cluster.address]
    code, report, err = run_cli(args, capsys)
    assert code == 0, err
    assert report["items"]["finished"] == 200 and report["accuracy"]["percent"] == 100.0
    rows = results(isolated_home)
    finals = Counter(r["item_id"] for r in rows if r["final"])
    assert len(finals) == 200 and set(finals.values()) == {1}
    assert len(rows) == 200  # nothing interrupted, nothing written twice
    # Both nodes ran items, and the report says so.
    nodes = Counter(r["node"] for r in rows)
    assert len(nodes) == 2 and min(nodes.values()) > 20, report["ray"]
    workers = report["ray"]["workers"]
    assert sorted(w["items"] for w in workers) == sorted(nodes.values())
    assert report["ray"]["moved"] == [] and report["ray"]["duplicates_dropped"] == 0
    # The driver wrote every transcript and indexed every run.
    folder = next((isolated_home / "batches").iterdir())
    assert len(list((folder / "runs").glob("*.jsonl"))) == 200
    for row in rows[:5]:
        kinds = [
            json.loads(x)["kind"] for x in (folder / row["transcript"]).read_text().splitlines()
        ]
        # the run ends with run_finished, then its verdict (run_scored)
        ended = [k for k in kinds if k != "run_scored"]
        assert ended[0] == "run_started" and ended[-1] == "run_finished"
    with sqlite3.connect(isolated_home / "runs.db") as db:
        assert db.execute("select count(*) from runs").fetchone()[0] == 200
    assert len(wire.requests) == 200 * 3  # meta, expert, meta per item: nothing ran twice


def finals_in(home: Path) -> list[dict[str, Any]]:
    return [r for r in results(home) if r["final"]]


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_a_worker_node_killed_mid_batch_loses_only_its_in_flight_items(
    ray_cluster: LocalCluster,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 80)
    victim = ray_cluster.nodes[-1]
    killed_at: list[float] = []

    def kill_when_under_way() -> None:
        deadline = time.monotonic() + 120
        while len(finals_in(isolated_home)) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed_at.append(time.time())
        ray_cluster.kill_node(victim)

    with WireServer(responder=consult_then_answer, latency_s=0.25) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        killer = threading.Thread(target=kill_when_under_way)
        killer.start()
        try:
            args = [str(tasks), *OFFLINE, "--concurrency", "8", "--ray", ray_cluster.address]
            code, report, err = run_cli(args, capsys)
        finally:
            killer.join()
            ray_cluster.add_node()  # later tests get two nodes again
    assert code == 0, err
    assert report["items"]["finished"] == 80 and report["accuracy"]["percent"] == 100.0
    rows = results(isolated_home)
    finals = Counter(r["item_id"] for r in rows if r["final"])
    assert len(finals) == 80 and set(finals.values()) == {1}  # none lost, none twice
    (dead,) = [w for w in report["ray"]["workers"] if not w["alive"]]
    moved = report["ray"]["moved"]
    assert moved, "the killed node had items in flight"
    assert sorted(m["item_id"] for m in moved) == sorted(dead["lost_items"])
    by_id = {r["item_id"]: r for r in rows}
    for move in moved:
        assert move["from"] == [dead["node"]] and move["to"] != dead["node"]
        assert by_id[move["item_id"]]["moved_from"] == [dead["node"]]
        assert by_id[move["item_id"]]["node"] == move["to"]
    # What the dead node finished before it died stays recorded, and nothing after.
    assert all(r["finished_at"] <= killed_at[0] + 1 for r in rows if r["node"] == dead["node"])
    markdown = next((isolated_home / "batches").iterdir()).joinpath("report.md").read_text()
    assert "Items moved after their worker died" in markdown and moved[0]["item_id"] in markdown


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_a_killed_driver_resumes_without_rerunning_finished_items(
    ray_cluster: LocalCluster, tmp_path: Path, isolated_home: Path
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 60)
    command = [sys.executable, "-m", "conductor.cli", "batch", str(tasks), *OFFLINE]
    command += ["--concurrency", "8", "--ray", ray_cluster.address, "--json"]
    with WireServer(responder=consult_then_answer, latency_s=0.25) as server:
        server._httpd.handle_error = lambda *a: None  # type: ignore[union-attr]  # killed clients
        env = {**os.environ, "OPENAI_BASE_URL": server.openai_url, "OPENAI_API_KEY": "k"}
        first = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and first.poll() is None:
            if len(finals_in(isolated_home)) >= 15:
                break
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        done_before = {r["item_id"] for r in finals_in(isolated_home)}
        killed_at = len(server.requests)
        second = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
        assert second.returncode == 0, second.stderr
        asked_after = {f"i{item_number(r.body):03d}" for r in server.requests[killed_at:]}
    assert 15 <= len(done_before) < 60
    assert not done_before & asked_after  # no finished item ran again
    finals = Counter(r["item_id"] for r in finals_in(isolated_home))
    assert len(finals) == 60 and set(finals.values()) == {1}
    report = json.loads(second.stdout.strip().splitlines()[-1])
    assert report["items"]["finished"] == 60 and report["session"]["ran"] == 60 - len(done_before)


def learning_responder(body: dict[str, Any]) -> Answer:
    """The batch's answers, plus the notebook's calls: one kind of task, one lesson."""
    from lessons import prompts as notebook_prompts

    system = (body.get("messages") or [{}])[0].get("content")
    if system == notebook_prompts.TYPE_SYSTEM:
        return "KIND: none\nDESCRIPTION: Doubling a number.\nNAME: Doubling numbers"
    if system == notebook_prompts.REFLECTION_SYSTEM:
        return "INSIGHT | doubling | Doubling a number is the same as adding it to itself."
    if system == notebook_prompts.NARROW_SYSTEM:
        return "USE: 1, 2, 3"
    if system == notebook_prompts.INDUCTION_SYSTEM:
        return "SUGGESTION: add the number to itself"
    return consult_then_answer(body)


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_waves_merge_every_note_once_with_all_its_source_runs(
    ray_cluster: LocalCluster,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lessons.exchange.merge import source_runs

    tasks = write_tasks(tmp_path / "t.jsonl", 30)
    notebook = tmp_path / "nb.db"
    with WireServer(responder=learning_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        args = [str(tasks), *FLAGS, "--notebook", str(notebook), "--concurrency", "6"]
        args += ["--learning", "waves", "--learn-every", "10", "--ray", ray_cluster.address]
        code, report, err = run_cli(args, capsys)
    assert code == 0, err
    learning = report["ray"]["learning"]
    assert learning["policy"] == "waves" and learning["waves"] == 3
    assert learning["runs_received"] == learning["runs_merged"] == 30
    assert report["notebook"]["after"]["runs_learned"] == 30
    run_ids = {r["run_id"] for r in finals_in(isolated_home)}
    with sqlite3.connect(notebook) as db:
        hashes = Counter(h for (h,) in db.execute("select content_hash from notes"))
        assert set(hashes.values()) == {1}  # every note once
        (insight,) = db.execute("select id from notes where kind = 'insight'").fetchall()
        (procedure,) = db.execute("select id from notes where kind = 'procedure'").fetchall()
        # The lesson every run reflected, and the procedure every run followed, name
        # all 30 runs as their sources; each worked example names its own run.
        assert set(source_runs(db, insight[0])) == run_ids
        assert set(source_runs(db, procedure[0])) == run_ids
        examples = db.execute("select id, source_run from notes where kind = 'example'").fetchall()
        assert {run for _, run in examples} == run_ids
        assert db.execute("select count(*) from task_types").fetchone()[0] == 1
    # The driver appended what it merged to each run's transcript.
    folder = next((isolated_home / "batches").iterdir())
    run = next(iter(run_ids))
    kinds = [
        json.loads(x)["kind"] for x in (folder / "runs" / f"{run}.jsonl").read_text().splitlines()
    ]
    assert kinds[-1] == "notes_written"
    # What learning cost (the worker's reflection and type pick) is the item's cost too.
    for row in finals_in(isolated_home):
        assert row["learning_usage"]["calls"] == 2
        assert row["usage"]["calls"] == 3 + 2 + (row["recalled"] > 0)  # + recall's pick
    # Later waves recalled what earlier waves learned (the snapshot did move on).
    assert max(r["recalled"] for r in finals_in(isolated_home)) > 0


@pytest.mark.xdist_group("ray")
@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_frozen_recalls_the_notebook_as_at_the_start_and_merges_at_the_end(
    ray_cluster: LocalCluster,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 12)
    notebook = tmp_path / "nb.db"
    with WireServer(responder=learning_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        args = [str(tasks), *FLAGS, "--notebook", str(notebook), "--concurrency", "4"]
        code, report, err = run_cli([*args, "--ray", ray_cluster.address], capsys)
        assert code == 0, err
        learning = report["ray"]["learning"]
        assert learning["policy"] == "frozen" and learning["waves"] == 0
        assert learning["snapshots"] == 1 and learning["runs_merged"] == 12
        # The notebook was empty when the batch started, and stayed so for every item.
        assert {r["recalled"] for r in finals_in(isolated_home)} == {0}
        assert report["notebook"]["before"]["notes"] == 0
        assert report["notebook"]["after"]["runs_learned"] == 12
        # The policy is part of the batch: waves is another batch, which now recalls.
        code, report, err = run_cli(
            [*args, "--learning", "waves", "--ray", ray_cluster.address], capsys
        )
        assert code == 0, err
        assert report["ray"]["learning"]["policy"] == "waves"
        assert len(list((isolated_home / "batches").iterdir())) == 2
        assert report["ray"]["learning"]["runs_merged"] == 12
        second = Path(report["folder"]) / "results.jsonl"
        recalled = [json.loads(line)["recalled"] for line in second.read_text().splitlines()]
        assert min(recalled) > 0  # from its first item on: the first batch's notes


@pytest.mark.xdist_group("ray")
@pytest.mark.slow
def test_a_429_on_one_node_pauses_every_node(
    ray_cluster: LocalCluster,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 60)
    concurrency = 8
    sent = 0
    lock = threading.Lock()

    def limited(body: dict[str, Any]) -> Answer:
        nonlocal sent
        with lock:
            sent += 1
            if sent == 40:  # once the batch is under way on both nodes
                return Fault.rate_limit(retry_after=3.0)
        return consult_then_answer(body)

    with WireServer(responder=limited, latency_s=0.05) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        args = [str(tasks), *OFFLINE, "--concurrency", str(concurrency)]
        code, report, err = run_cli([*args, "--ray", ray_cluster.address], capsys)
        stamps = [(r.ts, item_number(r.body or {}), r.fault) for r in server.requests]
    assert code == 0, err
    assert report["items"]["finished"] == 60
    node_of = {int(r["item_id"][1:]): r["node"] for r in finals_in(isolated_home)}
    gate = report["ray"]["rate_limit"]
    assert gate["pauses"] >= 1 and gate["requests_held"] >= 1
    pause = gate["last_pause"]
    # Once the gate has heard of the 429, no node starts a request until the pause ends:
    # only requests admitted before then, at most one per item in flight, may still land.
    # (A bound in requests, not seconds: how late they land depends on the machine's load.)
    during = [n for ts, n, _ in stamps if pause["heard_at"] < ts < pause["until"] - 0.05]
    assert len(during) <= concurrency, during
    limited_at = next(ts for ts, _, fault in stamps if fault == "429")
    before = {node_of[n] for ts, n, _ in stamps if ts < limited_at}
    after = {node_of[n] for ts, n, _ in stamps if ts >= pause["until"]}
    assert len(before) == 2 and len(after) == 2  # both nodes were working, then waited


def test_without_ray_the_command_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    tasks = write_tasks(tmp_path / "t.jsonl", 2)
    code = main(["batch", str(tasks), *OFFLINE, "--ray"])
    err = " ".join(capsys.readouterr().err.split())
    # This checkout's own extra, never the public index's unrelated `conductor`.
    assert code == 2 and "pip install -e" in err and "[ray]" in err
    assert "pip install 'conductor[ray]'" not in err


def test_a_second_final_result_for_an_item_is_dropped_not_recorded(tmp_path: Path) -> None:
    """Should a result arrive twice (a retry the driver did not ask for), the item is
    still recorded once."""
    from conductor.batch.ray.learning import ClusterLearning
    from conductor.batch.ray.runner import RayBatchRunner
    from conductor.batch.runner import BatchPlan
    from conductor.tasks.files import TaskItem

    items = [TaskItem(id=f"i{n}", input=f"Double item {n}.", line=n + 1) for n in range(3)]
    plan = BatchPlan(tmp_path, "t-0123456789ab", "t", items, lambda i: i.input)
    learning = ClusterLearning("off", notebook=None, folder=tmp_path, recall=False)
    runner = RayBatchRunner(plan, pool=None, learning=learning, concurrency=2)  # type: ignore[arg-type]
    assert [i.id for i in runner.pending()] == ["i0", "i1", "i2"]
    record = runner._base_record(items[1], "run-1", time.time())
    record.update(status="answered", final=True, answer="2")
    runner._finish(dict(record))  # type: ignore[arg-type]
    runner._finish(dict(record, run_id="run-2"))  # type: ignore[arg-type]
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["run_id"] for x in lines] == ["run-1"]
    assert runner.duplicates_dropped == 1 and runner.outcome.finished == 1
    # A later session finds it finished and does not run it again.
    again = RayBatchRunner(plan, pool=None, learning=learning, concurrency=2)  # type: ignore[arg-type]
    assert [i.id for i in again.pending()] == ["i0", "i2"]
    again._finish(dict(record, run_id="run-3"))  # type: ignore[arg-type]
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 1
