"""Whether the last program to have an SQLite file open closed it, from SQLite's own signs.

Reading every page on each open (`PRAGMA quick_check`) cost 8 to 231 ms for runs.db of
1k to 50k runs, on every command. It earns that only after an unclean shutdown, and
SQLite leaves two signs of one: the last connection to close a WAL database checkpoints
and deletes its `-wal` file, and a rollback journal (`-journal`) is emptied at each
commit. So a `-wal` file with frames in it while no process holds a lock on the file or
its `-shm` index, or any non-empty `-journal`, means a process died with the file open
(kill -9, a crash, the machine going down).

Who holds a lock is read from /proc/locks, which lists every process's locks by inode:
nothing is opened, so none of SQLite's POSIX locks in this process are disturbed (closing
any descriptor of a file drops all of a process's locks on it). Where the answer cannot
be had (no /proc/locks), a WAL with frames counts as unclean: the check runs, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def locked_files(table: str) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of every file with a lock in a /proc/locks listing."""
    found: set[tuple[int, int, int]] = set()
    for line in table.splitlines():
        fields = [f for f in line.split() if f != "->"]  # "->": a waiter, still a holder's file
        if len(fields) < 6:
            continue
        parts = fields[5].split(":")
        if len(parts) != 3:
            continue
        try:
            found.add((int(parts[0], 16), int(parts[1], 16), int(parts[2])))
        except ValueError:
            continue
    return found


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino


def in_use(path: Path) -> bool | None:
    """Whether any process (this one included) holds a lock on the database or its
    `-shm` index; None when the system does not say."""
    try:
        table = PROC_LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    locked = locked_files(table)
    files = (_identity(path), _identity(Path(f"{path}-shm")))
    return any(f is not None and f in locked for f in files)


def closed_cleanly(path: Path) -> bool:
    """Whether `path` shows no sign of a process that died with it open. Call it before
    connecting: a connection of this process that has read counts as a holder."""
    if _size(Path(f"{path}-journal")) > 0:
        return False  # a hot journal: a writer died inside a transaction
    if _size(Path(f"{path}-wal")) == 0:
        return True  # the last close removed the WAL, or it holds no frames
    return in_use(path) is True  # a WAL in use by someone alive is theirs, not a crash's
