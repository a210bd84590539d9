"""The batch runner: resume after a crash, bad lines, unscored items, unknown names,
real concurrency, the shared backoff, the report, and a replayed published file.

Models are the real `openai` SDK against the local wire server (tests/equipment/wire_server.py),
or the scripted model where only the runner's bookkeeping is under test.
"""

from __future__ import annotations

import itertools
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

from conductor.batch import BatchPlan, BatchRunner
from conductor.batch_report import render_markdown, summarize
from conductor.batch_store import ResultsLog, batch_id
from conductor.cli import main
from conductor.scoring import score
from conductor.session import Session
from conductor.taskfile import TaskItem
from conductor_kernel import prompts
from conductor_kernel.interfaces import Completion, Message
from conductor_kernel.run_config import RunConfig
from equipment.wire_server import Answer, Fault, WireServer
from experts.openai_model import OpenAIModel
from experts.retry import Backoff
from experts.scripted import ScriptedModel

REPO = Path(__file__).resolve().parents[1]
_ITEM = re.compile(r"item (\d+)")


def item_number(body: dict[str, Any]) -> int:
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    found = _ITEM.findall(text)  # the last: recalled notes may name other items first
    return int(found[-1]) if found else -1


def is_meta(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == prompts.META_SYSTEM


def answer(text: str) -> str:
    return f'>> FINAL ANSWER:\n"""\n{text}\n"""'


def consult_then_answer(body: dict[str, Any]) -> Answer:
    """Round 1 consults an expert, round 2 answers twice the item's number."""
    n = item_number(body)
    if not is_meta(body):
        return f"Checked item {n}."
    turns = sum(m.get("role") == "assistant" for m in body["messages"])
    if turns == 0:
        return f'Expert Checker:\n"""\nDouble item {n}.\n"""'
    return answer(str(2 * n))


def write_jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def numbered_tasks(path: Path, count: int, *, targets: bool = True) -> Path:
    rows: list[dict[str, Any] | str] = []
    for n in range(count):
        row: dict[str, Any] = {"id": f"i{n:02d}", "input": f"Double item {n}."}
        if targets:
            row["target"] = str(2 * n)
        rows.append(row)
    return write_jsonl(path, rows)


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A wire server the CLI's `openai:` models talk to (via OPENAI_BASE_URL)."""
    with WireServer(responder=consult_then_answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield server


BATCH_FLAGS = ["--scorer", "exact", "--description", "Double it.", "--model", "openai:t"]
OFFLINE = ["--no-python", "--no-recall", "--no-learn"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["batch", *args])
    out, err = capsys.readouterr()
    return code, out, err


def batch_folder(home: Path) -> Path:
    (folder,) = (home / "batches").iterdir()
    return folder


def results(folder: Path) -> list[dict[str, Any]]:
    """Every readable line of results.jsonl (a line being written may be cut short)."""
    rows = []
    for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


# -- resume ------------------------------------------------------------------------------


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


def plan_for(tmp_path: Path, count: int, scorer: str = "exact") -> BatchPlan:
    items = [
        TaskItem(id=f"i{n:02d}", input=f"Double item {n}.", target=str(2 * n), line=n + 1)
        for n in range(count)
    ]

    def score_one(answer: str | None, item: TaskItem, sandbox: Any, output: str) -> Any:
        return score(scorer, answer, item, output=output or None).to_dict()

    return BatchPlan(tmp_path / "batch", "t-0123456789ab", "t", items, lambda i: i.input, score_one)


def scripted_sessions(tmp_path: Path, **config: Any) -> tuple[ScriptedModel, Any]:
    def meta(messages: list[Message]) -> str:
        n = int(_ITEM.search(messages[0].content).group(1))  # type: ignore[union-attr]
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


# -- bad input ---------------------------------------------------------------------------


def test_malformed_lines_stop_the_batch_with_their_line_number(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [{"input": "Double item 1.", "target": "2"}, "{not json", {"target": "4"}],
    )
    code, _, err = run_cli([str(tasks), *BATCH_FLAGS, *OFFLINE], capsys)
    assert code == 2
    assert f"{tasks}:2: not valid JSON" in " ".join(err.split())
    assert "skip" in err and not wire.requests  # nothing ran


def test_malformed_lines_can_be_skipped_with_a_warning_naming_each_line(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [{"input": "Double item 1.", "target": "2"}, "{not json", {"target": "4"}],
    )
    flags = [*BATCH_FLAGS, *OFFLINE, "--on-error", "skip", "--json"]
    code, out, err = run_cli([str(tasks), *flags], capsys)
    assert code == 0
    assert f"{tasks}:2: not valid JSON" in err and f"{tasks}:3: no `input` field" in err
    assert json.loads(out)["items"]["finished"] == 1


def test_items_without_a_target_run_unscored(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"id": "a", "input": "Double item 1.", "target": "2"},
            {"id": "b", "input": "Double item 2."},
            {"id": "c", "input": "Double item 3.", "target": "7"},
        ],
    )
    code, out, _ = run_cli([str(tasks), *BATCH_FLAGS, *OFFLINE, "--json"], capsys)
    report = json.loads(out)
    assert code == 0
    assert report["items"] == {
        "total": 3,
        "finished": 3,
        "remaining": 0,
        "scored": 2,
        "unscored": 1,
    }
    assert report["accuracy"]["correct"] == 1 and report["accuracy"]["percent"] == 50.0
    by_id = {r["item_id"]: r for r in results(batch_folder(isolated_home))}
    assert by_id["b"]["answer"] == "4" and by_id["b"]["score"]["scored"] is False
    assert by_id["c"]["score"]["correct"] is False


