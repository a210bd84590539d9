"""An observation says who was told: a program sent back was said to Expert Python (a
fresh expert call), every other note to the meta model; the terminal and the TUI word
it the same way (conductor/export/wording.py)."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from conductor.export.terminal import RichPrinter
from conductor_kernel.events import Observation


def printed(event: Observation) -> str:
    out = StringIO()
    RichPrinter(Console(file=out, width=200, color_system=None)).handle(event)
    return out.getvalue()


def test_a_program_sent_back_is_a_note_to_expert_python() -> None:
    sent = printed(Observation(run_id="r", reason="program_fails_check", message="It failed."))
    assert "note to Expert Python (program_fails_check): It failed." in sent
    nudge = printed(Observation(run_id="r", reason="no_call_or_answer", message="Call one."))
    assert "note to the meta model (no_call_or_answer): Call one." in nudge
