"""`conductor replay`'s mismatch lines quote the recorded and the replayed model text:
shown as text, control characters visible, markup as typed (never interpreted)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from conductor.export.replay_tables import print_mismatches
from conductor.replay.runner import FileReport, Mismatch
from conductor_kernel.text.display import UNSAFE

HOSTILE = [
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1b[1A\x1b[2K\u2714 verified",
    "[/x]",
    "[bold red]m[/] [link=https://e.x]l[/link]",
    "a\u202eb\x00\x9b31m",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_mismatch_details_are_shown_inert(text: str) -> None:
    report = FileReport(file=f"/data/{text}.jsonl")
    report.mismatches = [
        Mismatch(3, "final_answer", f"recorded '{text}', replayed '42'"),
        Mismatch(4, "sandbox", f"stdout differs: recorded '{text}'"),
    ]
    out = io.StringIO()
    print_mismatches(Console(file=out, width=300, color_system=None), report, show_all=True)
    shown = out.getvalue()
    assert not UNSAFE.search(shown), shown
    assert shown.count("line ") == 2
    if text.startswith("["):
        assert f"recorded '{text}'" in shown  # markup shown as typed
