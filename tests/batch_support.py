"""Helpers shared by the batch tests (tests/conductor/batch/): the wire
server's scripted replies, task files, the CLI, results.jsonl and a plan of numbered items.

Models are the real `openai` SDK against the local wire server (tests/equipment/wire_server.py),
or the scripted model where only the runner's bookkeeping is under test. The `wire`
fixture (tests/conftest.py) serves `consult_then_answer` to the CLI's `openai:` models.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conductor.batch.runner import BatchPlan
from conductor.cli import main
from conductor.scoring import score
from conductor.tasks.files import TaskItem
from conductor_kernel import prompts
from equipment.wire_server import Answer

ITEM = re.compile(r"item (\d+)")


def item_number(body: dict[str, Any]) -> int:
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    found = ITEM.findall(text)  # the last: recalled notes may name other items first
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
    for line in (folder / "results.jsonl").read_text(encoding="utf-8").split("\n"):
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def plan_for(tmp_path: Path, count: int, scorer: str = "exact") -> BatchPlan:
    items = [
        TaskItem(id=f"i{n:02d}", input=f"Double item {n}.", target=str(2 * n), line=n + 1)
        for n in range(count)
    ]

    def score_one(answer: str | None, item: TaskItem, sandbox: Any, output: str) -> Any:
        return score(scorer, answer, item, output=output or None).to_dict()

    return BatchPlan(tmp_path / "batch", "t-0123456789ab", "t", items, lambda i: i.input, score_one)


def real_sandbox() -> str:
    """A real sandbox backend for a batch's cells: bubblewrap (fast), else Docker; skips
    without either (fails under CONDUCTOR_REQUIRE_DOCKER=1)."""
    from sandbox.registry import probe
    from support import skip_or_fail

    for name in ("bwrap", "docker"):
        if probe(name) is None:
            return name
    skip_or_fail("no sandbox (bwrap or docker) for the batch", "CONDUCTOR_REQUIRE_DOCKER")
    return ""
