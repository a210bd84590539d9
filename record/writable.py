"""Why a folder cannot be written, in words that name the true cause.

Asked only after a write failed (the cause is then looked for, never guessed ahead):
a file where the folder should be, a read-only file system, a pseudo file system such as
/proc or /sys that holds no files of ours, a full disk, or no permission. SQLite says
only "unable to open database file", so the folder is probed with a file of our own.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

FULL = (errno.ENOSPC, errno.EDQUOT)
MIN_FREE_BYTES = 256 * 1024  # room a database needs beside it for its WAL and index


def probe(folder: Path) -> OSError | None:
    """The error creating a file in `folder` meets, or None when it can be written."""
    try:
        fd, name = tempfile.mkstemp(prefix=".conductor-probe-", dir=folder)
    except OSError as exc:
        return exc
    os.close(fd)
    os.unlink(name)
    return None


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def why_unwritable(path: Path, exc: OSError | None = None) -> str | None:
    """What stops writing in folder `path` (a clause), or None when nothing does."""
    found = _existing(path)
    if found.exists() and not found.is_dir():
        if found == path:
            return f"{path} is a file, not a folder"
        return f"{found} is a file, so no folder can be made inside it"
    try:
        fs = os.statvfs(found)
    except OSError:
        fs = None
    if fs is not None and fs.f_flag & os.ST_RDONLY:
        return f"{found} is on a read-only file system"
    real = fs is not None and fs.f_blocks > 0
    if (exc is not None and exc.errno in FULL) or (
        real and fs is not None and fs.f_bavail * fs.f_frsize < MIN_FREE_BYTES
    ):
        return f"the disk holding {found} is full"
    if exc is None and found == path:
        exc = probe(path)
        if exc is None:
            return None
    if not real:
        # /proc, /sys and their kind report no blocks at all: nothing of ours fits there.
        return f"{found} is on a pseudo file system (like /proc or /sys) that holds no files"
    if exc is not None and exc.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to write in {found}"
    if exc is not None:
        return f"{found} cannot be written ({exc.strerror or exc})"
    return None


def is_disk_full(path: Path) -> bool:
    """Too little space left in folder `path` on a real file system (a pseudo one, which
    reports no space at all, is not full)."""
    try:
        fs = os.statvfs(_existing(path))
    except OSError:
        return False
    return fs.f_blocks > 0 and fs.f_bavail * fs.f_frsize < MIN_FREE_BYTES


def home_message(home: Path, cause: str) -> str:
    """The one line a command ends with when its data folder cannot be written."""
    fix = "Point CONDUCTOR_HOME (or --home) at a writable folder"
    if cause.startswith("the disk holding"):
        fix = "Free some space and run again, or point CONDUCTOR_HOME (or --home) elsewhere"
    return f"cannot write in the data folder {home}: {cause}. {fix}; nothing recorded was changed."


def writable_home() -> Path:
    """The data folder, made if missing, refused in one line when it cannot be written:
    for a command (`serve`) that would otherwise start and fail on its first write."""
    from conductor_kernel.errors import ConfigError
    from record.home import home_dir

    home = home_dir()
    cause = why_unwritable(home)
    if cause is not None:
        raise ConfigError(home_message(home, cause))
    return home


# What a failed write's errno can say about the folder it went into.
_UNWRITABLE = (
    errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST, errno.ENOENT,
)  # fmt: skip


def failed_write_message(exc: OSError) -> str | None:
    """The one line a command ends with after a write failed for want of room, or
    because the data folder cannot be written (read-only, a pseudo file system, a file in
    the way, no permission); None for any other failure, which stays a failure of its own."""
    if exc.errno in FULL:
        return disk_full_message(exc)
    from record.home import home_path

    if not exc.filename or exc.errno not in _UNWRITABLE:
        return None
    home = home_path().absolute()
    where = Path(os.fsdecode(exc.filename)).absolute()
    # In the home, or on the way to it (a parent made for it).
    if where != home and home not in where.parents and where not in home.parents:
        return None
    # A file in the way is named itself; otherwise the folder the write went into.
    folder = where if exc.errno in (errno.EEXIST, errno.ENOTDIR) else where.parent
    cause = why_unwritable(folder, exc)
    return None if cause is None else home_message(home, cause)


def disk_full_message(exc: OSError) -> str:
    """A full disk met on any write path, as what happened and what to do."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return (
        f"the disk is full{where} ({exc.strerror}). What was written before is kept: "
        "free some space and run the command again (a batch resumes where it stopped; "
        "a run cut short is marked ended and indexed by the next command)."
    )