def test_an_unknown_task_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 1)
    code, _, err = run_cli([str(tasks), "--task", "GameOf25", "--model", "demo"], capsys)
    flat = " ".join(err.split())
    assert code == 2 and "unknown task 'GameOf25'" in flat
    assert "GameOf24" in flat and "word_sorting" in flat


def test_an_unknown_scorer_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 1)
    args = [str(tasks), "--scorer", "fuzzy", "--description", "x", "--model", "demo"]
    code, _, err = run_cli(args, capsys)
    flat = " ".join(err.split())
    assert code == 2 and "unknown scorer 'fuzzy'" in flat
    assert "game24" in flat and "numeric" in flat


# -- concurrency and backoff ---------------------------------------------------------------


class InFlight:
    """Wraps a real model and counts calls in progress at once."""

    def __init__(self, model: Any) -> None:
        self.model, self.name = model, model.name
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], **kw: Any) -> Completion:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return self.model.complete(messages, **kw)
        finally:
            with self._lock:
                self.now -= 1


def wire_sessions(tmp_path: Path, model: Any) -> Any:
    def make(item: TaskItem) -> Session:
        cfg = RunConfig(python=False)
        return Session(model, model, None, cfg, runs_path=tmp_path / "batch" / "runs")

    return make


def test_items_really_run_concurrently_up_to_the_limit(tmp_path: Path) -> None:
    # The first four requests are answered only once all four are in: run one at a time,
    # the first would wait for ever (the barrier's timeout only ends a failure).
    four_in = threading.Barrier(4, timeout=60)
    seen = itertools.count()

    def together(body: dict[str, Any]) -> Answer:
        if next(seen) < 4:
            four_in.wait()
        return consult_then_answer(body)

    with WireServer(responder=together) as server:
        model = InFlight(OpenAIModel("t", base_url=server.openai_url, api_key="k"))
        runner = BatchRunner(plan_for(tmp_path, 8), wire_sessions(tmp_path, model), concurrency=4)
        outcome = runner.run()
    assert outcome.finished == 8 and runner.tally.accuracy == 100.0
    assert model.peak == 4  # four at once, never more


