"""`conductor notebook ...`: look into the notebook, search it, move notes in and out.

Every subcommand takes `--notebook PATH` (default: notebook.db in the data directory,
or the `notebook` setting). Every note shown names the run it came from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from conductor_kernel.errors import UserFacingError


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--notebook",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="notebook file (default: the `notebook` setting, else notebook.db in the data dir)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("notebook", help="the experience notebook: list, show, search, stats, ...")
    _add_path(p)
    nsub = p.add_subparsers(dest="notebook_command", metavar="ACTION")
    p.set_defaults(handler=lambda args: _help(p))

    def add(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
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
    from lessons.toolbox import retest_tools
    from sandbox.registry import open_sandbox

    book = open_book(args)
    sandbox = open_sandbox(args.sandbox)
    try:
        tools = retest_tools(book, sandbox, per_tool=args.per_tool)
    finally:
        sandbox.close()
        book.close()
    ranked = sorted(tools, key=lambda t: -t.rank_score)
    if args.json:
        for t in ranked:
            print(json.dumps({"note": t.note_id, "task": t.task, "tests": t.tests,
                              "passes": t.passes, "params": [p.kind for p in t.tool.params]}))  # fmt: skip
        return 0
    table = _table(("tool", True), ("task", False), ("passed", True), ("reads", False))
    for t in ranked:
        table.add_row(t.note_id, t.task or "-", f"{t.passes}/{t.tests}",
                      ", ".join(p.kind for p in t.tool.params))  # fmt: skip
    _console().print(table if ranked else "no tools in this notebook yet")
    return 0


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 0


def open_book(args: argparse.Namespace, *, create: bool = False):
    """The notebook the flags or settings name; only `import` may create one."""
    from conductor.config import load_settings
    from lessons.store import Notebook, default_path

    path = Path(getattr(args, "notebook", None) or load_settings().notebook or default_path())
    if not create and not path.expanduser().exists():
        raise UserFacingError(
            f"no notebook at {path} yet. Runs create it as they learn (`conductor solve ...`); "
            "`conductor notebook import FILE` fills a new one; --notebook PATH picks another."
        )
    return Notebook(path)


def _console():
    from rich.console import Console

    return Console(highlight=False)


def _cut(text: str, limit: int) -> str:
    """Text on one line, whole: a narrow terminal wraps it (never cut: issue 10); what a
    model wrote, so control characters are made visible (it is shown as text, never markup)."""
    from conductor_kernel.display import visible_line

    return visible_line(" ".join((text or "").split()))


def _plain(text: str | None) -> Any:
    """What a model wrote, as rich Text: shown as typed, control characters visible."""
    from rich.text import Text

    from conductor_kernel.display import visible

    return Text(visible(text or ""))


def _table(*columns: tuple[str, bool]) -> Any:
    """A compact table; (header, keep whole) per column. Ids are what a user types next
    (`notebook show`, `runs show`), so they are never cut; free text wraps instead."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header, whole in columns:
        # fold, never an ellipsis: an id too long for its column wraps onto the next line
        table.add_column(header, no_wrap=whole, overflow="fold")
    return table


