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
from typing import TYPE_CHECKING

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural

if TYPE_CHECKING:  # imported where used: `conductor runs ...` builds this parser too
    from conductor_kernel.events import Event
    from record.audit import AuditReport
    from record.correctness import Correctness
    from record.fold import RunOutline

# One run audited: its findings and whether its answer is right.
Audited = tuple["AuditReport", "Correctness"]


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
    p.add_argument("--only-flagged", action="store_true", help="list only the runs with a finding")
    p.add_argument(
        "--finding",
        metavar="NAME",
        help="list only the runs with this finding (a badge of the summary's columns, "
        "e.g. fake, or its kind, e.g. fabricated_reply)",
    )
    p.add_argument(
        "--reread",
        action="store_true",
        help="with no RUN: audit every transcript again rather than read what runs.db "
        "stored when each run was indexed",
    )
    p.set_defaults(handler=run_audit)


def _is_published(path: Path) -> bool:
    from record.file_kind import file_kind

    return file_kind(path) == "published"


def reports_for(ref: str, *, limit: int | None = None) -> Iterator[Audited]:

    path = Path(ref)
    if path.is_dir():
        raise UserFacingError(
            f"{path}: a folder, not a file; give a transcript or a published .jsonl file "
            "(or a run id)."
        )
    if path.suffix == ".jsonl" and path.is_file():
        if _is_published(path):
            from conductor.replay.files import published_runs

            def cut(problem: Exception, kept: int) -> None:
                _warn(problem, f"{kept} records before it")

            for events in published_runs(path, limit=limit, on_problem=cut):
                yield _audit(events, score=True)
            return
        yield _audit(_read(path))
        return
    from transcripts.references import transcript_of

    yield _audit(_read(transcript_of(ref)))


def _audit(events: list[Event], *, score: bool = False) -> Audited:
    """The run's findings and its recorded verdict; a published record read straight
    from its file (never imported, so never scored) is scored here, as an import would."""
    from record.audit import audit_outline
    from record.fold import outline

    run = outline(events)
    return audit_outline(run), _scored(run) if score else run.correctness


def _scored(run: RunOutline) -> Correctness:
    from conductor.scoring.runs import score_run
    from record.correctness import Correctness

    verdict = score_run(run, scored_at="audit")
    return Correctness.of_event(verdict) if verdict is not None else Correctness()


def _warn(problem: Exception | None, kept: str) -> None:
    """Say on stderr that a file was cut short, as `score` and `replay` do."""
    if problem is not None:
        from conductor_kernel.text.display import visible_line

        print(visible_line(f"warning: {problem}; audited the {kept}."), file=sys.stderr)


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


def _all_runs(*, reread: bool = False) -> Iterator[Audited]:
    """Every run with a transcript, as runs.db stored its audit when the run was
    indexed; its transcript is read only when there is none (or `reread`)."""
    from transcripts.index import RunIndex

    for row, stored in RunIndex().stored_audits():
        if not (row["path"] and Path(row["path"]).is_file()):
            continue
        yield stored if stored is not None and not reread else _audit(_read(row["path"]))


def run_audit(args: argparse.Namespace) -> int:
    from record.audit import summarise
    from record.findings import finding_badge

    if args.runs:
        audited = [r for ref in args.runs for r in reports_for(ref, limit=args.limit)]
    else:
        audited = list(_all_runs(reread=args.reread))
    table = summarise(report for report, _ in audited)
    badge = finding_badge(args.finding)
    listed = [pair for pair in audited if _wanted(pair[0], args.only_flagged, badge)]
    if args.json:
        if not args.summary:
            for report, verdict in listed:
                data = report.to_dict()
                data.update(
                    correctness=verdict.label, scorer=verdict.scorer, score_detail=verdict.detail
                )
                print(json.dumps(data, ensure_ascii=False))
        print(json.dumps({"summary": table}))
        return 0
    _print(listed, table, details=not args.summary, hidden=len(audited) - len(listed))
    return 0


def _wanted(report: AuditReport, only_flagged: bool, badge: str | None) -> bool:
    """Whether a run is listed: flagged when asked for, with the finding named if one is."""
    if (only_flagged or badge == "any") and not report.findings:
        return False
    return badge in (None, "any") or badge in report.badges


def _print(
    reports: list[Audited], table: dict[str, dict[str, int]], *, details: bool, hidden: int = 0
) -> None:
    from rich.console import Console

    from conductor.export.audit_tables import COLUMNS_NOTE, findings_table, summary_table

    console = Console()
    if details:
        console.print(findings_table(reports))
        if hidden:
            console.print(f"{plural(hidden, 'run')} not listed (no finding asked for)", style="dim")
    console.print(summary_table(table))
    console.print(COLUMNS_NOTE, style="dim")
