"""`conductor runs audit [RUN...] [--json]`: the audit findings of runs, from the command line.

A RUN is a run id (or unique prefix), one of our transcript files, or a published
meta-prompting file (each record audited as the importer reads it). With no RUN, every
run in runs.db. `attach(parser)` fills in the parser `conductor runs` makes for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from conductor_kernel.bounded import loads_json
from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import Event
from record.audit import FINDING_KINDS, AuditReport, audit_outline, summarise
from record.fold import outline


def attach(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Flag what an auditor looks for: unconfirmed answers, instructions leaning on "
        "context the expert cannot see, ignored errors, answers changed after they were "
        "verified, limits hit, nudges, fabricated expert replies."
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="run id or prefix, a transcript file, or a published .jsonl file (default: all runs)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per run, then a summary")
    p.add_argument("--summary", action="store_true", help="print only the per-task counts")
    p.add_argument("--limit", type=int, help="read only the first N records of a published file")
    p.set_defaults(handler=run_audit)


def _is_published(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    try:
        data = loads_json(first)
    except ValueError:  # not JSON, or nested too deeply (TooDeep)
        return False
    return isinstance(data, dict) and "message_log" in data


def reports_for(ref: str, *, limit: int | None = None) -> Iterator[AuditReport]:

    path = Path(ref)
    if path.is_dir():
        raise UserFacingError(
            f"{path}: a folder, not a file; give a transcript or a published .jsonl file "
            "(or a run id)."
        )
    if path.suffix == ".jsonl" and path.is_file():
        if _is_published(path):
            from conductor.methods import BASELINES
            from conductor.replay.baselines import method_of_path
            from record.published import published_events, read_published, without_calls

            method = method_of_path(path) or ""  # a baseline's turns dispatched nothing
            published = read_published(path, limit=limit)
            _warn(published.problem, f"{len(published.records)} records before it")
            for record in published.records:
                if method in BASELINES:
                    record = without_calls(record)
                yield _audit(published_events(record, source_file=str(path), method=method))
            return
        yield _audit(_read(path))
        return
    from record.home import runs_dir
    from transcripts.index import RunIndex

    row = RunIndex().get(ref)
    transcript = row["path"] if row is not None else ""
    unindexed = runs_dir() / f"{ref}.jsonl"  # a transcript runs.db could not index
    if not transcript and "/" not in ref and unindexed.is_file():
        transcript = str(unindexed)
    if not transcript:
        raise UserFacingError(
            f"no run matches {ref!r} (or the prefix is ambiguous); give a run id from "
            "`conductor runs list`, a transcript file, or a published .jsonl file."
        )
    yield _audit(_read(transcript))


def _audit(events: list[Event]) -> AuditReport:
    return audit_outline(outline(events))


def _warn(problem: Exception | None, kept: str) -> None:
    """Say on stderr that a file was cut short, as `score` and `replay` do."""
    if problem is not None:
        print(f"warning: {problem}; audited the {kept}.", file=sys.stderr)


def _read(path: str | Path) -> list[Event]:
    from record.reader import read_transcript

    transcript = read_transcript(path)
    if not transcript.events and transcript.problem is not None:
        raise UserFacingError(
            f"{path}: no event could be read: line {transcript.problem.line}: "
            f"{transcript.problem.reason}. Is it a transcript?"
        )
    _warn(transcript.problem, f"{len(transcript.events)} events before it")
    return transcript.events


def _all_runs() -> Iterator[AuditReport]:
    from transcripts.index import RunIndex

    for row in RunIndex().list_runs(limit=None, oldest_first=True):
        if row["path"] and Path(row["path"]).is_file():
            yield _audit(_read(row["path"]))


def run_audit(args: argparse.Namespace) -> int:
    if args.runs:
        reports = [r for ref in args.runs for r in reports_for(ref, limit=args.limit)]
    else:
        reports = list(_all_runs())
    table = summarise(reports)
    if args.json:
        if not args.summary:
            for report in reports:
                print(json.dumps(report.to_dict(), ensure_ascii=False))
        print(json.dumps({"summary": table}))
        return 0
    _print(reports, table, details=not args.summary)
    return 0


def _print(reports: list[AuditReport], table: dict[str, dict[str, int]], *, details: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from conductor_kernel.text.display import visible, visible_line

    console = Console()
    if details:
        runs = Table(title="findings per run", expand=True)
        for name in ("run", "task", "findings"):
            runs.add_column(name, no_wrap=name != "findings")
        for report in reports:
            text = "\n".join(f"[{f.badge}] {f.message}" for f in report.findings) or "-"
            # As text ("[ctx]" is not markup), visible: findings quote the model's words.
            runs.add_row(
                Text(visible_line(report.run_id)),
                Text(visible_line(report.task)),
                Text(visible(text)),
            )
        console.print(runs)
    summary = Table(title="runs flagged, per task (of runs audited)")
    summary.add_column("task")
    summary.add_column("runs", justify="right")
    for kind in FINDING_KINDS:
        summary.add_column(FINDING_KINDS[kind][0], justify="right")
    for task, row in sorted(table.items()):
        summary.add_row(
            Text(visible_line(task)), str(row["runs"]), *(str(row.get(k, 0)) for k in FINDING_KINDS)
        )
    console.print(summary)
    console.print(
        "columns: " + "; ".join(f"{badge} = {what}" for badge, what in FINDING_KINDS.values()),
        style="dim",
    )
