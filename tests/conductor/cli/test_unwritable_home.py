"""A data folder on a read-only or full file system, or that cannot be created: a clear
message saying what to do, never a traceback, and nothing recorded is changed. Real
file systems: small tmpfs mounts (root only; skipped elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SOLVE = ["solve", "Sort these words: pear apple fig", "--model", "demo"]
SOLVE += ["--sandbox", "subprocess", "--quiet", "--no-learn"]


def conductor(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conductor.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "CONDUCTOR_HOME": str(home)},
        timeout=120,
    )


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "fs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _clear(done: subprocess.CompletedProcess[str], *words: str) -> str:
    err = " ".join(done.stderr.split())
    assert done.returncode == 2, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.slow
def test_a_read_only_home_is_named_and_its_runs_are_unchanged(tmpfs: Path) -> None:
    assert conductor(tmpfs, *SOLVE).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmpfs / "runs").iterdir()}
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    err = _clear(conductor(tmpfs, *SOLVE), "read-only", "CONDUCTOR_HOME")
    assert "Move it aside" not in err  # the database is fine: it must not be moved
    _clear(conductor(tmpfs / "new", *SOLVE), "cannot create", "CONDUCTOR_HOME")
    _clear(conductor(tmpfs / "new", "runs", "list"), "cannot create", "CONDUCTOR_HOME")
    assert {p.name: p.read_bytes() for p in (tmpfs / "runs").iterdir()} == before


@pytest.mark.slow
def test_a_full_disk_is_named(tmpfs: Path) -> None:
    assert conductor(tmpfs, *SOLVE).returncode == 0
    free = os.statvfs(tmpfs).f_bavail * os.statvfs(tmpfs).f_frsize
    with (tmpfs / "filler").open("wb") as fh:
        fh.write(b"\0" * max(0, free - 4096))
    for wal in tmpfs.glob("runs.db-*"):
        wal.unlink()  # as after a clean close: opening must create them again
    err = _clear(conductor(tmpfs, "runs", "list"), "full", "Free some space")
    assert "Move it aside" not in err


@pytest.mark.slow
def test_a_home_that_is_a_file_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    _clear(conductor(home, "runs", "list"), "cannot create", str(home))
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "runs").write_text("not a folder")
    _clear(conductor(tmp_path / "ok", *SOLVE), "cannot create", "runs")
