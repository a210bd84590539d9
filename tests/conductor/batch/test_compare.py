"""`conductor batch --methods`: every item under every method against the real `openai`
SDK and the local wire server; resuming by (item, method); the report's figures against
the records; an interrupted comparison (kill -9 of a real process) resumed."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from batch_support import BATCH_FLAGS, ITEM, answer, numbered_tasks, results

from conductor.cli import main
from conductor.methods import label
from conductor.methods import prompts as method_prompts
from conductor_kernel.stats import mcnemar_exact, wilson_interval
from equipment.wire_server import WireServer
from transcripts.index import RunIndex

REPO = Path(__file__).resolve().parents[3]
OFFLINE = ["--no-recall", "--no-learn"]


def method_of(body: dict[str, Any]) -> str:
    """Which method (or which part of one) a request to the server came from."""
    messages = body.get("messages") or []
    system = messages[0].get("content", "") if messages else ""
    first = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    if system == method_prompts.IDENTITY_SYSTEM:
        return "expert-dynamic:identity"
    if str(system).startswith("You are Expert"):
        return "meta:expert"
    if "You are the Conductor" in first:
        return "meta"
    if method_prompts.AS_THAT_EXPERT in first:
        return "expert-dynamic"
    if method_prompts.STEP_BY_STEP in first:
        return "zero-shot-cot"
    return "standard"


def item_of(body: dict[str, Any]) -> int:
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    found = ITEM.findall(text)
    return int(found[-1]) if found else -1


def responder(body: dict[str, Any]) -> str:
    """Meta consults an expert, then answers right; standard answers right; expert-dynamic
    answers wrong on odd items; zero-shot-cot thinks aloud first, then answers right."""
    n, method = item_of(body), method_of(body)
    turns = sum(m.get("role") == "assistant" for m in body.get("messages") or [])
    if method == "meta:expert":
        return f"Checked item {n}."
    if method == "expert-dynamic:identity":
        return "You are a doubler of numbers."
    if method == "meta":
        return answer(str(2 * n)) if turns else f'Expert Checker:\n"""\nDouble item {n}.\n"""'
    if method == "expert-dynamic":
        return answer(str(2 * n + (n % 2)))
    if method == "zero-shot-cot" and not turns:
        return "Doubling means adding the number to itself."
    return answer(str(2 * n))


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["batch", *args, "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


def asked(server: WireServer, since: int = 0) -> Counter[tuple[int, str]]:
    """(item, method) of every request after `since`, identity and expert calls folded in."""
    return Counter(
        (item_of(r.body), method_of(r.body).split(":")[0]) for r in server.requests[since:]
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with WireServer(responder=responder) as wire:
        monkeypatch.setenv("OPENAI_BASE_URL", wire.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield wire


def test_a_comparison_runs_each_pair_once_and_resumes_by_item_and_method(
    server: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 6)
    base = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--concurrency", "3"]
    code, first = run([*base, "--methods", "standard,expert-dynamic,meta", "--limit", "2"], capsys)
    assert code == 0 and first["items"]["pairs_finished"] == 6
    calls = {"standard": 1, "expert-dynamic": 2, "meta": 3}  # model calls per run
    assert asked(server) == Counter({(n, m): c for n in range(2) for m, c in calls.items()})

    # More items: only the new pairs run; the same folder, the earlier runs kept.
    mark = len(server.requests)
    code, second = run([*base, "--methods", "standard,expert-dynamic,meta"], capsys)
    assert code == 0 and second["batch_id"] == first["batch_id"]
    assert asked(server, mark) == Counter(
        {(n, m): c for n in range(2, 6) for m, c in calls.items()}
    )
    # Another method: only its runs.
    mark = len(server.requests)
    code, third = run([*base, "--methods", "standard,zero-shot-cot,expert-dynamic,meta"], capsys)
    assert code == 0 and third["batch_id"] == first["batch_id"]
    assert asked(server, mark) == Counter({(n, "zero-shot-cot"): 2 for n in range(6)})

    folder = Path(third["folder"])
    finals = [r for r in results(folder) if r["final"]]
    assert Counter((r["task_item_id"], r["method"]) for r in finals) == Counter(
        {(f"i{n:02d}", m): 1 for n in range(6) for m in third["methods"]}
    )
    assert all(r["item_id"] == f"{r['task_item_id']}@{r['method']}" for r in finals)
    # Every run is recorded: a transcript and a runs.db row under its method.
    index = RunIndex()
    for record in finals:
        assert (folder / record["transcript"]).is_file()
        row = index.get(record["run_id"])
        assert row is not None and row["method"] == record["method"]

    # The report agrees with the records, and with the statistics' definitions.
    report = third
    assert report["methods"] == ["standard", "zero-shot-cot", "expert-dynamic", "meta"]
    assert report["reference"] == "meta" and report["items"]["scored_by_every_method"] == 6
    by = report["by_method"]
    assert [by[m]["accuracy"]["correct"] for m in report["methods"]] == [6, 6, 3, 6]
    low, high = wilson_interval(3, 6)
    assert by["expert-dynamic"]["accuracy"]["wilson95"] == [
        round(100 * low, 2),
        round(100 * high, 2),
    ]
    dynamic = report["paired"]["expert-dynamic"]
    assert (dynamic["right_to_wrong"], dynamic["wrong_to_right"]) == (3, 0)
    assert dynamic["difference_points"] == -50.0
    assert math.isclose(dynamic["mcnemar_p"], mcnemar_exact(0, 3))
    assert report["paired"]["standard"]["mcnemar_p"] == 1.0
    for m in report["methods"]:
        mine = [r for r in finals if r["method"] == m]
        assert by[m]["tokens"]["model_calls"] == sum(r["usage"]["calls"] for r in mine)
        assert by[m]["rounds"]["mean"] == pytest.approx(sum(r["rounds"] for r in mine) / 6)
    assert (
        by["meta"]["model_calls_per_item"] == 3.0 and by["standard"]["model_calls_per_item"] == 1.0
    )
    assert by["meta"]["expert_calls"] == 6 and by["standard"]["expert_calls"] == 0
    assert report["notebook"]["recall"] is False and report["notebook"]["learn"] is False
    assert "off for every method" in report["notebook"]["policy"]

    written = json.loads((folder / "report.json").read_text())
    assert written["by_method"] == report["by_method"]
    markdown = (folder / "report.md").read_text()
    for m in report["methods"]:
        assert f"| {label(m)} |" in markdown
    assert "Recall and learning: off for every method" in markdown

    # The batch HTML page shows the comparison and every run, under its method.
    assert main(["batch-report", report["batch_id"], "--html"]) == 0
    page = (folder / "html" / "index.html").read_text()
    assert 'id="methods"' in page and page.count("<tr data-filter=") == 24
    assert "Expert dynamic" in page and "-50.0" in page


def test_a_comparison_refuses_what_it_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = str(numbered_tasks(tmp_path / "tasks.jsonl", 2))
    cases = [
        (["--methods", "standard,nope"], "unknown method 'nope'"),
        (["--methods", "meta", "--no-python"], "name meta-no-python"),
        (["--methods", "meta", "--ablation"], "pick one"),
        (["--methods", "meta", "--method", "standard"], "list them all there"),
        (["--with-notebook"], "goes with --methods"),
        (["--methods", "meta", "--replay-dir", str(tmp_path / "none")], "no such folder"),
    ]
    for extra, message in cases:
        assert main(["batch", tasks, *BATCH_FLAGS, *extra]) == 2
        assert message in capsys.readouterr().err
    assert main(["batch", tasks, tasks, *BATCH_FLAGS]) == 2
    assert "several task files" in capsys.readouterr().err


def test_a_single_method_batch_records_that_method(
    server: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 3)
    code, report = run([str(tasks), *BATCH_FLAGS, *OFFLINE, "--method", "zero-shot-cot"], capsys)
    assert code == 0 and report["accuracy"]["correct"] == 3
    assert set(asked(server)) == {(n, "zero-shot-cot") for n in range(3)}
    code, meta = run([str(tasks), *BATCH_FLAGS, *OFFLINE, "--no-python"], capsys)
    assert meta["batch_id"] != report["batch_id"]  # another method, another batch


@pytest.mark.slow
def test_kill_9_mid_comparison_then_rerun_runs_no_finished_pair_again(
    tmp_path: Path, isolated_home: Path
) -> None:
    tasks = numbered_tasks(tmp_path / "tasks.jsonl", 8)
    methods = "standard,zero-shot-cot,expert-dynamic,meta"
    command = [sys.executable, "-m", "conductor.cli", "batch", str(tasks), *BATCH_FLAGS]
    command += [*OFFLINE, "--no-python", "--methods", methods.replace("meta", "meta-no-python")]
    command += ["--concurrency", "3", "--json"]
    with WireServer(responder=responder, latency_s=0.2) as wire:
        env = {**os.environ, "OPENAI_BASE_URL": wire.openai_url, "OPENAI_API_KEY": "k"}
        first = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        finished: list[dict[str, Any]] = []
        while time.monotonic() < deadline and first.poll() is None:
            found = list((isolated_home / "batches").glob("*/results.jsonl"))
            finished = [r for r in results(found[0].parent) if r["final"]] if found else []
            if len(finished) >= 6:
                break
            time.sleep(0.02)
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = len(wire.requests)
        (folder,) = (isolated_home / "batches").iterdir()
        done = {(r["task_item_id"], r["method"]) for r in results(folder) if r["final"]}
        assert 6 <= len(done) < 32

        second = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
        assert second.returncode == 0, second.stderr
        again = {
            (f"i{n:02d}", "meta-no-python" if m == "meta" else m) for n, m in asked(wire, killed_at)
        }
    assert not done & again  # no finished (item, method) pair ran again
    finals = Counter((r["task_item_id"], r["method"]) for r in results(folder) if r["final"])
    assert len(finals) == 32 and set(finals.values()) == {1}
    report = json.loads(second.stdout.strip().splitlines()[-1])
    assert report["items"]["pairs_finished"] == 32
    assert report["session"]["ran"] == 32 - len(done)
    assert re.fullmatch(r"tasks-compare-[0-9a-f]{12}", report["batch_id"])
