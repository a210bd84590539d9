"""`conductor batch TASKFILE`: every item of a task file through the conductor.

Builds the batch from flags (spec, items, models, notebook, sandbox), hands it to
`BatchRunner`, shows a progress bar on a terminal, and writes and prints the report.
`--replay` reads a published transcript file instead and answers each item from its
own record (offline). See docs/batch.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conductor.cli.json_out import json_text
from conductor.config.flags import add_setting_flags, settings_from_args
from conductor_kernel.errors import ConfigError

if TYPE_CHECKING:  # what a batch needs is imported when it runs: `--help` stays quick
    from collections.abc import Callable

    from conductor.batch.report import ItemRecord, Tally
    from conductor.batch.setup import BatchSetup
    from conductor.batch.store import BatchFolder
    from conductor.config import Settings
    from conductor.tasks.files import Problem, TaskItem
    from conductor.tasks.specs import TaskSpec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch",
        help="run every item of a task file (concurrent, resumable, scored)",
        description="Run a task file's items through the conductor. Re-running the same "
        "command resumes: finished items are skipped.",
    )
    p.add_argument(
        "task_file",
        metavar="TASKFILE",
        nargs="+",
        help="JSONL or CSV task file (several, with --methods: a suite of comparisons)",
    )
    p.add_argument("--task", help="built-in task name (default: from the file's name)")
    p.add_argument("--spec", help="task spec file (TOML or JSON: name, description, scorer)")
    p.add_argument("--description", help="rules put before each input (with --scorer)")
    p.add_argument("--scorer", help="scorer name for a task that is not built in")
    p.add_argument("--concurrency", type=int, default=4, help="items at once (default 4)")
    p.add_argument("--limit", type=int, help="only the first N items of the file")
    p.add_argument(
        "--learn-order",
        choices=("sequential", "concurrent"),
        default="concurrent",
        help="sequential: one item at a time in file order, each seeing the notes of all "
        "earlier items; concurrent (default): items learn as they finish",
    )
    p.add_argument(
        "--on-error",
        "--on-bad-line",
        dest="on_error",
        choices=("skip", "stop"),
        default="stop",
        help="a malformed task line stops the batch (default) or is skipped with a warning",
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="re-run items that ended in a system error"
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="TASKFILE is a published transcript file: replay each record offline",
    )
    p.add_argument(
        "--ablation", nargs="?", type=int, const=0, metavar="SEED",
        help="A/B the notebook: learn on one split, test the other with recall on and off "
        "(same order; SEED picks the split, default 0); see docs/notebook.md",
    )  # fmt: skip
    p.add_argument(
        "--methods",
        metavar="A,B,...",
        help="compare methods: every item under each (same model, items and order), "
        "reported side by side against meta; `all` for the seven of Table 1 "
        "(see docs/methods.md)",
    )
    p.add_argument(
        "--with-notebook",
        action="store_true",
        help="with --methods: every method recalls and learns as configured "
        "(default: none does, so the comparison measures the methods)",
    )
    p.add_argument(
        "--replay-dir",
        metavar="DIR",
        help="with --methods: answer every run from the paper's published runs under DIR "
        "(with-python, without-python, baselines/METHOD), offline",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    # A batch learns into a notebook of its own unless told otherwise (conductor/batch/setup.py).
    add_setting_flags(p, notes={"notebook": "In a batch, empty means notebooks/batch-TASK.db."})
    from conductor.cli.ray import add_ray_options

    add_ray_options(p)
    p.set_defaults(handler=run_batch)


def _spec(args: argparse.Namespace) -> TaskSpec:
    from conductor.tasks.specs import resolve_spec

    if args.description is not None and not (args.scorer or args.task or args.spec):
        raise ConfigError("--description needs --scorer (or --task) to say how to score")
    if args.spec and (args.task or args.scorer or args.description is not None):
        raise ConfigError("--spec gives the whole task; drop --task/--scorer/--description")
    return resolve_spec(
        args.task_file,
        task=args.task,
        spec_file=args.spec,
        description=args.description,
        scorer=args.scorer,
    )


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


def _items(args: argparse.Namespace) -> list[TaskItem]:
    from conductor.tasks.files import read_task_file

    def warn(problem: Problem) -> None:
        _stderr(f"warning: skipped {problem}")

    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be 1 or more, not {args.limit}")
    task_file = read_task_file(args.task_file, on_error=args.on_error, warn=warn)
    return task_file.items[: args.limit] if args.limit else task_file.items


def run_batch(args: argparse.Namespace) -> int:
    if args.methods is not None:
        from conductor.cli.compare import run_comparisons

        return run_comparisons(args)
    for flag, given in (("--with-notebook", args.with_notebook), ("--replay-dir", args.replay_dir)):
        if given:
            raise ConfigError(f"{flag} goes with --methods (a comparison of methods)")
    if len(args.task_file) > 1:
        raise ConfigError(
            "several task files run as a suite of comparisons: add --methods (e.g. "
            "--methods all), or give one task file"
        )
    args.task_file = args.task_file[0]
    settings = settings_from_args(args)
    if settings.method not in ("meta", "meta-no-python"):
        if getattr(args, "ray", None) is not None:
            raise ConfigError("--ray runs meta-prompting only; choose --method meta")
        if args.replay or args.ablation is not None:
            raise ConfigError("--replay and --ablation run meta-prompting only; drop --method")
    if getattr(args, "ray", None) is not None:
        from conductor.cli.ray import run_ray_batch

        return run_ray_batch(args)
    from conductor.batch import session as batch_session
    from conductor.batch.setup import live_setup, replay_setup
    from conductor.batch.store import BatchFolder, batch_id

    if args.replay:
        settings = settings.model_copy(update={"recall": False, "learn": False})
    spec = _spec(args)
    items = _items(args)
    if args.ablation is not None:
        from conductor.batch.ablation import ablate_batch

        return ablate_batch(settings, spec, items, seed=args.ablation, as_json=args.json)
    folder_box: list[BatchFolder] = []

    def runs() -> Path:
        return folder_box[0].path / "runs"

    if args.replay:
        setup, items = replay_setup(
            settings, spec, items, runs, on_error=args.on_error, warn=_stderr
        )
    else:
        setup = live_setup(settings, spec, runs)
    concurrency = args.concurrency
    if settings.learn and args.learn_order == "sequential" and concurrency != 1:
        print("note: --learn-order sequential runs one item at a time", file=sys.stderr)
        concurrency = 1
    identity = batch_session.batch_identity(
        args, settings, spec, setup, learn_order=args.learn_order
    )
    folder = BatchFolder(batch_id(spec.name, identity), identity)
    folder_box.append(folder)
    folder.acquire()
    try:
        return _run(args, settings, spec, items, setup, folder, concurrency)
    finally:
        folder.release()


def _run(
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    items: list[TaskItem],
    setup: BatchSetup,
    folder: BatchFolder,
    concurrency: int,
) -> int:
    from conductor.batch import session as batch_session
    from conductor.batch.report import write_report
    from conductor.batch.runner import BatchPlan, BatchRunner
    from conductor.batch.setup import IndexSink, make_scorer

    session = batch_session.open_session(folder, args, settings, setup, concurrency)
    with batch_session.batch_log(folder.path):
        plan = BatchPlan(
            folder.path, folder.batch_id, spec.name, items, setup.question,
            make_scorer(spec, setup.sandbox_name, settings), {"batch_id": folder.batch_id},
        )  # fmt: skip
        progress = _Progress(enabled=not args.json and sys.stdout.isatty())
        index = IndexSink(folder.path / "runs")
        runner = BatchRunner(
            plan,
            setup.make_session,
            concurrency=concurrency,
            sinks=(index,),
            on_record=progress.update,
            retry_errors=args.retry_errors,
            session_no=session.number,
            cells=setup.cells,
        )
        # A stopped batch does not wait for runs.db held locked by another program: the
        # transcripts have the runs, and the next start brings runs.db up to date.
        index.index.give_up = runner.stopping
        todo = runner.pending()
        print(
            f"batch {folder.batch_id}: {len(items)} items, {runner.tally.done} finished "
            f"before, {len(todo)} to run at concurrency {concurrency} ({folder.path})",
            file=sys.stderr,
        )
        with progress.shown(runner.tally):
            outcome = runner.run()
    batch_session.close_session(session, outcome)
    report = batch_session.session_report(session, args, spec, items, runner.log)
    write_report(folder.path, report)
    _print_report(report, as_json=args.json)
    return batch_session.exit_code(outcome, report)


def _print_report(report: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json_text(report, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    from conductor.batch.report import render_markdown

    console = Console()
    text = render_markdown(report)
    if console.is_terminal:
        console.print(Markdown(text, hyperlinks=False))  # a model's [x](url) is no OSC 8 link
    else:
        print(text)


class _Progress:
    """A rich progress bar: done/total, accuracy so far, tokens, cost, ETA."""

    def __init__(
        self,
        *,
        enabled: bool,
        console: Any = None,
        by_method: Callable[[ItemRecord | None], str] | None = None,
    ) -> None:
        self.enabled = enabled
        self.console = console  # None: rich's own (stdout)
        # A comparison: a line under the bar with each method's accuracy so far, given
        # each record (None: before the first); a pooled accuracy would mean nothing.
        self.by_method = by_method
        self._line = ""
        self._bar: Any = None
        self._task: Any = None

    def shown(self, tally: Tally) -> Any:
        from contextlib import nullcontext

        if not self.enabled:
            return nullcontext()
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        owner = self
        self._line = self.by_method(None) if self.by_method is not None else ""

        class _WithLine(Progress):
            def get_renderables(self) -> Any:
                yield from super().get_renderables()
                if owner._line:
                    from rich.text import Text

                    yield Text(owner._line)

        self._bar = _WithLine(
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            *([] if self.by_method else [TextColumn("acc {task.fields[acc]}")]),
            TextColumn("{task.fields[tokens]} tok"),
            TextColumn("${task.fields[cost]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task("batch", total=tally.total, completed=tally.done)
        self._fields(tally)
        return self._bar

    def _fields(self, tally: Tally) -> None:
        acc = "-" if tally.accuracy is None else f"{tally.accuracy:.1f}%"
        self._bar.update(
            self._task,
            completed=tally.done,
            acc=acc,
            tokens=f"{tally.tokens:,}",
            cost=f"{tally.cost_usd:.4f}",
        )

    def update(self, record: ItemRecord, tally: Tally) -> None:
        from conductor.batch.store import is_finished

        if self.by_method is not None:
            self._line = self.by_method(record)
        if self._bar is not None and is_finished(record):
            self._fields(tally)
        if self._bar is not None:
            # One line per finished item, above the bar: what the bar's totals are made of.
            from rich.text import Text

            self._bar.console.print(Text(item_line(record)), soft_wrap=True)


def item_line(record: ItemRecord) -> str:
    """How one item ended, on one line: id, status, verdict or cause, seconds."""
    from conductor.batch.report import is_scored

    status = str(record.get("status"))
    if not record.get("final"):
        how = "interrupted (runs again)"
    elif status == "error":
        error = record.get("error") or {}
        how = f"error ({error.get('cause', 'runner')}): {error.get('message', '')}"
    elif is_scored(record):
        right = (record.get("score") or {}).get("correct")
        how = f"{status}, {'correct' if right else 'wrong'}"
    else:
        how = status + (f": {record['reason']}" if record.get("reason") else "")
    line = f"{record.get('item_id')} {how} ({float(record.get('duration_s') or 0):.1f} s)"
    from conductor_kernel.text.display import visible_line

    return visible_line(" ".join(line.split()))[:300]
