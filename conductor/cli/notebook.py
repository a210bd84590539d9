"""`conductor notebook ...`: look into the notebook, search it, move notes in and out.

Every subcommand takes `--notebook PATH` (default: notebook.db in the data directory,
or the `notebook` setting). Every note shown names the run it came from. `list` and
`show`, with the helpers every subcommand shares, are in cli_notebook_browse.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

from conductor.cli.browse import console, open_book, run_list, run_show
from conductor.config.flags import add_setting_flags
from conductor.export.notebook_views import ident, one_line, table


def _add_path(parser: argparse.ArgumentParser) -> None:
    # The `notebook` setting's flag, before or after the ACTION (`open_book` reads it).
    add_setting_flags(parser, only=("notebook",))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("notebook", help="the experience notebook: list, show, search, stats, ...")
    _add_path(p)
    nsub = p.add_subparsers(dest="notebook_command", metavar="ACTION")
    p.set_defaults(handler=lambda args: _help(p))

    def add(
        name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        parser = nsub.add_parser(name, help=help_text)
        _add_path(parser)
        parser.set_defaults(handler=handler)
        return parser

    ls = add("list", "list notes (newest first) or, with --types, task types", run_list)
    ls.add_argument("--type", help="only notes of this task type (id, id prefix or name)")
    ls.add_argument("--kind", help="only notes of this kind (insight, pitfall, code, ...)")
    ls.add_argument("--retired", action="store_true", help="list retired notes instead")
    ls.add_argument("--types", action="store_true", help="list task types instead of notes")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--json", action="store_true", help="one JSON object per line")

    show = add("show", "a note (or task type) in full, with its history", run_show)
    show.add_argument("id", help="note or task type id (a unique prefix will do)")
    show.add_argument("--json", action="store_true")

    search = add("search", "what recall would show for a question, with scores", run_search)
    search.add_argument("query", help="a question, or words (use - to read stdin)")
    search.add_argument("-k", type=int, default=5, help="notes at most")
    search.add_argument("--json", action="store_true")

    stats = add("stats", "counts: notes, types, runs learned, recalls, verification", run_stats)
    stats.add_argument("--json", action="store_true")

    export = add("export", "write the notebook as JSON lines (types, notes, history)", run_export)
    export.add_argument("-o", "--output", help="file to write (default: stdout)")

    imp = add("import", "read an export into this notebook (duplicates skipped)", run_import)
    imp.add_argument("file", help="a file written by `conductor notebook export`")

    from conductor.cli import notebook_learn

    learn = add("learn", "learn from transcripts or published runs, with or without targets",
                notebook_learn.run_learn)  # fmt: skip
    notebook_learn.attach(learn)

    merge = add("merge", "fold other notebooks into one, every source run kept", run_merge)
    merge.add_argument("target", help="the notebook merged into (created when missing)")
    merge.add_argument("sources", nargs="+", help="notebooks merged from (left unchanged)")
    merge.add_argument("--json", action="store_true")

    tools = add("test-tools", "run every tool on stored questions of its kind, in the sandbox",
                run_test_tools)  # fmt: skip
    tools.add_argument("--sandbox", default="auto", help="auto, docker, bwrap or subprocess")
    tools.add_argument("--per-tool", type=int, default=12, help="tests each tool should have")
    tools.add_argument("--json", action="store_true")

    retire = add("retire", "retire a note: it is no longer recalled, and stays", run_retire)
    retire.add_argument("id", help="note id (a unique prefix will do)")
    retire.add_argument("--reason", default="retired by hand", help="why (kept in history)")
    retire.add_argument("--restore", action="store_true", help="undo: recall the note again")


def run_test_tools(args: argparse.Namespace) -> int:
    """Bring every tool up to --per-tool tests; print each one's pass rate."""
    from lessons.forms.toolbox import retest_tools
    from sandbox.registry import open_sandbox

    book = open_book(args)
    try:
        with contextlib.closing(open_sandbox(args.sandbox)) as sandbox:
            tools = retest_tools(book, sandbox, per_tool=args.per_tool)
    finally:
        book.close()
    ranked = sorted(tools, key=lambda t: -t.rank_score)
    if args.json:
        for t in ranked:
            print(json.dumps({"note": t.note_id, "task": t.task, "tests": t.tests,
                              "passes": t.passes, "params": [p.kind for p in t.tool.params]}))  # fmt: skip
        return 0
    listing = table(("tool", True), ("task", False), ("passed", True), ("reads", False))
    for t in ranked:
        listing.add_row(ident(t.note_id), ident(t.task or "-"), f"{t.passes}/{t.tests}",
                      ", ".join(p.kind for p in t.tool.params))  # fmt: skip
    console().print(listing if ranked else "no tools in this notebook yet")
    return 0


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 0


