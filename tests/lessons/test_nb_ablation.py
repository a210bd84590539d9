"""The notebook's A/B harness end to end: learn on one split, test the other with recall
on and off, in the same order, with real sessions, a real notebook and code really run."""

from __future__ import annotations

import json
import re
from itertools import islice
from pathlib import Path

import pytest

from conductor.batch.ablation import AblationPlan, paired_change, run_ablation, split
from conductor.batch.setup import make_scorer
from conductor.cli import main
from conductor.config import load_settings
from conductor.scoring.notebook import open_notebook
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec
from conductor_kernel.interfaces import Message
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from sandbox.subprocess_backend import SubprocessSandbox

WORDS = [
    ["pear", "apple", "fig"], ["yam", "kiwi", "date"], ["plum", "lime", "beet"],
    ["oat", "corn", "rye"], ["sage", "dill", "mint"], ["tea", "nut", "bay"],
    ["zest", "okra", "leek"], ["rice", "bran", "wheat"], ["lotus", "acai", "cress"],
    ["taro", "kale", "bean"],
]  # fmt: skip
PROGRAM = "words = {words!r}\nprint(' '.join(sorted(words)))"


def items() -> list[TaskItem]:
    return [
        TaskItem(
            id=f"i{n}",
            input="Sort the following words alphabetically: List: " + " ".join(words),
            target=" ".join(sorted(words)),
        )
        for n, words in enumerate(WORDS)
    ]


def competent(history: list[Message]) -> str:
    """Sorts with a program every time (the learning phase's model)."""
    last = history[-1].content
    if last.startswith("ROUND 1"):
        words = re.findall(r"List: (.+)", last)[-1].split()
        return f'Expert Python:\n"""\nSort: {" ".join(words)}\n"""'
    printed = re.search(r"stdout:\n```\n(.*?)\n```", last, re.S)
    return f'>> FINAL ANSWER:\n"""\n{printed.group(1) if printed else "?"}\n"""'


def naive(history: list[Message]) -> str:
    """Answers by eye (the list as given) unless the notebook hands it a tool to run."""
    last = history[-1].content
    if last.startswith("ROUND 1"):
        tool = re.search(r"Written out for this question:.*?```python\n(.*?)\n```", last, re.S)
        if tool:
            return f'Expert Python:\n"""\nRun:\n{tool.group(1)}\n"""'
        words = re.findall(r"List: (.+)", last)[-1]
        return f'>> FINAL ANSWER:\n"""\n{words}\n"""'
    printed = re.search(r"stdout:\n```\n(.*?)\n```", last, re.S)
    return f'>> FINAL ANSWER:\n"""\n{printed.group(1) if printed else "?"}\n"""'


def expert(_name: str, instruction: str) -> str:
    if instruction.startswith("Run:"):
        return f"```python\n{instruction[4:].strip()}\n```\nPlease run this code!"
    words = instruction.split(": ", 1)[1].split()
    return f"```python\n{PROGRAM.format(words=words)}\n```\nPlease run this code!"


def test_the_ab_harness_reports_the_notebooks_effect(tmp_path: Path) -> None:
    spec = get_spec("word_sorting")
    settings = load_settings({"sandbox": "subprocess"})

    def make_session(_item: TaskItem, phase: str) -> Session:
        model = ScriptedModel(competent if phase == "learn" else naive, expert)
        return Session(model, model, SubprocessSandbox(), RunConfig(max_rounds=4),
                       runs_path=tmp_path / "runs")  # fmt: skip

    plan = AblationPlan(
        spec, items(), lambda item: spec.prompt(item.input), make_session,
        make_scorer(spec, "subprocess", settings), tmp_path / "ab.db", seed=3,
    )  # fmt: skip
    report = run_ablation(plan, progress=lambda _text: None)
    assert not set(report["learn_items"]) & set(report["test_items"])
    assert len(report["learn_items"]) + len(report["test_items"]) == len(WORDS)
    n = len(report["test_items"])
    on, off = report["arms"]["recall_on"], report["arms"]["recall_off"]
    assert (on["correct"], off["correct"]) == (n, 0)  # the tool made the difference
    assert on["runs_shown_notes"] == n and off["runs_shown_notes"] == 0
    paired = report["paired"]
    assert paired["wrong_to_right"] == n and paired["right_to_wrong"] == 0
    assert paired["change"] == 1.0 and paired["ci95"][0] > 0
    assert on["tokens"] > 0 and off["tokens"] > 0 and report["learn"]["tokens"] > 0
    # Learning went into the ablation's notebook, from split A only.
    book = open_notebook(tmp_path / "ab.db")
    learned = {r["run_id"] for r in book.read("select run_id from distilled_runs")}
    assert len(learned) == len(report["learn_items"])
    assert book.read_one("select count(*) n from tools")["n"] >= 1


