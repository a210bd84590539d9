"""`conductor runs audit` of every run answers from the audits runs.db stored as each run
was indexed, reading no transcript, and says exactly what auditing every transcript
again (`--reread`) says; a run with no stored audit is read from its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import record.reader
from conductor.cli import main
from conductor.session import Session
from experts.scripted import ScriptedModel
from transcripts.index import RunIndex

# Scripts whose runs differ in what the audit finds and in whether they are scored.
SCRIPTS: list[tuple[tuple[str, ...], str | None]] = [
    (  # leans on context, unconfirmed; scored right
        (
            'Expert Reviewer:\n"""\nCheck the above list once more.\n"""',
            '>> FINAL ANSWER:\n"""\napple fig pear\n"""',
        ),
        "apple fig pear",
    ),
    (  # nudged once, then answers wrong (told by the task's check, it says it again)
        (
            "Let me think about the order first.",
            '>> FINAL ANSWER:\n"""\npear fig apple\n"""',
            '>> FINAL ANSWER:\n"""\npear fig apple\n"""',
        ),
        "apple fig pear",
    ),
    (  # confirmed by an expert; not scored (no target)
        (
            'Expert Sorter:\n"""\nSort these words: pear apple fig\n"""',
            '>> FINAL ANSWER:\n"""\napple fig pear\n"""',
        ),
        None,
    ),
]


def _home_of_runs() -> list[str]:
    ids = []
    for turns, target in SCRIPTS:
        session = Session(
            ScriptedModel(turns, lambda name, text: "apple fig pear"), index=RunIndex()
        )
        events = list(session.solve("Sort pear apple fig", task="word_sorting", target=target))
        ids.append(events[-1].run_id)
    return ids


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    assert main(["runs", "audit", *args]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every transcript the audit reads."""
    seen: list[Path] = []
    real = record.reader.read_transcript

    def counted(path: str | Path) -> record.reader.Transcript:
        seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(record.reader, "read_transcript", counted)
    return seen


@pytest.mark.parametrize("form", [("--json",), (), ("--summary",), ("--json", "--only-flagged")])
def test_every_run_is_audited_from_runs_db_as_from_the_transcripts(
    form: tuple[str, ...], capsys: pytest.CaptureFixture[str], reads: list[Path]
) -> None:
    ids = _home_of_runs()
    reads.clear()
    stored = _audit(capsys, *form)
    assert reads == []  # no transcript read
    again = _audit(capsys, *form, "--reread")
    assert len(reads) == len(ids)
    assert stored == again
    if form == ("--json",):
        rows = [json.loads(line) for line in stored[0].splitlines()[:-1]]
        assert [r["run_id"] for r in rows] == ids
        assert [r["correctness"] for r in rows] == ["correct", "wrong", "unscored"]
        assert rows[1]["counts"].get("nudged") == 1


def test_a_run_without_a_stored_audit_is_read_from_its_transcript(
    capsys: pytest.CaptureFixture[str], reads: list[Path]
) -> None:
    ids = _home_of_runs()
    cut = Path(RunIndex().get(ids[0])["path"])  # type: ignore[index]
    with cut.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")  # read up to here, with a warning, by every audit
    assert main(["runs", "reindex"]) == 0
    capsys.readouterr()
    reads.clear()
    stored = _audit(capsys, "--json")
    assert reads == [cut]
    assert "warning:" in stored[1] and cut.name in stored[1].replace("\n", "")
    assert stored == _audit(capsys, "--json", "--reread")
