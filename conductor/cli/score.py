"""`conductor score FILE...`: accuracy of published-format outputs, paper rule vs ours.

A batch's folder (or its results.jsonl) is scored too: each item's final answer, with
the batch's own task spec, the item from the batch's task file, and the run's last meta
turn from its transcript (for the paper's rule); items that ended in a system error are
not graded and count as unscored.

A file holds one record a line with `input`, `target` and `output` (the meta model's
last turn; the final answer is the triple-quoted text after `>> FINAL ANSWER:`), as
the meta-prompting paper published its runs. Each file's task comes from its name
(or --task); the table shows the paper's rule and ours side by side; `--json`
prints one object per file instead.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from conductor.cli.json_out import json_text
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:  # the scorers load when the command runs, not when any command starts
    from conductor.scoring.files import FileScore
    from conductor.tasks.specs import TaskSpec
    from conductor_kernel.interfaces import Sandbox


def _spec_for(path: str, task: str | None) -> TaskSpec:
    """A file's spec, with a message naming only this command's flags."""
    from conductor.tasks.specs import UnknownTaskError, known_tasks, resolve_spec

    try:
        return resolve_spec(path, task=task)
    except UnknownTaskError:
        stem = Path(path).name.split(".", 1)[0]
        what = (
            f"no built-in task is called {task!r}" if task else "its name matches no built-in task"
        )
        raise UserFacingError(
            f"{path}: {what}; built-in tasks: {known_tasks()}. Pass --task NAME, or put a spec "
            f"file {stem}.task.toml beside it"
        ) from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="accuracy of published-format outputs (paper rule vs ours)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE|DIR",
        help="JSONL files with input, target, output; or folders of them, one per method "
        "(then the Table 1 layout: tasks by methods); or a batch's folder or its "
        "results.jsonl",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the Table 1 layout (tasks by methods, each file's folder its method) "
        "as Markdown, as README.md shows it",
    )
    p.add_argument(
        "--rule",
        choices=("ours", "paper"),
        default="ours",
        help="which rule `correct`/`accuracy` report (default: ours; the table shows both)",
    )
    p.add_argument("--task", help="task name for every file (default: from each file's name)")
    p.add_argument(
        "--sandbox",
        default="auto",
        help="where P3 answers run: auto, docker, bwrap (default auto; never this host)",
    )
    p.add_argument(
        "--on-bad-line",
        choices=("stop", "skip"),
        default="stop",
        help="a malformed line stops scoring (default) or is skipped with a warning",
    )
    p.add_argument(
        "--diff", action="store_true", help="list the items where the two rules disagree"
    )
    p.set_defaults(handler=run_score)


def _open_sandbox(name: str) -> Sandbox:
    from sandbox.registry import open_sandbox

    if name == "subprocess":
        raise UserFacingError(
            "scoring runs untrusted answers; use --sandbox docker or bwrap, not subprocess"
        )
    from conductor.scoring.puzzles import SANDBOX_OPTIONS

    return open_sandbox(name, **SANDBOX_OPTIONS)


def expand(paths: list[str]) -> tuple[list[str], dict[str, str], bool]:
    """The files to score, each file's method (its folder's), and whether any folder
    was given (the Table 1 layout)."""
    from conductor.batch.scores import batch_results
    from conductor.methods import PUBLISHED_FOLDERS

    files: list[str] = []
    for path in paths:
        if batch_results(path) is not None:
            files.append(path)  # a batch: scored from its results
        elif Path(path).is_dir():
            found = sorted(str(p) for p in Path(path).glob("*.jsonl"))
            if not found:
                raise UserFacingError(f"{path}: a folder with no .jsonl files in it")
            files += found
        else:
            files.append(path)  # a missing one is named once its task is known
    methods = {}
    for file in files:
        folder = Path(file).resolve().parent.name
        methods[file] = PUBLISHED_FOLDERS.get(folder, folder)
    layout = any(Path(p).is_dir() and batch_results(p) is None for p in paths)
    return files, methods, layout


def run_score(args: argparse.Namespace) -> int:
    from conductor.batch.scores import batch_results, batch_spec, score_batch
    from conductor.scoring import check_dependencies
    from conductor.scoring.files import score_file

    files, methods, layout = expand(args.files)
    specs = []
    for path in files:
        results = batch_results(path)
        if results is not None:
            spec = _spec_for(path, args.task) if args.task else batch_spec(results)
        else:
            spec = _spec_for(path, args.task)
        specs.append((path, spec))
    for path, _ in specs:
        if not Path(path).exists():
            raise UserFacingError(f"{path}: no such file or folder; check the path")
    for _, spec in specs:
        check_dependencies(spec)  # refuse before any number is printed
    sandbox: Sandbox | None = None
    tallies = []
    with contextlib.ExitStack() as opened:  # the sandbox, if one was opened
        for path, spec in specs:
            if spec.scorer == "p3" and sandbox is None:
                sandbox = opened.enter_context(contextlib.closing(_open_sandbox(args.sandbox)))
            results = batch_results(path)
            if results is not None:
                found = score_batch(results, spec, sandbox=sandbox)
            else:
                found = [score_file(path, spec, sandbox=sandbox, on_error=args.on_bad_line)]
            tallies += found
            if args.json and not (layout or args.markdown):
                for tally in found:
                    print(json_text(tally.to_dict(args.rule), ensure_ascii=False), flush=True)
    if args.markdown:
        from conductor.export.score_tables import suite_tables
        from conductor.export.suite import render_markdown

        print("\n\n".join(render_markdown(t) for t in suite_tables(tallies, methods).values()))
    elif layout:
        _print_suite(tallies, methods, as_json=args.json, rule=args.rule)
    elif not args.json:
        _print_table(tallies, args.rule)
    if args.diff:
        _print_disagreements(tallies)
    return 0


def _print_suite(
    tallies: list[FileScore], methods: dict[str, str], *, as_json: bool, rule: str
) -> None:
    from rich.console import Console

    from conductor.export.score_tables import suite_tables
    from conductor.export.suite import rich_table

    tables = suite_tables(tallies, methods)
    if as_json:
        files = [t.to_dict(rule) | {"method": methods.get(t.file, "")} for t in tallies]
        print(
            json_text(
                {
                    "rule": rule,
                    "tables": {k: v.to_dict() for k, v in tables.items()},
                    "files": files,
                },
                ensure_ascii=False,
            )
        )
        return
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=140)
    for table in tables.values():
        console.print(rich_table(table))


def _print_table(tallies: list[FileScore], rule: str) -> None:
    from rich.console import Console

    from conductor.export.score_tables import score_table

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=120)  # piped: do not squeeze file names to 80 columns
    console.print(score_table(tallies, rule))


def _print_disagreements(tallies: list[FileScore]) -> None:
    from rich.console import Console

    from conductor.export.score_tables import disagreement_lines

    console = Console()
    for line in disagreement_lines(tallies):
        # One line per item, so the list can be grepped.
        console.print(line, highlight=False, soft_wrap=True)
