"""The paper's published baseline runs replayed through our method implementations
(conductor/replay/baselines.py): the same final answer after the same number of turns,
and every way a record can differ is caught."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.methods import BASELINES, PUBLISHED_FOLDERS
from conductor.replay.baselines import (
    BaselineRecord,
    method_of_path,
    parse_baseline,
    replay_baseline,
    replay_baseline_file,
)

SYSTEM = {"role": "system", "content": "Answer in the format.\n>> FINAL ANSWER:"}
ANSWER = '>> FINAL ANSWER:\n"""\n{}\n"""'
NUDGE = "ROUND {}:\n\nIf you have the answer, present it.\n>> FINAL ANSWER:"


def raw(turns: list[str], *, capped: bool = False, first: str = "Question: Add.\n\n2 3") -> dict:
    log = [SYSTEM, {"role": "user", "content": "ROUND 1:\n\n" + first}]
    for n, turn in enumerate(turns, start=2):
        log.append({"role": "assistant", "content": turn})
        if n <= len(turns) or capped:
            log.append({"role": "user", "content": NUDGE.format(n)})
    return {"input": "2 3", "target": "5", "message_log": log, "output": log[-1]["content"]}


def record(turns: list[str], method: str = "standard", **kw: object) -> BaselineRecord:
    return parse_baseline(raw(turns, **kw), line=1, task="add", method=method)


def test_a_nudged_then_answered_record_replays_the_same() -> None:
    result = replay_baseline(record(["It is five.", "Let me see.", ANSWER.format("5")]))
    assert result.same_final_answer and result.same_rounds and result.mismatches == []


def test_a_capped_record_has_no_answer_and_ours_neither() -> None:
    rec = record(["thinking", "still thinking"], capped=True)
    assert rec.capped and rec.final_answer is None
    result = replay_baseline(rec)
    assert result.same_final_answer and result.same_rounds


@pytest.mark.parametrize("method", BASELINES)
def test_a_turn_our_rule_would_read_differently_is_a_mismatch(method: str) -> None:
    first = "You are a sum expert.\n\nNow given the above identity background, please answer.\n\nQuestion: Add.\n\n2 3"
    # The harness took this answer; a record whose answer turn lost its marker makes
    # our method ask for one more turn than the record has.
    turns = ["no answer here", ANSWER.format("5").replace(">>", "")]
    result = replay_baseline(record(turns, method=method, first=first))
    assert not result.same_final_answer and not result.same_rounds
    assert [m.kind for m in result.mismatches] == ["replay_error"]


def test_expert_dynamic_answers_with_the_description_the_record_shows() -> None:
    from conductor.methods import get_method
    from conductor.replay.baselines import replay_config
    from conductor_kernel.run.loop import Conductor
    from experts.replay import TurnsReplayModel

    first = (
        "You are a careful adder of small numbers.\n\nNow given the above identity "
        "background, please answer the following question:\n\nQuestion: Add.\n\n2 3"
    )
    rec = record(["maybe five", ANSWER.format("5")], method="expert-dynamic", first=first)
    assert rec.identity == "You are a careful adder of small numbers."
    assert rec.question == "Add.\n\n2 3"
    model = TurnsReplayModel(rec.calls)
    conductor = Conductor(model, model, None, replay_config(rec), method=get_method(rec.method))
    events = list(conductor.run(rec.question))
    assert events[-1].final_answer == "5"  # type: ignore[attr-defined]
    assert rec.identity in model.requests[1] and rec.question in model.requests[1]
    assert rec.identity not in model.requests[0]


def test_bad_lines_and_records_are_reported_with_their_line(tmp_path: Path) -> None:
    folder = tmp_path / "ExpertDynamic"
    folder.mkdir()
    good = raw(
        [ANSWER.format("5")],
        first="You are X.\n\nNow given the above identity background, please answer the following question:\n\nQuestion: Add.\n\n2 3",
    )
    path = folder / "add.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(raw([ANSWER.format("5")])) + "\n")
    assert method_of_path(path) == "expert-dynamic"
    report = replay_baseline_file(path, "expert-dynamic")
    assert report.records == 1 and report.same_final_answer == 1
    assert report.read_problem and ":2:" in report.read_problem
    assert "no expert description" in report.read_problem


def _files(shared: Path) -> list[Path]:
    return sorted((shared / "transcripts" / "baselines").glob("*/*.jsonl"))


def test_a_sample_of_every_published_baseline_file_replays_the_same(shared_dir: Path) -> None:
    files = _files(shared_dir)
    assert {PUBLISHED_FOLDERS[f.parent.name] for f in files} == set(BASELINES)
    assert len(files) == 30
    for path in files:
        report = replay_baseline_file(path, method_of_path(path) or "", limit=25)
        assert report.records == 25 and report.read_problem is None
        assert report.same_final_answer == report.same_rounds == 25, report.mismatches[:3]


@pytest.mark.slow
def test_every_published_baseline_record_replays_the_same(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(p) for p in _files(shared_dir)]
    assert main(["replay", *files, "--markdown", "--jobs", "2", "--sandbox", "none"]) == 0
    table = capsys.readouterr().out
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- baseline-replay-table -->")[1].split(
        "<!-- /baseline-replay-table -->"
    )[0]
    assert table.strip() in block  # README's table is what the command prints
    for row in ("Standard", "0-CoT", "Expert static", "Expert dynamic", "Multi-persona"):
        line = next(x for x in table.splitlines() if x.startswith(f"| {row} |"))
        same, total = line.split("|")[-2].split("(")[0].strip().replace(",", "").split("/")
        assert int(same) / int(total) >= 0.99 and int(total) == 1350


def test_a_random_cap_and_answer_turn_replay_alike() -> None:
    rng = random.Random(7)
    for _ in range(60):
        k = rng.randint(1, 10)
        capped = rng.random() < 0.3
        turns = [f"step {n}" for n in range(k - 1)] + (
            [f"step {k}"] if capped else [ANSWER.format(rng.randint(0, 99))]
        )
        method = rng.choice(BASELINES)
        first = "You are a sum expert.\n\nNow given the above identity background, please answer.\n\nQuestion: Add.\n\n2 3"
        result = replay_baseline(record(turns, method=method, capped=capped, first=first))
        assert result.same_final_answer and result.same_rounds, (k, capped, method)
