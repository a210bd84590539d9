"""A published file's runs as our events: the one conversion `runs audit FILE` and
`notebook learn FILE` read through, so both see the same runs with the same ids.

A baseline's harness dispatched nothing: an "Expert X:" in its text (multi-persona
writes them) is no expert call, so its records come through `without_calls`. The
method (from the file's folder) is in each run's id: the same task's runs of two
folders never share one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from conductor.methods import BASELINES
from conductor.replay.baselines import method_of_path
from conductor_kernel.events import Event
from record.published import published_events, read_published, without_calls


def published_runs(
    path: Path,
    *,
    limit: int | None = None,
    on_problem: Callable[[Exception, int], None] | None = None,
) -> Iterator[list[Event]]:
    """Each record of the published file as the events of one run, in the file's order.
    A line that stops the reading is handed to `on_problem` with the count read before."""
    method = method_of_path(path) or ""
    published = read_published(path, limit=limit)
    if published.problem is not None and on_problem is not None:
        on_problem(published.problem, len(published.records))
    for record in published.records:
        if method in BASELINES:
            record = without_calls(record)
        yield published_events(record, source_file=str(path), method=method)