def run_list(args: argparse.Namespace) -> int:
    book = open_book(args)
    if args.types:
        rows = book.read(
            "select * from task_types where retired = 0 order by members desc limit ?",
            (args.limit,),
        )
        if args.json:
            for row in rows:
                print(json.dumps(dict(row), ensure_ascii=False))
            return 0
        table = _table(("type", True), ("name", False), ("questions", True), ("runs", True),
                       ("correct", True), ("wrong", True), ("experience", True))  # fmt: skip
        for r in rows:
            sizes = (
                f"{len(json.loads(r['suggestions']))} tips, {len(json.loads(r['procedure']))} steps"
            )
            table.add_row(
                r["id"], _plain(_cut(r["name"], 40)), str(r["members"]), str(r["runs"]),
                str(r["correct"]), str(r["wrong"]), sizes,
            )  # fmt: skip
        _console().print(table)
        return 0
    where, params = ["retired = ?"], [1 if args.retired else 0]
    if args.type:
        kind = book.find_type(args.type)
        if kind is None:
            raise UserFacingError(
                f"no task type {args.type!r}; `conductor notebook list --types` lists them."
            )
        where.append("type_id = ?")
        params.append(kind["id"])
    if args.kind:
        where.append("kind = ?")
        params.append(args.kind)
    rows = book.read(
        f"select * from notes where {' and '.join(where)} order by seq desc limit ?",
        (*params, args.limit),
    )
    if args.json:
        for row in rows:
            print(json.dumps({k: v for k, v in row.items() if k != "terms"}, ensure_ascii=False))
        return 0
    table = _table(("note", True), ("kind", True), ("key", False), ("verified", True),
                   ("+/-/uses", True), ("from run", True))  # fmt: skip
    for r in rows:
        table.add_row(
            r["id"], r["kind"], _plain(_cut(r["key"], 36)), r["verification"],
            f"{r['helpful']}/{r['harmful']}/{r['uses']}", r["source_run"] or "(imported)",
        )  # fmt: skip
    _console().print(table)
    if not rows:
        print("no notes yet: every finished run is distilled into the notebook.", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    book = open_book(args)
    note = book.find_note(args.id)
    if note is None:
        kind = book.find_type(args.id)
        if kind is None:
            raise UserFacingError(
                f"no note or task type {args.id!r} in {book.path}; "
                "`conductor notebook list` shows the ids."
            )
        return _show_type(book, kind, args.json)
    history = [dict(r) for r in book.read(
        "select at, action, run_id, detail from note_history where note_id = ? order by id",
        (note["id"],),
    )]  # fmt: skip
    recalls = [dict(r) for r in book.read(
        "select run_id, rank, score, outcome from recalls where note_id = ? order by id desc limit 20",
        (note["id"],),
    )]  # fmt: skip
    if args.json:
        note.pop("terms", None)
        print(
            json.dumps({"note": note, "history": history, "recalls": recalls}, ensure_ascii=False)
        )
        return 0
    console = _console()
    kind = book.find_type(note["type_id"]) if note["type_id"] else None
    console.print(
        _plain(f"{note['id']} {note['kind']} · task type {kind['name'] if kind else '-'}"),
        style="bold",
    )
    console.print(
        f"from run: {note['source_run'] or '(imported, no run)'}  task: {note['source_task'] or '-'}",
        markup=False,
    )
    console.print(f"question: {_cut(note['source_question'], 300)}", markup=False)
    console.print(f"answer: {_cut(note['answer'] or '', 200)}", markup=False)
    console.print(
        f"verified: {note['verification']} ({note['outcome']}) · confidence {note['confidence']:.2f}"
        f" · helpful {note['helpful']} harmful {note['harmful']} uses {note['uses']}"
        f" · support {note['support']}" + (" · RETIRED: " + _cut(note["retired_reason"], 300) if note["retired"] else ""),
        markup=False,
    )  # fmt: skip
    console.print(_plain(f"key: {note['key']}"))
    console.print(_plain(note["text"]))
    if note["code"]:
        from rich.syntax import Syntax

        from conductor_kernel.display import visible

        console.print(Syntax(visible(note["code"]), "python"))
    console.print(f"history ({len(history)}):")
    for h in history:
        console.print(f"  {h['action']:<20} run {h['run_id'] or '-'}", markup=False)
    if recalls:
        console.print(f"recalled in {len(recalls)} run(s) (latest first):")
        for r in recalls:
            console.print(
                f"  run {r['run_id']} rank {r['rank']} score {r['score']:.2f} → {r['outcome']}"
            )
    return 0


def _show_type(book: Any, kind: dict[str, Any], as_json: bool) -> int:
    history = [dict(r) for r in book.read(
        "select at, action, run_id, detail from type_history where type_id = ? order by id",
        (kind["id"],),
    )]  # fmt: skip
    if as_json:
        print(json.dumps({"type": kind, "history": history}, ensure_ascii=False))
        return 0
    console = _console()
    console.print(_plain(f"{kind['id']} {kind['name']}"), style="bold")
    console.print(_plain(kind["description"]))
    console.print(
        f"questions {kind['members']} · runs {kind['runs']} · correct {kind['correct']} "
        f"· wrong {kind['wrong']} · failed {kind['failed']}"
    )
    for title, items in (("suggestions", kind["suggestions"]), ("procedure", kind["procedure"])):
        console.print(f"{title}:")
        for item in json.loads(items):
            console.print(_plain(f"  - {item}"))
    console.print(f"history: {', '.join(h['action'] for h in history)}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    from lessons.recall import RecallOptions, recall

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
    console = _console()
    if not result.matches:
        console.print("no task type shares anything with that; nothing would be recalled.")
        return 0
    for m in result.matches:
        console.print(
            f"type {m.type_id} {_cut(m.name, 50)}: evidence {m.evidence:.1f}, relevance {m.relevance():.2f}",
            markup=False,
        )
    for rank, s in enumerate(result.shown, 1):
        note = s.note
        console.print(
            f"{rank}. {note['id']} {note['kind']} relevance {s.relevance:.2f} score {s.score:.2f} "
            f"(from run {note['source_run'] or '-'}): {_cut(note['text'], 100)}", markup=False,
        )  # fmt: skip
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from lessons.stats import collect

    data = collect(open_book(args))
    if args.json:
        print(json.dumps(data))
        return 0
    console = _console()
    for key, value in data.items():
        if isinstance(value, dict):  # counts by kind, verification, outcome
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
        elif key == "size_bytes":
            key, value = "size", f"{value / 1e6:.1f} MB"
        console.print(f"{key.replace('_', ' '):<16} {value}", markup=False)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from lessons.transfer import export_lines

    book = open_book(args)
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
    print(f"exported {count} records from {book.path}", file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    from lessons.transfer import import_file

    book = open_book(args, create=True)
    counts = import_file(book, Path(args.file))
    print(
        f"imported into {book.path}: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        file=sys.stderr,
    )
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from lessons.merge import merge_files

    for source, counts in merge_files(Path(args.target), [Path(s) for s in args.sources]):
        if args.json:
            print(json.dumps({"target": args.target, "source": str(source), **counts}))
        else:
            print(
                f"merged {source} into {args.target}: "
                + ", ".join(f"{k} {v}" for k, v in counts.items())
            )
    return 0


def run_retire(args: argparse.Namespace) -> int:
    from lessons.notes import retire

    book = open_book(args)
    changed = retire(book, args.id, reason=args.reason, restore=args.restore)
    note = book.find_note(args.id)
    state = "restored" if args.restore else "retired"
    if changed:
        print(f"{note['id'] if note else args.id} {state} (kept, with its history)")
    else:
        print(f"{note['id'] if note else args.id} was already {state}")
    return 0
