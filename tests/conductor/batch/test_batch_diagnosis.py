"""A batch whose items all fail one way says so in one sentence with the fix, and its
exit code says that nothing of the model was graded (docs/batch.md, "Failures")."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from batch_support import OFFLINE, run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.batch.report import diagnose, render_markdown, summarize
from conductor.batch.session import NOTHING_SCORED

WORD_PROBLEMS = [
    {"id": f"q{n}", "input": f"Juan tiene {n} manzanas y come una. ¿Cuántas le quedan?",
     "target": str(n - 1)}
    for n in range(2, 6)
]  # fmt: skip


def test_a_task_the_demo_cannot_do_is_diagnosed_and_exits_nothing_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = write_jsonl(tmp_path / "mgsm.jsonl", list(WORD_PROBLEMS))
    args = [str(tasks), "--scorer", "exact", "--description", "Answer.", "--model", "demo"]
    code, out, _ = run_cli([*args, *OFFLINE, "--json"], capsys)
    report = json.loads(out)
    assert code == NOTHING_SCORED == 3
    assert report["failures"]["declined"] == len(WORD_PROBLEMS)
    assert report["accuracy"]["answers_scored"] == 0
    assert "cannot answer this question" in report["first_reasons"]["declined"]
    sentence = report["diagnosis"]
    assert sentence.startswith(f"{len(WORD_PROBLEMS)} of {len(WORD_PROBLEMS)} finished items")
    # Which tasks the demo can do, and how to configure a real model.
    assert "Game of 24" in sentence and "word sorting" in sentence
    assert "--model" in sentence and "OPENAI_BASE_URL" in sentence
    assert sentence in render_markdown(report)


# One way of failing per item: (status, error cause or None).
WAYS = [
    ("answered", None),
    ("declined", None),
    ("no_answer", None),
    ("limit", None),
    ("error", "sandbox"),
    ("error", "model"),
    ("error", "storage"),
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(WAYS), min_size=1, max_size=20))
def test_the_diagnosis_names_a_way_exactly_when_most_items_failed_that_way(
    ways: list[tuple[str, str | None]],
) -> None:
    records = []
    for n, (status, cause) in enumerate(ways):
        record: dict = {"item_id": f"i{n}", "final": True, "status": status, "reason": "why"}
        if cause:
            record["error"] = {"kind": "X", "cause": cause, "message": f"{cause} broke"}
        if status != "error":
            record["score"] = {"scored": True, "correct": status == "answered"}
        records.append(record)
    report = summarize(records, total=len(ways), header={"model": "m"})  # type: ignore[arg-type]
    assert report["errors_by_cause"] == dict(Counter(w[1] for w in ways if w[1]))
    sentence = diagnose(records, model="m")  # type: ignore[arg-type]
    assert report["diagnosis"] == sentence
    failing = [w for w in ways if w[0] != "answered"]
    top = max(set(failing), key=failing.count) if failing else None
    if top is None or 2 * failing.count(top) <= len(ways):
        assert sentence is None
        return
    assert sentence is not None and sentence.startswith(f"{failing.count(top)} of {len(ways)}")
    said = {"declined": "declined", "no_answer": "without an answer", "limit": "hit a limit"}
    assert (f"{top[1]} error" if top[1] else said[top[0]]) in sentence
    if top[0] == "error":
        assert "--retry-errors" in sentence
