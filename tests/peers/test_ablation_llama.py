"""`conductor batch … --ablation` end to end against llama-server with SmolLM2-135M.

Six word-sorting items, two rounds each, short outputs: about a minute. SmolLM2 cannot
meta-prompt, so nothing here is about accuracy; the report must be whole and agree with
itself and with the recorded runs: the two arms ran the same items in the same order,
the flips add up to the accuracies, each arm has its tokens and cost, and what learning
cost (its runs and its own calls to the model) is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, spec
from servers import LlamaServer

from record.reader import read_transcript

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

ITEMS = [
    ["pear", "apple", "fig"], ["kiwi", "yam", "date"], ["lime", "plum", "beet"],
    ["okra", "zest", "leek"], ["rye", "oat", "corn"], ["mint", "sage", "dill"],
]  # fmt: skip


def test_the_ab_harness_runs_against_smollm2_and_its_report_adds_up(
    llama: LlamaServer, tmp_path: Path
) -> None:
    tasks = tmp_path / "sorting.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"w{n}", "input": "List: " + " ".join(words),
                        "target": " ".join(sorted(words))}) + "\n"
            for n, words in enumerate(ITEMS)
        ),
        encoding="utf-8",
    )  # fmt: skip
    proc = run_cli(
        "batch", str(tasks), "--task", "word_sorting", "--ablation", "7",
        "--model", spec("openai", "smollm2", llama), "--max-rounds", "2",
        "--sandbox", "subprocess", "--json",
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=1))

    learn, test = report["learn_items"], report["test_items"]
    assert sorted(learn + test) == sorted(f"w{n}" for n in range(len(ITEMS)))
    assert not set(learn) & set(test) and learn and test
    on, off = report["arms"]["recall_on"], report["arms"]["recall_off"]
    # Both arms ran the same items in the same order; the learning split ran its own.
    assert on["item_ids"] == off["item_ids"] == test
    assert report["learn"]["item_ids"] == learn
    n = len(test)
    for arm in (on, off):
        assert arm["items"] == n and 0 <= arm["correct"] <= n
        assert arm["accuracy"] == arm["correct"] / n
        assert arm["tokens"] > 0 and arm["cost_usd"] >= 0
    assert off["runs_shown_notes"] == 0
    # The flips add up to the two accuracies.
    paired = report["paired"]
    w2r, r2w = paired["wrong_to_right"], paired["right_to_wrong"]
    assert w2r + r2w + paired["both_right"] + paired["both_wrong"] == n
    assert on["correct"] == paired["both_right"] + w2r
    assert off["correct"] == paired["both_right"] + r2w
    assert abs(paired["change"] - (w2r - r2w) / n) < 1e-9
    low, high = paired["ci95"]
    assert low <= paired["change"] <= high
    # What learning cost: its runs, and the notebook's own calls to the model.
    assert report["learn"]["items"] == len(learn) and report["learn"]["tokens"] > 0
    calls = report["learn"]["learning_calls_usage"]
    assert calls["calls"] >= len(learn) and calls["tokens"] >= 0 and calls["cost_usd"] >= 0
    assert calls["estimated_tokens"] >= 0  # a learning call stopped part-way is estimated
    # Learning's tokens per item beside the run's, as the report prints them.
    per = len(learn)
    assert report["learn"]["run_tokens_per_item"] == round(report["learn"]["tokens"] / per, 1)
    assert report["learn"]["learning_tokens_per_item"] == round(calls["tokens"] / per, 1)

    # The report agrees with the recorded runs: one transcript per run, and their
    # tokens are the arms' and the learning split's.
    folder = Path(report["notebook"]).parent
    assert json.loads((folder / "ablation.json").read_text()) == report
    runs = [read_transcript(p) for p in (folder / "runs").glob("*.jsonl")]
    runs.sort(key=lambda t: t.started.ts if t.started else 0.0)
    assert len(runs) == len(learn) + 2 * n
    finished = [t.finished for t in runs]
    assert all(f is not None for f in finished)
    tokens = sum(f.usage.input_tokens + f.usage.output_tokens for f in finished if f)
    assert tokens == report["learn"]["tokens"] + on["tokens"] + off["tokens"]
    # Split A ran first and every run of it that ended on its own terms was learned;
    # the test split learned nothing.
    learnable = ("answered", "limit", "no_answer")
    for number, run in enumerate(runs):
        wrote = [e for e in run.events if e.kind == "notes_written"]
        ended = run.finished.status if run.finished else ""
        assert len(wrote) == (1 if number < len(learn) and ended in learnable else 0)
