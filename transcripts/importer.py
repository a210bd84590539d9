"""Importing the paper's published runs as our own transcripts.

Each published record becomes one event transcript (`runs/<run-id>.jsonl`) indexed in
`runs.db`, so it can be listed, searched, shown and audited like a run of ours. The
events are `record.published.published_events`: what the original harness did (meta
turns, the expert calls it dispatched, the code it ran and the output it reported,
nudges, the retry defect, the answer).

Run ids are stable (`published-<task>-<line>`, with the method first for any but
meta-prompting: `published-standard-<task>-<line>`): importing a file again replaces its
runs instead of adding copies. Token counts are estimates; the records hold none.

A baseline's runs (`method` set, `expert_calls=False`) are one conversation: no turn is
read for calls, a turn without an answer was nudged, and a log ending with a nudge nobody
answered hit the harness's cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conductor_kernel.events import Event
from record.home import runs_dir
from record.published import published_events, read_published, run_id_for, without_calls
from record.writer import TranscriptWriter
from transcripts.index import RunIndex


@dataclass
class ImportReport:
    file: str
    run_ids: list[str] = field(default_factory=list)
    retry_defect_records: int = 0
    answered: int = 0
    problem: str | None = None  # the bad line that ended reading, if any
    scored: int = 0  # runs the scorer judged
    correct: int = 0  # of them, right

    @property
    def imported(self) -> int:
        return len(self.run_ids)


def import_file(
    path: Path | str,
    *,
    limit: int | None = None,
    runs_path: Path | None = None,
    index: RunIndex | None = None,
    method: str = "",
    expert_calls: bool = True,
    score: Callable[[list[Event]], Event | None] | None = None,
) -> ImportReport:
    """Write and index one transcript per record of a published file; `method` names
    the method its runs used, and a baseline's (`expert_calls=False`) dispatched none.
    `score` (the application's `conductor.scoring.runs.score_run`) judges each run's
    answer; its verdict is written after the run's end, as a live run's is."""
    published = read_published(path, limit=limit)
    directory = runs_path or runs_dir()
    index = index if index is not None else RunIndex()
    report = ImportReport(file=str(path))
    if published.problem is not None:
        report.problem = str(published.problem)
    for record in published.records:
        if not expert_calls:
            record = without_calls(record)
        run_id = run_id_for(record, method)
        target = directory / f"{run_id}.jsonl"
        target.unlink(missing_ok=True)  # a re-import replaces the run
        with TranscriptWriter(target) as writer:
            events = list(published_events(record, source_file=Path(path).name, method=method))
            verdict = score(events) if score is not None else None
            for event in [*events, *([verdict] if verdict is not None else [])]:
                writer.handle(event)
        index.add_transcript(target, source="published")
        report.run_ids.append(run_id)
        report.retry_defect_records += record.retry_defect
        report.answered += record.final_answer is not None
        correct = getattr(verdict, "correct", None)
        report.scored += correct is not None
        report.correct += correct is True
    return report
