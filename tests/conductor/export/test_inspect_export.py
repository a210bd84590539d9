"""`conductor runs export --inspect`: a batch (and one run) as an Inspect eval log, read
back with inspect_ai's own reader. Sample count, scores and token totals must equal the
batch report's; each sample holds its run's meta turns and expert calls as events."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from batch_support import BATCH_FLAGS, OFFLINE, write_jsonl

from conductor.cli import main
from record.reader import read_transcript

inspect_log = pytest.importorskip("inspect_ai.log", reason="the inspect extra is not installed")

pytestmark = pytest.mark.slow


def perturbed_tasks(path: Path, seed: int) -> tuple[Path, set[str]]:
    """Items the wire model answers with twice their number; some targets are moved off
    it at random, so a mix of right and wrong answers is scored."""
    rng = random.Random(seed)
    rows, wrong = [], set()
    for n in range(rng.randint(2, 5)):
        item = f"i{n:02d}"
        off = rng.random() < 0.5
        if off:
            wrong.add(item)
        rows.append({"id": item, "input": f"Double item {n}.", "target": str(2 * n + off)})
    return write_jsonl(path, rows), wrong


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_exported_batch_reads_back_as_its_report(
    seed: int, wire: object, tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture
) -> None:
    tasks, wrong = perturbed_tasks(tmp_path / "tasks.jsonl", seed)
    assert main(["batch", str(tasks), *BATCH_FLAGS, *OFFLINE]) in (0, 1)
    (folder,) = (isolated_home / "batches").iterdir()
    report = json.loads((folder / "report.json").read_text())
    capsys.readouterr()
    out = tmp_path / "batch.eval"
    assert main(["runs", "export", str(folder), "--inspect", "-o", str(out)]) == 0

    log = inspect_log.read_eval_log(str(out))
    samples = log.samples or []
    assert len(samples) == report["items"]["finished"]
    verdicts = {str(s.id): s.scores["conductor"].value for s in samples}
    assert sum(v == "C" for v in verdicts.values()) == report["accuracy"]["correct"]
    assert {item for item, v in verdicts.items() if v == "I"} == wrong
    assert log.results is not None and log.results.scores[0].scored_samples == len(samples)
    usage = log.stats.model_usage
    assert sum(u.input_tokens for u in usage.values()) == report["tokens"]["input"]
    assert sum(u.output_tokens for u in usage.values()) == report["tokens"]["output"]
    for sample in samples:
        run_id = sample.metadata["run_id"]
        (transcript,) = list((folder / "runs").glob(f"{run_id}*.jsonl")) or list(
            isolated_home.glob(f"**/{run_id}.jsonl")
        )
        recorded = read_transcript(transcript).events
        assert log.eval.task_args["method"] == recorded[0].method
        assert log.eval.metadata["meta_model"] == recorded[0].model
        calls = [e for e in recorded if e.kind in ("meta_turn_finished", "expert_call_finished")]
        models = [e for e in sample.events if e.event == "model"]
        assert [m.role for m in models] == [
            "meta" if c.kind == "meta_turn_finished" else "expert" for c in calls
        ]
        assert [m.output.completion for m in models] == [c.text for c in calls]
        assert sample.output.completion == sample.messages[-1].text
        assert sample.target == str(2 * int(str(sample.id)[1:]) + (sample.id in wrong))


def test_one_run_exports_as_a_one_sample_log(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    question = "Use 4 7 8 8 to make 24"
    args = ["--model", "demo", "--method", "meta-no-python", "--no-learn", "--json"]
    assert main(["solve", question, *args]) == 0
    run = json.loads(capsys.readouterr().out)
    out = tmp_path / "run.json"
    assert main(["runs", "export", run["run_id"], "--inspect", "-o", str(out)]) == 0
    log = inspect_log.read_eval_log(str(out))
    (sample,) = log.samples or []
    assert sample.input == question and sample.output.completion == run["answer"]
    assert sample.model_usage["demo"].input_tokens == run["usage"]["input_tokens"]
    assert sample.metadata["status"] == "answered"
