"""`conductor batch` on a terminal prints one line per finished item above its progress
bar (how it ended: correct, wrong, declined with the reason, error with the cause), and
nothing when its output is piped."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from conductor.batch.records import Tally
from conductor.cli.progress import Progress

records = st.fixed_dictionaries(
    {
        "item_id": st.from_regex(r"i[0-9]{2}", fullmatch=True),
        "final": st.just(True),
        "status": st.sampled_from(["answered", "declined", "error", "limit"]),
        "duration_s": st.floats(0, 100),
        "score": st.sampled_from(
            [None, {"scored": True, "correct": True}, {"scored": True, "correct": False}]
        ),
        "reason": st.sampled_from(["", "No answer: the demo cannot"]),
        "error": st.sampled_from([None, {"cause": "sandbox", "message": "never ready"}]),
    }
)


@settings(max_examples=30, deadline=None)
@given(st.lists(records, min_size=1, max_size=8), st.booleans())
def test_one_line_per_finished_item_on_a_terminal_and_none_when_piped(
    batch: list[dict], terminal: bool
) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200)
    progress = Progress(enabled=terminal, console=console)
    tally = Tally(total=len(batch))
    with progress.shown(tally):
        for record in batch:
            tally.add(record)  # type: ignore[arg-type]
            progress.update(record, tally)  # type: ignore[arg-type]
    text = out.getvalue()
    if not terminal:
        assert text == ""
        return
    for record in batch:
        assert record["item_id"] in text
        if record["status"] == "error" and record["error"]:
            assert "error (sandbox): never ready" in text
