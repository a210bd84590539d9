"""`conductor runs audit`: findings of our runs and of the published transcripts."""

from __future__ import annotations

import json

from conductor.cli import main
from conductor.session import Session
from experts.scripted import ScriptedModel
from record.published import read_published
from transcripts.index import RunIndex

TURNS = (
    'Expert Reviewer:\n"""\nCheck the above list once more.\n"""',
    '>> FINAL ANSWER:\n"""\napple fig pear\n"""',
)


def scripted_run() -> str:
    session = Session(ScriptedModel(TURNS, lambda name, text: "fine"), index=RunIndex())
    return [e.run_id for e in session.solve("Sort pear apple fig", task="word_sorting")][-1]


def test_audit_of_a_run_by_id_prints_its_findings(capsys) -> None:
    run_id = scripted_run()
    assert main(["runs", "audit", run_id[:12]]) == 0
    out = capsys.readouterr().out
    assert "[ctx]" in out and "[unconf]" in out  # badges, not eaten as markup
    assert main(["runs", "audit", "--json"]) == 0  # no RUN: every run in runs.db
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["run_id"] == run_id
    assert lines[0]["counts"] == {"unconfirmed_answer": 1, "hidden_context": 1}
    assert lines[-1] == {
        "summary": {"word_sorting": {"runs": 1, "unconfirmed_answer": 1, "hidden_context": 1}}
    }


def test_an_unknown_run_says_what_to_give(capsys) -> None:
    assert main(["runs", "audit", "nope"]) == 2
    assert "no run matches 'nope'" in capsys.readouterr().err


def test_audit_of_a_published_file_matches_the_documented_counts(shared_dir, capsys) -> None:
    path = shared_dir / "transcripts/with-python/word_sorting.jsonl"
    assert main(["runs", "audit", str(path), "--json", "--summary"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]["word_sorting"]
    # docs/tui.md: every fabricated reply here is a record with the harness's retry defect.
    defects = sum(r.retry_defect for r in read_published(path).records)
    assert summary["runs"] == 250
    assert summary["fabricated_reply"] == defects == 22
    assert summary["nudged"] == 14 and summary.get("ignored_error", 0) == 0
