"""Correctness as a recorded field (issue 24): every run with a target or a checker is
scored when it ends and when it is imported, and `runs list`, `runs audit`, `runs show`,
the terminal diff and the HTML all read that one verdict."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from published_builder import retry_defect_record, sorting_record, write_file
from rich.cells import cell_len
from rich.console import Console

from conductor.cli import main
from conductor.cli.runs import _table
from conductor.export.diff import score_line
from conductor.export.html.run_page import known_score
from conductor.scoring.runs import score_run
from conductor_kernel.events import RunScored
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from record.fold import outline_file
from record.reader import read_transcript
from transcripts.importer import import_file
from transcripts.index import RunIndex
from transcripts.runs_schema import RunFilter

# record maker, and the findings the audit gives it (both have an answer only one expert
# or none confirmed; the retry defect's meta model wrote Expert Python's reply itself)
KINDS = {"clean": (sorting_record, {"unconf"}), "fake": (retry_defect_record, {"unconf", "fake"})}


def records_for(specs: list[tuple[str, bool]]) -> list[dict]:
    """Published word-sorting records: each kind, right or made wrong by its target."""
    out = []
    for kind, right in specs:
        record = KINDS[kind][0]()
        if not right:
            record["target"] = "zebra " + record["target"]  # the answer no longer matches
        out.append(record)
    return out


def import_specs(
    tmp_path: Path, specs: list[tuple[str, bool]], *, own_index: bool = False
) -> tuple[RunIndex, list[str]]:
    """Import the records; into CONDUCTOR_HOME's runs.db, or (`own_index`, for property
    tests whose examples share one home) a runs.db of their own."""
    source = write_file(tmp_path / "word_sorting.jsonl", *records_for(specs))
    index = RunIndex(tmp_path / "runs.db") if own_index else RunIndex()
    runs = tmp_path / "runs" if own_index else None
    report = import_file(source, index=index, score=score_run, runs_path=runs)
    return index, report.run_ids


def test_an_imported_run_is_scored_and_every_reader_shows_the_same_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, ids = import_specs(tmp_path, [("clean", True), ("clean", False)])
    for run_id, right in zip(ids, (True, False), strict=True):
        row = index.get(run_id)
        assert row is not None
        transcript = read_transcript(row["path"])
        [verdict] = [e for e in transcript.events if isinstance(e, RunScored)]
        assert verdict.correct is right and verdict.scorer == "exact" and verdict.detail
        assert transcript.events.index(verdict) > transcript.events.index(transcript.finished)
        run = outline_file(row["path"])
        label = "correct" if right else "wrong"
        assert run.correctness.label == label
        assert row["correct"] == int(right) and row["scorer"] == "exact"
        assert score_line(run).startswith(label)  # the terminal diff
        html = known_score(run)
        assert html is not None and html["correct"] is right  # the HTML
        assert main(["runs", "show", run_id]) == 0
        assert f"answer {label} (exact" in capsys.readouterr().out
    assert main(["runs", "list", "--json"]) == 0
    listed = {
        json.loads(line)["run_id"]: json.loads(line)["correct"]
        for line in capsys.readouterr().out.splitlines()
    }
    assert listed == {ids[0]: 1, ids[1]: 0}


@pytest.mark.parametrize(
    ("answer", "right"), [("(4 + 4) * (4 - 1)", True), ("4 * 4 + 4 + 1", False)]
)
def test_a_run_is_scored_when_it_ends(tmp_path: Path, answer: str, right: bool) -> None:
    from conductor.session import Session

    def meta(history) -> str:  # type: ignore[no-untyped-def]
        return f'>> FINAL ANSWER:\n"""\n{answer}\n"""'

    model = ScriptedModel(meta, lambda _n, _t: "unused")
    index = RunIndex()
    session = Session(
        meta_model=model, config=RunConfig(max_rounds=2), runs_path=tmp_path, index=index
    )
    events = list(session.solve("1 4 4 4", task="GameOf24"))
    verdicts = [e for e in events if isinstance(e, RunScored)]
    assert [v.correct for v in verdicts] == [right]
    assert verdicts[0].scored_at == "run end"
    row = index.get(events[0].run_id)
    assert row is not None and row["correct"] == int(right) and row["scorer"] == "game24"


@pytest.mark.parametrize(
    ("question", "task", "answer", "right"),
    [
        ("Use 4 5 6 10 to make 24", "GameOf24", "5 * 4 + 10 - 6", True),
        ("Use 4 5 6 10 to make 24", "", "5 * 4 + 10 - 6", True),  # recognised
        ("Use 4 5 6 10 to make 24", "", "24", False),
        (
            "Sort the following words alphabetically: List: pear apple fig",
            "",
            "apple fig pear",
            True,
        ),
    ],
)
def test_a_question_typed_as_a_task_is_judged_on_its_input(
    tmp_path: Path, question: str, task: str, answer: str, right: bool
) -> None:
    """The 24 a typed Game of 24 question names is the goal, not a number to use."""
    from conductor.session import Session

    model = ScriptedModel([f'>> FINAL ANSWER:\n"""\n{answer}\n"""'], lambda _n, _t: "")
    # The answer is scored as given: not sent back first by the task's own check.
    config = RunConfig(max_rounds=2, answer_check=False)
    session = Session(meta_model=model, config=config, runs_path=tmp_path)
    [verdict] = [e for e in session.solve(question, task=task) if isinstance(e, RunScored)]
    assert verdict.correct is right, verdict.detail


def test_a_question_no_scorer_knows_is_not_scored(tmp_path: Path) -> None:
    from conductor.session import Session

    model = ScriptedModel(['>> FINAL ANSWER:\n"""\nParis\n"""'], lambda _n, _t: "")
    session = Session(meta_model=model, config=RunConfig(max_rounds=2), runs_path=tmp_path)
    events = list(session.solve("What is the capital of France?"))
    assert not [e for e in events if isinstance(e, RunScored)]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.booleans()), min_size=1, max_size=6),
    st.sampled_from(["correct", "wrong", "unscored", None]),
    st.sampled_from(["fake", "unconf", "ctx", "any", None]),
)
def test_list_filters_by_correctness_and_finding(
    tmp_path_factory: pytest.TempPathFactory,
    specs: list[tuple[str, bool]],
    correctness: str | None,
    finding: str | None,
) -> None:
    index, ids = import_specs(tmp_path_factory.mktemp("imp"), specs, own_index=True)
    got = {
        r["run_id"]
        for r in index.list_runs(RunFilter(correctness=correctness, finding=finding), limit=None)
    }
    expected = set()
    for run_id, (kind, right) in zip(ids, specs, strict=True):
        label = "correct" if right else "wrong"
        badges = KINDS[kind][1]
        if correctness not in (None, label):
            continue
        if finding not in (None, "any") and finding not in badges:
            continue
        expected.add(run_id)
    assert got == expected


def test_list_wrong_with_a_finding_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, ids = import_specs(tmp_path, [("fake", False), ("fake", True), ("clean", False)])
    assert main(["runs", "list", "--wrong", "--finding", "fake", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["run_id"] for r in rows] == [ids[0]]
    assert "fake" in rows[0]["findings"].split()
    assert (
        main(["runs", "list", "--finding", "fabricated_reply", "--sort", "correctness", "--json"])
        == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["correct"] for r in rows] == [0, 1]  # wrong first
    assert main(["runs", "list", "--finding", "nonsense"]) == 2
    assert "fake" in capsys.readouterr().err


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(width=st.integers(min_value=30, max_value=220))
def test_list_is_one_line_a_run_at_any_width(
    tmp_path_factory: pytest.TempPathFactory, width: int
) -> None:
    index, ids = import_specs(
        tmp_path_factory.mktemp("w"), [("fake", False), ("clean", True)], own_index=True
    )
    rows = index.list_runs(limit=None)
    out = io.StringIO()
    _table(rows, False, Console(file=out, width=width, force_terminal=True, color_system=None))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 + len(rows)
    assert all(cell_len(line) <= width for line in lines)
    if width >= 70:  # room for the id: it is never cut (it is what `runs show` takes)
        for run_id in ids:
            assert any(run_id in line for line in lines)
        assert any(line.startswith("✗") for line in lines) and any(
            line.startswith("✓") for line in lines
        )


def test_audit_lists_only_flagged_runs_or_one_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, ids = import_specs(tmp_path, [("fake", False), ("clean", True), ("fake", True)])

    def audited(*flags: str) -> list[dict]:
        assert main(["runs", "audit", *ids, "--json", *flags]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        return [line for line in lines if "run_id" in line]

    everything = audited()
    assert len(everything) == 3
    flagged = audited("--only-flagged")
    assert flagged == [r for r in everything if r["findings"]] and flagged
    fake = audited("--finding", "fake")
    assert {r["run_id"] for r in fake} == {ids[0], ids[2]}
    assert all(r["counts"].get("fabricated_reply") for r in fake)
    assert [r["correctness"] for r in fake] == ["wrong", "correct"]
