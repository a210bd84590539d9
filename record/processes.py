"""Whether the process that wrote a record is still alive: its pid, and when it started
(a pid the kernel reused for another process is not the writer). Standard library only,
so that opening runs.db imports nothing of the transcripts' machinery."""

from __future__ import annotations

import os
from pathlib import Path


def process_started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    if started is None:
        return True
    now = process_started(pid)
    return now is None or now == started