@pytest.mark.slow
def test_the_harness_with_replayed_runs_sees_no_effect(shared_dir: Path, tmp_path: Path) -> None:
    from conductor.replay.runner import question_of, replay_config
    from experts.replay import ReplayModel
    from record.published import parse_record

    path = shared_dir / "transcripts" / "with-python" / "word_sorting.jsonl"
    raws = [json.loads(line) for line in islice(path.open(encoding="utf-8"), 6)]
    records = {
        f"w{i}": parse_record(raw, line=i + 1, task="word_sorting") for i, raw in enumerate(raws)
    }
    task_items = [TaskItem(id=k, input=raws[i]["input"], target=raws[i]["target"])
                  for i, k in enumerate(records)]  # fmt: skip
    spec = get_spec("word_sorting")

    def make_session(item: TaskItem, _phase: str) -> Session:
        record = records[item.id]
        model = ReplayModel(record)
        return Session(model, model, SubprocessSandbox(), replay_config(record.notice_round),
                       runs_path=tmp_path / "runs")  # fmt: skip

    plan = AblationPlan(
        spec, task_items, lambda item: question_of(records[item.id]), make_session,
        make_scorer(spec, "subprocess", load_settings({})), tmp_path / "ab.db",
    )  # fmt: skip
    report = run_ablation(plan, progress=lambda _text: None)
    on, off = report["arms"]["recall_on"], report["arms"]["recall_off"]
    # A replayed run says what it said in 2023, notes or not: no flips either way.
    assert on["correct"] == off["correct"] == len(report["test_items"])
    assert report["paired"]["wrong_to_right"] == report["paired"]["right_to_wrong"] == 0


def test_paired_change_and_split() -> None:
    change = paired_change([True, True, False, True], [False, True, False, False])
    assert change["change"] == 0.5 and change["wrong_to_right"] == 2
    assert change["ci95"][0] < 0.5 < change["ci95"][1]
    a, b = split(items(), seed=1, share_a=0.5)
    assert {i.id for i in a}.isdisjoint({i.id for i in b}) and len(a) == len(b) == 5
    assert [i.id for i in split(items(), seed=1, share_a=0.5)[0]] == [i.id for i in a]


def test_batch_ablation_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_file = tmp_path / "word_sorting.jsonl"
    task_file.write_text(
        "".join(json.dumps({"input": i.input, "target": i.target}) + "\n" for i in items()[:4])
    )
    code = main(["batch", str(task_file), "--ablation", "5", "--model", "demo",
                 "--sandbox", "subprocess", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and report["task"] == "word_sorting" and report["seed"] == 5
    assert len(report["learn_items"]) == 2 and len(report["test_items"]) == 2
    assert set(report["arms"]) == {"recall_on", "recall_off"}
    # The notebook is the ablation's own, in its folder, not the default one.
    assert Path(report["notebook"]).parent.parent.name == "ablations"
    assert (Path(report["notebook"]).parent / "ablation.json").exists()


def test_a_batch_learns_into_a_notebook_named_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from record.home import home_dir

    task_file = tmp_path / "word_sorting.jsonl"
    task_file.write_text(
        "".join(json.dumps({"input": i.input, "target": i.target}) + "\n" for i in items()[:2])
    )
    code = main(["batch", str(task_file), "--model", "demo", "--sandbox", "subprocess",
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code in (0, 1) and report["notebook"]["path"].endswith("batch-word_sorting.db")
    assert not (home_dir() / "notebook.db").exists()  # the user's notebook is untouched
