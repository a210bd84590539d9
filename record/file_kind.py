"""What kind of runs file a path holds: one of our transcripts or the paper's published
format. The one sniffer for every command that takes either (`audit`, `notebook learn`,
`runs import`): they used to answer differently on the same file.

The first non-blank line decides: an event of ours has a `kind` and a `run_id`; a
published record (meta-prompting's runs and the baselines' alike) has a `message_log`.
Anything else (not JSON, nested past the reader's depth,
a list) is neither, and the caller says what it accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from conductor_kernel.bounded import loads_json

FileKind = Literal["transcript", "published", "unknown"]
# Lines read looking for the first that is not blank.
LINES_LOOKED_AT = 50


def file_kind(path: Path) -> FileKind:
    """`transcript`, `published` or `unknown`, by the file's first non-blank line."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh):
            if number >= LINES_LOOKED_AT:
                break
            if line.strip():
                return _kind_of(line)
    return "unknown"


def _kind_of(line: str) -> FileKind:
    try:
        data = loads_json(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply (TooDeep)
        return "unknown"
    if not isinstance(data, dict):
        return "unknown"
    if "kind" in data and "run_id" in data:
        return "transcript"
    if "message_log" in data:
        return "published"
    return "unknown"
