"""`conductor score`: published outputs, the paper's Table 1, and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conductor.cli import main

# (run, task) -> correct of 250 (GameOf24: of 100) under the paper's rule: Table 1.
PAPER_TABLE_1 = {
    ("with-python", "GameOf24"): 67,
    ("without-python", "GameOf24"): 11,
    ("with-python", "word_sorting"): 249,
    ("without-python", "word_sorting"): 210,
    ("with-python", "MGSM_ES"): 226,
    ("without-python", "MGSM_ES"): 231,
    ("with-python", "MGSM_FR"): 215,
    ("without-python", "MGSM_FR"): 222,
    ("with-python", "multistep_arithmetic_two"): 225,  # 90.0
    ("without-python", "multistep_arithmetic_two"): 212,  # 84.8
    ("with-python", "geometric_shapes"): 148,  # 59.2
    ("without-python", "geometric_shapes"): 146,  # 58.4
}
# Ours on the same files; every difference is explained in docs/scoring.md.
OURS = {
    ("with-python", "MGSM_ES"): 228,
    ("without-python", "MGSM_ES"): 234,
    ("with-python", "MGSM_FR"): 221,
    ("without-python", "MGSM_FR"): 226,
    ("with-python", "geometric_shapes"): 150,
    ("without-python", "geometric_shapes"): 147,
}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    assert main(["score", "--json", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def published(shared_dir: Path) -> list[str]:
    runs = shared_dir / "transcripts"
    return [
        str(p)
        for run in ("with-python", "without-python")
        for p in sorted((runs / run).glob("*.jsonl"))
    ]


@pytest.mark.shared
def test_paper_rule_reproduces_table_1_exactly(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = run_json(capsys, "--rule", "paper", *published(shared_dir))
    got = {(Path(r["file"]).parent.name, r["task"]): r["correct"] for r in rows}
    assert got == PAPER_TABLE_1
    for row in rows:
        assert row["rule"] == "paper" and row["accuracy"] == row["paper_accuracy"]
        assert row["accuracy"] == round(100 * row["correct"] / row["n"], 2)
        assert row["n"] == (100 if row["task"] == "GameOf24" else 250)


@pytest.mark.shared
def test_our_rule_agrees_or_deviates_as_documented(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = run_json(capsys, *published(shared_dir))
    for row in rows:
        key = (Path(row["file"]).parent.name, row["task"])
        assert row["correct"] == row["ours_correct"] == OURS.get(key, PAPER_TABLE_1[key]), key
        if key not in OURS:  # where we agree with the paper, within 0.5 points: exactly
            assert row["disagreements"] == 0, key
    documented = (Path(__file__).resolve().parents[3] / "docs" / "scoring.md").read_text()
    for (run, task), correct in {**PAPER_TABLE_1, **OURS}.items():
        of = 100 if task == "GameOf24" else 250
        assert f"{correct}/{of}" in documented, (run, task)


@pytest.mark.shared
def test_table_and_diff_show_both_rules(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = shared_dir / "transcripts" / "without-python" / "geometric_shapes.jsonl"
    assert main(["score", str(path), "--diff"]) == 0
    out = capsys.readouterr().out
    assert "146 = 58.4" in out and "147 = 58.8" in out
    assert "geometric_shapes.jsonl:189 ours=✓ paper=✗" in out and "I (sector)" in out


def err(capsys: pytest.CaptureFixture[str]) -> str:
    """Stderr with rich's line wrapping undone."""
    return " ".join(capsys.readouterr().err.split())


def write_outputs(path: Path, *records: dict | str) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def record(question: str, target: str, answer: str | None) -> dict:
    last = "I could not finish." if answer is None else f'>> FINAL ANSWER:\n"""\n{answer}\n"""'
    return {"input": question, "target": target, "output": f"Checked twice.\n\n{last}"}


def test_scores_a_small_file_with_both_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_outputs(
        tmp_path / "word_sorting.jsonl",
        record("Sort: b a", "a b", "a b"),
        record("Sort: d c", "c d", "c  d"),  # ours forgives the double space
        record("Sort: f e", "e f", None),
        {"input": "Sort: h g", "output": '>> FINAL ANSWER:\n"""\ng h\n"""'},  # no target
    )
    (row,) = run_json(capsys, str(path))
    assert row["task"] == "word_sorting" and row["scorer"] == "exact"
    assert (row["n"], row["correct"], row["accuracy"]) == (3, 2, 66.67)
    assert (row["paper_correct"], row["no_answer"], row["unscored"]) == (1, 1, 1)
    (row,) = run_json(capsys, "--rule", "paper", str(path))
    assert (row["correct"], row["accuracy"]) == (1, 33.33)


def test_task_flag_overrides_the_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_outputs(tmp_path / "run7.jsonl", record("1 2 3 4", "24", "(1 + 2 + 3) * 4"))
    (row,) = run_json(capsys, "--task", "GameOf24", str(path))
    assert (row["task"], row["correct"]) == ("GameOf24", 1)
    assert main(["score", str(path)]) == 2
    assert "matches no built-in task" in err(capsys)


def test_bad_lines_stop_or_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_outputs(
        tmp_path / "MGSM_ES.jsonl",
        record("¿2 + 2?", "4", "4"),
        "{broken",
        {"input": "¿3 + 3?", "target": "6"},  # a task item, not an output
    )
    assert main(["score", str(path)]) == 2
    assert f"{path}:2: not valid JSON" in err(capsys)
    (row,) = run_json(capsys, "--on-bad-line", "skip", str(path))
    assert (row["n"], row["correct"], row["skipped_lines"]) == (1, 1, 2)


def test_missing_file_and_unknown_task_say_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(tmp_path / "GameOf24.jsonl")]) == 2
    assert "no such file" in err(capsys)
    assert main(["score", "--task", "Chess", str(tmp_path / "x.jsonl")]) == 2
    assert "built-in tasks: GameOf24" in err(capsys)


SAT = "def sat(li: List[int]):\n    return len(li) == 10 and li.count(li[3]) == 2"


def p3_outputs(tmp_path: Path) -> Path:
    good = "def solution():\n    return list(range(5)) * 2"
    own_sat = "def sat(li):\n    return True\n\ndef solution():\n    return []"
    return write_outputs(
        tmp_path / "P3_Test.jsonl",
        *(
            {"input": SAT, "target": "", "output": f'>> FINAL ANSWER:\n"""\n{a}\n"""'}
            for a in (good, own_sat)
        ),
    )


@pytest.mark.slow
def test_p3_outputs_run_in_a_real_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox.registry import probe

    why_not = probe("bwrap")
    if why_not is not None:
        if os.environ.get("CONDUCTOR_REQUIRE_DOCKER") == "1":
            pytest.fail(f"bubblewrap cannot run here: {why_not} (CONDUCTOR_REQUIRE_DOCKER=1)")
        pytest.skip(f"bubblewrap cannot run here: {why_not}")
    (row,) = run_json(capsys, "--sandbox", "bwrap", str(p3_outputs(tmp_path)))
    assert (row["n"], row["ours_correct"], row["paper_correct"]) == (2, 1, 2)


def test_p3_refuses_the_unsafe_subprocess_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", "--sandbox", "subprocess", str(p3_outputs(tmp_path))]) == 2
    assert "use --sandbox docker or bwrap" in err(capsys)
