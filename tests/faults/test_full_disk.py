"""A full disk is an error like any other: every command that meets it says so without
a traceback, and a transcript it cut short is marked ended (error: disk full) and
indexed by the next command, so nothing written before is lost from view."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conductor.cli import main

OFFLINE = ["--sandbox", "subprocess", "--no-learn", "--no-recall", "--quiet"]


def _listed(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    capsys.readouterr()
    assert main(["runs", "list", "--json", "--limit", "1000"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return {str(row["run_id"]): row for row in rows}


def _transcripts(home: Path) -> set[str]:
    return {p.stem for p in home.rglob("*.jsonl") if p.parent.name == "runs"}


def _no_traceback(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    out, err = capsys.readouterr()
    text = out + err + caplog.text
    assert "Traceback" not in text
    caplog.clear()
    return text


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 400 kB tmpfs, or a skip saying why there is none (mounting needs root)."""
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


FULL = re.compile(r"the disk (holding it )?is full")


def _command(home: Path, *args: str) -> tuple[int, str]:
    """One conductor command in a process of its own, as a user runs them: its exit
    code and everything it printed, checked for a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "conductor.cli", *args],
        env={**os.environ, "CONDUCTOR_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    return done.returncode, text


def _listed_in(home: Path) -> dict[str, dict[str, object]]:
    code, text = _command(home, "runs", "list", "--json", "--limit", "1000")
    assert code == 0, text
    rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return {str(row["run_id"]): row for row in rows}


@pytest.mark.slow
def test_a_full_disk_is_a_message_and_its_cut_runs_are_ended_and_indexed_next_time(
    small_disk: Path, isolated_home: Path, tmp_path: Path
) -> None:
    # Each command is a process of its own, as at a shell: runs.db's write-ahead log is
    # folded back when a process ends, not while one process goes on issuing commands.
    home = small_disk / "home"
    assert _command(home, "solve", "Sort these words: pear apple fig", *OFFLINE)[0] == 0
    before = _listed_in(home)
    assert len(before) == 1
    filler = _fill(small_disk)
    for words in ("kiwi lime", "plum date"):
        code, text = _command(home, "solve", f"Sort these words: {words}", *OFFLINE)
        assert code in (0, 2) and FULL.search(text), text
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"input": f"Sort these words: {w}"}) + "\n" for w in "ab"))
    flags = ["--scorer", "exact", "--model", "demo", "--no-python", "--no-recall", "--no-learn"]
    code, text = _command(home, "batch", str(tasks), *flags)
    assert code == 2 and FULL.search(text), text

    filler.unlink()  # room again: the next command ends and indexes what was cut
    code, text = _command(home, "solve", "Sort these words: fig date", *OFFLINE)
    assert code == 0, text
    listed = _listed_in(home)
    assert _transcripts(home) <= set(listed), "every transcript on disk is indexed"
    assert set(before) <= set(listed)
    # A command that meets the full disk before its run starts records nothing; a run
    # the disk cut short is ended `error` (disk full). Either way nothing is "answered"
    # that was not, and the run after the disk has room again is.
    assert listed[max(listed, key=lambda r: float(listed[r]["started_at"]))]["status"] == "answered"
    cut = [run for run in listed.values() if run["status"] != "answered"]
    assert all(run["status"] == "error" for run in cut), cut
    for run in cut:
        code, text = _command(home, "runs", "show", str(run["run_id"]))
        assert code == 0 and "disk full" in " ".join(text.split()), text


def test_a_transcript_the_disk_cut_is_said_once_and_ended_next_time(
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The same with ENOSPC injected into the transcript's and runs.db's writes."""
    import sqlite3

    import record.writer
    from transcripts.index import RunIndex

    real_write = os.write
    room = {"bytes": 700}  # the run's first line fits only in part

    def write(fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            if room["bytes"] <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            data = bytes(data)[: room["bytes"]]
            room["bytes"] -= len(data)
        return real_write(fd, data)

    def no_index(self: RunIndex, fn: object) -> object:
        raise sqlite3.OperationalError("database or disk is full")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(record.writer.os, "write", write)
        patch.setattr(RunIndex, "write", no_index)
        assert main(["solve", "Sort these words: pear apple fig", *OFFLINE]) == 0
    text = _no_traceback(capsys, caplog)
    assert text.count("the disk is full") == 1, text  # said once, not once per event
    (path,) = (isolated_home / "runs").glob("*.jsonl")
    assert not path.read_bytes().endswith(b"\n")  # cut mid-line
    assert main(["solve", "Sort these words: kiwi lime", *OFFLINE]) == 0
    listed = _listed(capsys)
    assert listed[path.stem]["status"] == "error"
    assert "disk full" in path.read_text(encoding="utf-8")


def test_a_line_the_disk_cuts_after_the_runs_end_is_taken_back(tmp_path: Path) -> None:
    """A `run_scored` (or anything after `run_finished`) that the disk cuts leaves no
    torn line: the transcript ends on its last whole event, which nothing repairs."""
    import record.writer
    from conductor_kernel.events import RunFinished, RunScored, RunStarted
    from record.reader import read_transcript
    from record.writer import DiskFull, TranscriptWriter

    real_write = os.write
    path = tmp_path / "run.jsonl"
    with TranscriptWriter(path) as writer:
        writer.handle(RunStarted(run_id="r", question="q"))
        writer.handle(RunFinished(run_id="r", status="answered"))
        size = path.stat().st_size

        room = {"bytes": 300}  # part of the line fits, then none

        def half(fd: int, data: bytes) -> int:
            if room["bytes"] <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            taken = real_write(fd, bytes(data)[: room["bytes"]])
            room["bytes"] -= taken
            return taken

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(record.writer.os, "write", half)
            with pytest.raises(DiskFull):
                writer.handle(RunScored(run_id="r", correct=True, detail="x" * 500))
    assert path.stat().st_size == size
    transcript = read_transcript(path)
    assert transcript.problem is None and transcript.finished is not None