class WatchedBackoff(Backoff):
    """Notes, on the server's clock, when the pause began and until when it holds."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.paused = threading.Event()
        self.resume_wall = 0.0

    def pause(self, seconds: float) -> None:
        self.resume_wall = max(self.resume_wall, time.time() + seconds)
        super().pause(seconds)
        self.paused.set()


def test_a_rate_limit_seen_by_one_worker_pauses_all_of_them(tmp_path: Path) -> None:
    # The first four requests (one per worker) all arrive; one is refused with a 429, the
    # other three are answered only once the pause is in force. So every later request
    # was sent after the pause began, and none may arrive before it ends. No window of
    # wall-clock time is assumed: under load requests only come later.
    backoff = WatchedBackoff(base_s=0.05, cap_s=0.2)
    first_four = threading.Barrier(4, timeout=60)
    seen = itertools.count()

    def limit_one(body: dict[str, Any]) -> Answer:
        n = next(seen)
        if n < 4:
            if first_four.wait() == 0:
                return Fault.rate_limit(retry_after=0.5)
            assert backoff.paused.wait(60)
        return consult_then_answer(body)

    with WireServer(responder=limit_one) as server:
        model = OpenAIModel("t", base_url=server.openai_url, api_key="k", backoff=backoff)
        runner = BatchRunner(plan_for(tmp_path, 12), wire_sessions(tmp_path, model), concurrency=4)
        outcome = runner.run()
        later = [r.ts for r in server.requests[4:]]
    assert outcome.finished == 12 and backoff.pauses == 1
    assert later and min(later) >= backoff.resume_wall


def test_meta_and_expert_models_share_one_backoff(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from conductor.batch_setup import live_setup
    from conductor.config import load_settings
    from conductor.tasks import get_spec

    overrides = {"model": "openai:t", "expert_model": "openai:other", "run": {"python": False}}
    settings = load_settings(overrides)
    setup = live_setup(settings, get_spec("GameOf24"), lambda: tmp_path)
    first, second = (setup.make_session(TaskItem(id=x, input="1 2 3 4")) for x in "ab")
    assert first.meta_model is second.meta_model  # one model instance for every worker
    assert first.expert_model is not first.meta_model
    assert first.expert_model.backoff is first.meta_model.backoff  # type: ignore[union-attr]

    tasks = numbered_tasks(tmp_path / "t.jsonl", 2)
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--expert-model", "openai:other", "--json"]
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["accuracy"]["percent"] == 100.0
    models = Counter((r.body or {}).get("model") for r in wire.requests)
    assert models == {"t": 4, "other": 2}


# -- failures and the report ---------------------------------------------------------------


def mixed(body: dict[str, Any]) -> Answer:
    """Item 1 right, 2 wrong, 3 never answers (round limit), 4 a rejected request."""
    n = item_number(body)
    if n == 4:
        return Fault(400)
    if n == 3:
        return "Let me think about it some more."
    return answer("2" if n in (1, 2) else str(2 * n))


def test_the_report_counts_accuracy_tokens_rounds_and_failures_by_kind(
    tmp_path: Path,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 5)  # items 0..4; item 0 answers "0"
    wire.responder = mixed
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--max-rounds", "2", "--json"]
    code, out, _ = run_cli(args, capsys)
    report = json.loads(out)
    assert code == 0  # every item finished, failures included
    assert report["failures"] == {
        "error": 1,
        "limit": 1,
        "no_answer": 0,
        "interrupted": 0,
        "scorer": 0,
    }
    (example,) = report["failure_examples"]
    assert example["item_id"] == "i04" and "ModelError" in example["message"]
    assert "400" in example["message"]
    # Scored: 0, 1 and 2 answered, 3 hit the limit (wrong); 4's system error is not a grade.
    assert report["accuracy"] == {
        "correct": 2,
        "scored": 4,
        "percent": 50.0,
        "paper_rule_correct": 2,
        "paper_rule_percent": 50.0,
    }
    assert report["rounds"]["max"] == 2 and report["tokens"]["input"] > 0
    assert report["tokens"]["model_calls"] == 5  # 3 answers + 2 turns of item 3 (4 failed)
    folder = batch_folder(isolated_home)
    assert json.loads((folder / "report.json").read_text()) == report
    markdown = (folder / "report.md").read_text()
    assert "| accuracy | 50.0% (2 of 4 scored; 0 unscored) |" in markdown
    assert "| error | 1 |" in markdown and "| limit | 1 |" in markdown
    assert markdown == render_markdown(report)
    transcripts = list((folder / "runs").glob("*.jsonl"))
    assert len(transcripts) == 5  # one per item


@pytest.mark.slow
def test_the_report_shows_the_notebook_before_and_after_the_batch(
    tmp_path: Path,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 3)
    notebook = tmp_path / "nb.db"
    args = [str(tasks), *BATCH_FLAGS, "--no-python", "--notebook", str(notebook), "--json"]
    code, out, _ = run_cli(args, capsys)
    assert code == 0
    state = json.loads(out)["notebook"]
    assert state["path"] == str(notebook) and state["learn"] is True
    assert state["before"]["runs_learned"] == 0 and state["before"]["notes"] == 0
    # Each item's run was distilled (its answer matched the target: an example note).
    assert state["after"]["runs_learned"] == 3
    assert state["after"]["by_kind"].get("example") == 3
    markdown = (batch_folder(isolated_home) / "report.md").read_text()
    assert "- before: notes: 0," in markdown and "runs_learned: 3" in markdown


def test_a_failure_that_would_fail_every_item_stops_the_batch(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 6)
    wire.api_key = "right"
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--concurrency", "1", "--json"]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "batch stopped" in err and "authentication" in " ".join(err.split())
    assert len(wire.requests) == 1  # no second item was tried
    monkeypatch.setenv("OPENAI_API_KEY", "right")
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["items"]["finished"] == 6


# -- replay ------------------------------------------------------------------------------


def replay_sandbox() -> str:
    """A real sandbox for the replayed code: bubblewrap (fast), else Docker."""
    from sandbox.registry import probe
    from support import skip_or_fail

    for name in ("bwrap", "docker"):
        if probe(name) is None:
            return name
    skip_or_fail("no sandbox (bwrap or docker) for the replay", "CONDUCTOR_REQUIRE_DOCKER")
    return ""


@pytest.mark.slow
@pytest.mark.shared
def test_a_replayed_batch_gives_the_answers_of_replay_and_the_accuracy_of_score(
    shared_dir: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    from conductor.replay import replay_file
    from sandbox.registry import open_sandbox
    from transcripts.published import read_published

    path = shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"  # 100 records
    name = replay_sandbox()
    code, out, _ = run_cli([str(path), "--replay", "--sandbox", name, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["items"]["finished"] == 100

    assert main(["score", str(path), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert report["accuracy"]["percent"] == scored["accuracy"] == 67.0
    assert report["accuracy"]["paper_rule_percent"] == scored["paper_accuracy"]

    replayed = replay_file(path, lambda: open_sandbox(name), jobs=2)
    differs = {m.line for m in replayed.mismatches if m.kind == "final_answer"}
    recorded = {r.line: r.final_answer for r in read_published(path).records}
    by_line = {r["line"]: r["answer"] for r in results(batch_folder(isolated_home))}
    assert sorted(by_line) == sorted(recorded)
    for line, ours in by_line.items():
        same = (ours or "").strip() == (recorded[line] or "").strip()
        assert same == (line not in differs), f"line {line}: batch {ours!r}"
