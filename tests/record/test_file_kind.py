"""One sniffer for runs files (record/file_kind.py): the audit and `notebook learn` read
the same file the same way, whatever blank lines lead it, and a hostile first line
(deep nesting, not JSON, a list) is "unknown", never a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.cli.audit import _is_published
from conductor.cli.notebook_learn import _ours
from record.file_kind import file_kind

EVENT = {"v": 1, "kind": "run_started", "run_id": "r1", "question": "q"}
PUBLISHED = {"input": "4 5 6 10", "target": "24", "message_log": []}
FIRST_LINES = st.sampled_from(
    [
        (json.dumps(EVENT), "transcript"),
        (json.dumps(PUBLISHED), "published"),
        ("{not json", "unknown"),
        ("[" * 100_000, "unknown"),
        (json.dumps([EVENT]), "unknown"),
        (json.dumps({"input": "x", "output": "y"}), "unknown"),
        ("", "unknown"),
    ]
)


@settings(max_examples=60, deadline=None)
@given(first=FIRST_LINES, blanks=st.lists(st.sampled_from(["", " ", "\t", "\r"]), max_size=4))
def test_the_first_non_blank_line_decides_for_every_reader(
    first: tuple[str, str], blanks: list[str]
) -> None:
    line, kind = first
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.jsonl"
        path.write_text("".join(b + "\n" for b in blanks) + line + "\n", encoding="utf-8")
        assert file_kind(path) == kind
        assert _is_published(path) == (kind == "published")
        assert _ours(path) == (kind == "transcript")