def run_search(args: argparse.Namespace) -> int:
    from lessons.read.recall import RecallOptions, recall

    query = sys.stdin.read() if args.query == "-" else args.query
    book = open_book(args)
    result = recall(book, query, options=RecallOptions(k=args.k, threshold=0.0))
    if args.json:
        print(json.dumps({
            "types": [{"id": m.type_id, "name": m.name, "evidence": round(m.evidence, 3),
                       "relevance": round(m.relevance(), 4)} for m in result.matches],
            "notes": result.event_notes(),
        }, ensure_ascii=False))  # fmt: skip
        return 0
    out = console()
    if not result.matches:
        out.print("no task type shares anything with that; nothing would be recalled.")
        return 0
    for m in result.matches:
        out.print(
            f"type {one_line(m.type_id, 0)} {one_line(m.name, 50)}: evidence {m.evidence:.1f}, relevance {m.relevance():.2f}",
            markup=False,
        )
    for rank, s in enumerate(result.shown, 1):
        note = s.note
        out.print(
            f"{rank}. {one_line(note['id'], 0)} {one_line(note['kind'], 0)} relevance {s.relevance:.2f} "
            f"score {s.score:.2f} (from run {one_line(note['source_run'] or '-', 0)}): "
            f"{one_line(note['text'], 100)}", markup=False,
        )  # fmt: skip
        if note.get("differs"):
            out.print(f"   another question: {one_line(note['differs'], 200)}", markup=False)
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from lessons.storage.stats import collect

    data = collect(open_book(args, reader=True))
    if args.json:
        print(json.dumps(data))
        return 0
    out = console()
    for key, value in data.items():
        if isinstance(value, dict):  # counts by kind, verification, outcome
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
        elif key == "size_bytes":
            key, value = "size", f"{value / 1e6:.1f} MB"
        # The counts' words (kinds, verifications) may come from a merged notebook.
        out.print(f"{key.replace('_', ' '):<16} {one_line(str(value), 0)}", markup=False)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from conductor_kernel.text.display import visible_line
    from lessons.exchange.transfer import export_lines

    book = open_book(args, reader=True)
    count = 0
    with contextlib.ExitStack() as stack:
        out = (
            stack.enter_context(Path(args.output).open("w", encoding="utf-8"))
            if args.output
            else sys.stdout
        )
        for line in export_lines(book):
            out.write(line + "\n")
            count += 1
    print(visible_line(f"exported {count} records from {book.path}"), file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    from conductor_kernel.text.display import visible_line
    from lessons.exchange.transfer import import_export, read_export

    export = read_export(Path(args.file))  # checked whole before the notebook is opened
    book = open_book(args, create=True)
    try:
        counts = import_export(book, export)
    finally:
        book.close()
    print(
        visible_line(
            f"imported into {book.path}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
        ),
        file=sys.stderr,
    )
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from conductor_kernel.text.display import visible_line
    from lessons.exchange.merge import merge_files

    for source, counts in merge_files(Path(args.target), [Path(s) for s in args.sources]):
        if args.json:
            print(json.dumps({"target": args.target, "source": str(source), **counts}))
        else:
            # The paths as given, shown escaped (a file name may hold control characters).
            print(
                visible_line(
                    f"merged {source} into {args.target}: "
                    + ", ".join(f"{k} {v}" for k, v in counts.items())
                )
            )
    return 0


def run_retire(args: argparse.Namespace) -> int:
    from lessons.storage.notes import retire
    from lessons.storage.queries import lookup_note

    book = open_book(args)
    changed = retire(book, args.id, reason=args.reason, restore=args.restore)
    note = lookup_note(book, args.id)
    state = "restored" if args.restore else "retired"
    shown = one_line(note["id"] if note else args.id, 0)
    if changed:
        print(f"{shown} {state} (kept, with its history)")
    else:
        print(f"{shown} was already {state}")
    return 0
