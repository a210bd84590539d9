"""`conductor runs reindex` rebuilds runs.db from every transcript the home holds (solves,
imports, batches), whatever happened to runs.db, and one hostile file never blocks it."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from published_builder import sorting_record, write_file

from conductor.cli import main
from transcripts.index import RunIndex


def _runs(capsys: pytest.CaptureFixture[str]) -> set[str]:
    capsys.readouterr()
    assert main(["runs", "list", "--json", "--limit", "1000"]) == 0
    return {json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()}


def _home_with_every_kind_of_run(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> set[str]:
    offline = ["--sandbox", "subprocess", "--no-learn", "--no-recall"]
    assert main(["solve", "Sort these words: pear apple fig", "--quiet", *offline]) == 0
    tasks = tmp_path / "tasks.jsonl"
    words = ("pear fig", "kiwi lime", "plum date")
    rows = [{"id": f"i{n}", "input": f"Sort these words: {w}"} for n, w in enumerate(words)]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    flags = ["--scorer", "exact", "--model", "demo", "--no-python", "--no-recall", "--no-learn"]
    # 1: not every answer right; 3: no answer scored (the demo declines what it cannot do)
    assert main(["batch", str(tasks), *flags]) in (0, 1, 3)
    published = write_file(tmp_path / "published.jsonl", sorting_record(), sorting_record("x"))
    assert main(["runs", "import", str(published)]) == 0
    runs = _runs(capsys)
    assert len(runs) == 1 + 3 + 2
    assert list(home.glob("batches/*/runs/*.jsonl"))  # the batch's runs live in its folder
    return runs


def _truncated(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 3)


def _bit_flipped(db: Path) -> None:
    data = bytearray(db.read_bytes())
    rng = random.Random(27)
    for _ in range(64):  # past the header, where the pages are
        at = rng.randrange(100, len(data))
        data[at] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))


def _a_directory(db: Path) -> None:
    db.unlink()
    db.mkdir()
    (db / "something").write_text("x")


def _deleted(db: Path) -> None:
    db.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncated,
    "bit-flipped": _bit_flipped,
    "a directory": _a_directory,
    "deleted": _deleted,
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_reindex_restores_every_run_after_damage(
    damage: str, isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _home_with_every_kind_of_run(isolated_home, tmp_path, capsys)
    db = isolated_home / "runs.db"
    RunIndex(db).conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("-wal", "-shm"):
        Path(str(db) + side).unlink(missing_ok=True)
    files = sorted(p for p in isolated_home.rglob("*.jsonl") if p.parent.name == "runs")
    before = {p: p.read_bytes() for p in files}
    DAMAGE[damage](db)
    capsys.readouterr()
    assert main(["runs", "reindex"]) == 0
    out = capsys.readouterr().out
    assert "indexed 6 transcripts" in out, out
    assert _runs(capsys) == runs
    assert {p: p.read_bytes() for p in files} == before  # the record untouched
    if damage != "deleted":
        assert list(isolated_home.glob("runs.db.corrupt-*")), "the damaged file is kept aside"


def test_one_hostile_transcript_does_not_block_the_rebuild(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offline = ["--sandbox", "subprocess", "--no-learn", "--no-recall", "--quiet"]
    for question in ("Sort these words: pear fig", "Sort these words: kiwi lime"):
        assert main(["solve", question, *offline]) == 0
    runs = _runs(capsys)
    folder = isolated_home / "batches" / "b-1" / "runs"
    folder.mkdir(parents=True)
    depth = 100_000
    (folder / "deep.jsonl").write_text(
        '{"kind": "run_started", "tags": ' + "[" * depth + "]" * depth + "}\n"
    )
    (folder / "bytes.jsonl").write_bytes(
        bytes(random.Random(1).randrange(256) for _ in range(4000))
    )
    (folder / "folder.jsonl").mkdir()
    os.unlink(isolated_home / "runs.db")
    capsys.readouterr()
    assert main(["runs", "reindex"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "indexed 2 transcripts" in out
    for name in ("deep.jsonl", "bytes.jsonl", "folder.jsonl"):
        assert f"not indexed: {folder / name}" in out, out
    assert _runs(capsys) == runs
    shutil.rmtree(folder)
