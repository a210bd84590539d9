"""`conductor runs list|show|search|export|diff|audit|import|reindex`: the record of past
runs, and `conductor batch-report`: a batch as HTML pages."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from conductor.cli import audit, imports
from conductor.cli.json_out import json_text
from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural
from record.correctness import LABELS
from record.findings import BADGES, finding_badge

SORT_NAMES = ("started", "status", "correctness", "finding", "task", "model")

if TYPE_CHECKING:
    from rich.console import Console

    from transcripts.index import RunIndex, RunRecord


def register(sub: argparse._SubParsersAction) -> None:
    runs = sub.add_parser("runs", help="list, search, show and export recorded runs")
    rsub = runs.add_subparsers(dest="runs_command", metavar="ACTION", required=True)

    p = rsub.add_parser(
        "list",
        help="the most recent runs, one line each",
        description="Runs one line each: status, whether the answer is right (✓ correct, "
        "✗ wrong, · unscored), the audit's findings, task, question and answer.",
    )
    p.add_argument("--limit", type=int, default=20, help="at most N runs (0: all)")
    p.add_argument("--task")
    p.add_argument("--status")
    p.add_argument("--model", help="only runs of this model")
    p.add_argument("--method", help="only runs of this method (meta, standard, ...)")
    right = p.add_mutually_exclusive_group()
    right.add_argument(
        "--correctness", choices=LABELS, help="only runs whose answer is correct, wrong or unscored"
    )
    right.add_argument(
        "--correct",
        dest="correctness",
        action="store_const",
        const="correct",
        help="= --correctness correct",
    )
    right.add_argument(
        "--wrong",
        dest="correctness",
        action="store_const",
        const="wrong",
        help="= --correctness wrong",
    )
    p.add_argument(
        "--finding",
        metavar="NAME",
        help=f"only runs the audit flagged with this finding ({', '.join(BADGES)}, or any)",
    )
    p.add_argument(
        "--sort", choices=SORT_NAMES, default="started", help="order (default: newest first)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run_list)

    p = rsub.add_parser(
        "search",
        help="full-text search over questions and answers",
        description="Find runs whose question or answer holds every word given, as written.",
    )
    p.add_argument("query", nargs="+", help="words to find (all of them)")
    p.add_argument(
        "--raw",
        action="store_true",
        help='read the query as SQLite FTS5 syntax (AND, OR, NOT, "phrases", prefix*)',
    )
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run_search)

    p = rsub.add_parser("show", help="print one run as it happened")
    p.add_argument("run", help="run id (a unique prefix will do) or a transcript file")
    p.set_defaults(handler=run_show)

    p = rsub.add_parser("export", help="export one run")
    p.add_argument("run", help="run id (a unique prefix will do) or a transcript file")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="as Markdown (the default)")
    fmt.add_argument(
        "--html",
        action="store_true",
        help="as one self-contained HTML page (default file: RUN_ID.html here)",
    )
    fmt.add_argument(
        "--inspect",
        action="store_true",
        help="as an Inspect eval log for `inspect view` (RUN may also be a batch id or "
        "folder: one sample per item; default file: RUN.eval here; needs the inspect extra)",
    )
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--notebook", help="read recalled and written notes' evidence from here")
    p.set_defaults(handler=run_export)

    p = rsub.add_parser(
        "diff",
        help="two runs side by side, round by round and call by call",
        description="Two runs side by side. With one run, its pair: the run of the same "
        "task on the same question under another method or import condition (with and "
        "without Python).",
    )
    p.add_argument("left", help="run id (a unique prefix will do) or a transcript file")
    p.add_argument(
        "right",
        nargs="?",
        help="run id or transcript file (default: the left run's pair on the same question)",
    )
    p.add_argument(
        "--html", action="store_true", help="write one HTML page (default: diff-LEFT-RIGHT.html)"
    )
    p.add_argument("-o", "--output", help="the HTML file to write (implies --html)")
    p.set_defaults(handler=run_diff)

    p = rsub.add_parser("reindex", help="rebuild runs.db from the transcript files")
    p.set_defaults(handler=run_reindex)

    p = sub.add_parser("batch-report", help="a batch as HTML: every item, each linked to its run")
    p.add_argument("batch", help="batch id (a unique prefix will do) or the batch's folder")
    p.add_argument("--html", action="store_true", help="write HTML pages (the only format yet)")
    p.add_argument("-o", "--output", help="folder for the pages (default: BATCH/html)")
    p.set_defaults(handler=run_batch_report)

    audit.attach(
        rsub.add_parser("audit", help="audit findings of runs (also of published transcripts)")
    )
    imports.attach(rsub.add_parser("import", help="import published meta-prompting transcripts"))


def _index() -> RunIndex:
    from transcripts.index import RunIndex

    return RunIndex()


def _table(rows: Sequence[RunRecord], as_json: bool, console: Console | None = None) -> int:
    """Runs as JSON lines, or one line per run: on a terminal a table whose question and
    answer are cut to the width (`runs show` has them whole), piped one tab-separated
    line per run with every field whole."""
    if as_json:
        for row in rows:
            print(json_text(row))
        return 0
    from conductor.export.run_table import COLUMNS, run_cells, run_lines
    from conductor_kernel.text.display import visible

    cells = [run_cells(row) for row in rows]
    if console is None and _piped():  # no rich to start
        console_is_terminal = False
    else:
        from rich.console import Console

        console = console or Console()
        console_is_terminal = console.is_terminal
    if not console_is_terminal:
        print("\t".join(COLUMNS))
        for line in cells:
            print("\t".join(" ".join(visible(c).split()) for c in line))
        return 0
    assert console is not None
    for text in run_lines(cells, console.width):
        console.print(text, no_wrap=True, overflow="ellipsis", crop=True)
    if not rows:
        console.print("no runs", style="dim")
    return 0


def _piped() -> bool:
    """Whether stdout is no terminal and nothing asks rich to treat it as one."""
    forced = ("FORCE_COLOR", "TTY_INTERACTIVE", "TTY_COMPATIBLE")
    return not sys.stdout.isatty() and not any(os.environ.get(name) for name in forced)


def run_list(args: argparse.Namespace) -> int:
    from transcripts.runs_schema import RunFilter

    filters = RunFilter(
        task=args.task,
        status=args.status,
        model=args.model,
        method=args.method,
        correctness=args.correctness,
        finding=finding_badge(args.finding),
    )
    rows = _index().list_runs(filters, limit=args.limit or None, sort=args.sort)
    return _table(rows, args.json)


def run_search(args: argparse.Namespace) -> int:
    from record.fts import SearchSyntaxError, quote_words

    text = " ".join(args.query)
    query = text if args.raw else quote_words(text)
    if not query.strip():
        raise UserFacingError("nothing to search for: give one or more words.")
    try:
        rows = _index().search(query, limit=args.limit)
    except SearchSyntaxError as exc:
        raise UserFacingError(
            f"the FTS5 query {text!r} is not valid ({exc.reason}); leave out --raw to search "
            "for the words as written."
        ) from None
    return _table(rows, args.json)


def _read(ref: str):
    from record.reader import read_transcript
    from transcripts.references import transcript_of

    transcript = read_transcript(transcript_of(ref))
    if transcript.problem is not None:
        from rich.console import Console
        from rich.text import Text

        from conductor_kernel.text.display import visible_line

        warning = Text("warning: ", style="yellow").append(visible_line(str(transcript.problem)))
        Console(stderr=True).print(warning)
    if not transcript.events:
        why = f" ({transcript.problem.reason})" if transcript.problem else ""
        raise UserFacingError(f"{transcript.path}: no event in it could be read{why}.")
    return transcript


def run_show(args: argparse.Namespace) -> int:
    from conductor.export.terminal import RichPrinter

    printer = RichPrinter()
    for event in _read(args.run).events:
        printer.handle(event)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from record.fold import outline

    if args.inspect:
        return _export_inspect(args)
    transcript = _read(args.run)
    run = outline(transcript.events, problem=_problem(transcript))
    if args.html:
        from conductor.export.html.run_page import run_html

        out = Path(args.output or f"{_file_name(run.run_id or transcript.path.stem)}.html")
        _write(out, run_html(run, notebook=args.notebook))
        print(_wrote(out))
        return 0
    from conductor.export.markdown import to_markdown

    text = to_markdown(run)
    if args.output:
        _write(Path(args.output), text)
    else:
        print(text, end="")
    return 0


def _export_inspect(args: argparse.Namespace) -> int:
    from conductor.batch.references import find_batch
    from conductor.export.inspect_log import batch_samples, run_sample, write_inspect_log

    batch = find_batch(args.run)  # a batch's folder, id or id prefix; else a run
    if batch is not None:
        samples, name = batch_samples(batch), batch.name
    else:
        transcript = _read(args.run)
        samples, name = [run_sample(transcript.events)], transcript.events[0].run_id
    out = Path(args.output or f"{_file_name(name)}.eval")
    try:
        written = write_inspect_log(samples, out, task=name)
    except OSError as exc:
        raise UserFacingError(_cannot_write(exc, out)) from None
    for path, count in written:
        print(_wrote(path, f" ({plural(count, 'run')}; open it with `inspect view`)"))
    return 0


def _file_name(run_id: str) -> str:
    """A file name in this folder for a page named by a run id, which a transcript from
    someone else sets (`../x`, a control character): only characters safe in a name."""
    from conductor.batch.store import safe_name

    return safe_name(run_id, 120)


def _wrote(path: object, more: str = "") -> str:
    from conductor_kernel.text.display import visible_line

    return visible_line(f"wrote {path}{more}")


def _write(out: Path, text: str) -> None:
    """Write an export, or say plainly why it cannot be written (no traceback)."""
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserFacingError(_cannot_write(exc, out)) from None


def _cannot_write(exc: OSError, out: object) -> str:
    where = exc.filename or out
    return f"cannot write {where} ({exc.strerror or exc}); give -o a writable file path."


def _problem(transcript) -> str | None:
    return str(transcript.problem) if transcript.problem is not None else None


def run_diff(args: argparse.Namespace) -> int:
    from record.fold import outline
    from transcripts.references import paired_run
    from transcripts.run_diff import diff_runs

    left = _read(args.left)
    right = _read(args.right or paired_run(args.left))
    diff = diff_runs(
        outline(left.events, problem=_problem(left)),
        outline(right.events, problem=_problem(right)),
    )
    if args.html or args.output:
        from conductor.export.html.diff_page import diff_html

        named = f"diff-{diff.left.run_id}-{diff.right.run_id}"
        out = Path(args.output or f"{_file_name(named)}.html")
        _write(out, diff_html(diff))
        print(_wrote(out))
        return 0
    from rich.console import Console

    from conductor.export.diff import diff_renderables

    console = Console()
    # Piped (or with NO_COLOR), colour cannot show what changed: bracket it.
    markers = not console.is_terminal or console.no_color
    for renderable in diff_renderables(diff, markers=markers):
        console.print(renderable)
    return 0


def run_batch_report(args: argparse.Namespace) -> int:
    from conductor.batch.references import require_batch
    from conductor.export.html.batch_page import write_batch_html

    batch = require_batch(args.batch)
    try:
        index = write_batch_html(batch, args.output)
    except OSError as exc:
        raise UserFacingError(
            _cannot_write(exc, args.output or "the batch's html folder")
        ) from None
    print(_wrote(index, " (and one page per run beside it)"))
    return 0


def run_reindex(args: argparse.Namespace) -> int:
    """Rebuild runs.db from every transcript the home holds (solves, imports, batches);
    a corrupt runs.db is moved aside, never lost; an unreadable transcript is named."""
    from conductor_kernel.text.display import visible_line
    from record.home import home_dir, transcript_files
    from transcripts.index import RunIndex

    home = home_dir()
    done = RunIndex.reindex(None, transcript_files(home))
    index = done.index
    assert index is not None
    if done.moved is not None:
        print(f"{index.path} was damaged: moved it to {done.moved} (kept, not deleted)")
    repaired = index.repair_abandoned()
    if repaired:
        print(
            f"{plural(len(repaired), 'run')} left unfinished by a process that died: now interrupted"
        )
    for path, reason in done.skipped:
        print(visible_line(f"not indexed: {path}: {reason}"))
    print(f"indexed {done.count} transcripts into {index.path}")
    if done.skipped:
        print(
            f"{len(done.skipped)} files could not be read (listed above); they were left as they are"
        )
    return 0
