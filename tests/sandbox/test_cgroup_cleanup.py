"""Sandbox cgroups a killed host left behind are removed by the next sandbox's start.

kill -9 of the conductor ends a bubblewrap sandbox's processes (bwrap dies with its
parent), but the empty cgroup directory stays. `remove_stale` removes those that are
empty and old, and never one still holding a process or one just made (another host's
sandbox may be starting in it). Directories here stand in for cgroups: `rmdir` of one
that is not empty fails as it does for a cgroup with a process in it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox.policy.cgroups import PREFIX, STALE_AFTER_S, remove_stale


def make(parent: Path, name: str, *, age: float, busy: bool = False) -> Path:
    directory = parent / name
    directory.mkdir()
    if busy:
        (directory / "cgroup.procs").write_text("1234\n")
    stamp = time.time() - age
    os.utime(directory, (stamp, stamp))
    return directory


def test_only_old_empty_sandbox_cgroups_go(tmp_path: Path) -> None:
    old = STALE_AFTER_S + 30
    stale = make(tmp_path, f"{PREFIX}aaa", age=old)
    busy = make(tmp_path, f"{PREFIX}bbb", age=old, busy=True)
    young = make(tmp_path, f"{PREFIX}ccc", age=1)
    other = make(tmp_path, "someone-elses", age=old)
    removed = remove_stale([tmp_path, tmp_path / "missing"])
    assert removed == [stale] and not stale.exists()
    assert busy.exists() and young.exists() and other.exists()
