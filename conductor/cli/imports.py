"""`conductor runs import FILE.jsonl...`: the paper's published runs as our transcripts.

`attach(parser)` fills in the parser `conductor runs` makes for it.
"""

from __future__ import annotations

import argparse
import json
from functools import partial


def attach(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Import published meta-prompting transcripts: one indexed run per record, "
        "viewable and auditable like ours. Importing a file again replaces its runs."
    )
    p.add_argument("files", nargs="+", metavar="FILE.jsonl", help="published transcript files")
    p.add_argument("--limit", type=int, help="import only the first N records of each file")
    p.add_argument(
        "--method",
        metavar="NAME",
        help="the method the runs used (default: from each file's folder, e.g. "
        "baselines/Standard is standard; with-python is meta)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from conductor.scoring.runs import score_run
    from conductor_kernel.errors import UserFacingError
    from conductor_kernel.text.display import visible_line
    from transcripts.importer import import_file
    from transcripts.index import RunIndex

    if args.limit is not None and args.limit < 1:
        raise UserFacingError("--limit must be at least 1")
    index = RunIndex()
    errors = Console(stderr=True)
    table = Table(title="Imported published runs")
    for column in ("file", "runs", "answered", "correct", "retry defect", "first run id"):
        table.add_column(column, justify="left" if column in ("file", "first run id") else "right")
    from conductor.methods import BASELINES, check_method
    from conductor.replay.baselines import method_of_path

    for path in args.files:
        method = check_method(args.method) if args.method else (method_of_path(path) or "")
        report = import_file(
            path,
            limit=args.limit,
            index=index,
            method=method,
            expert_calls=method not in BASELINES,
            score=partial(score_run, scored_at="import"),
        )
        if report.problem:
            warning = Text("warning: ", style="yellow").append(
                f"{visible_line(str(report.problem))} (imported the {report.imported} "
                "records before it)"
            )
            errors.print(warning, highlight=False, soft_wrap=True)
        if args.json:
            data = {
                "file": report.file,
                "imported": report.imported,
                "answered": report.answered,
                "scored": report.scored,
                "correct": report.correct,
                "retry_defect_records": report.retry_defect_records,
                "run_ids": report.run_ids,
                "problem": report.problem,
            }
            print(json.dumps(data), flush=True)
        table.add_row(
            Text(visible_line(path.rsplit("/", 1)[-1])),
            str(report.imported),
            str(report.answered),
            f"{report.correct} of {report.scored} scored",
            str(report.retry_defect_records),
            # Made from the file's name: shown as text, its controls visible.
            Text(visible_line(report.run_ids[0]) if report.run_ids else "-"),
        )
    if not args.json:
        Console().print(table)
        Console().print("`conductor runs list` shows them; `conductor runs show RUN_ID` opens one.")
    return 0
