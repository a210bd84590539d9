"""What a run's recall checked on its question, in one line for every renderer.

A `Recall` event's `checked` names the programs whose answer to this very question the
task's own check accepted in a fresh sandbox; with the tools carrier the first of them
was handed to the meta model as a call and its result (conductor_kernel/run/experience.py).
The printer, the Markdown export and the TUI say so beside the recalled notes. The line
holds a program's printed answer: each renderer shows it escaped.
"""

from __future__ import annotations

from conductor_kernel.events import Recall


def checked_line(event: Recall) -> str | None:
    """`checked on this question: note N printed A (the task's check accepts it)`, or
    None when nothing was checked."""
    if not event.checked:
        return None
    first = event.checked[0]
    answer = " ".join(str(first.get("answer") or "").split())[:200]
    more = f" (+{len(event.checked) - 1} more)" if len(event.checked) > 1 else ""
    return (
        f"checked on this question: note {first.get('note', '?')} printed {answer}; "
        f"the task's check accepts it{more}"
    )
