"""What every batch command (local, comparison, Ray) reads from its flags the same
way, the task's spec and its items, and how it prints the finished report."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from conductor.cli.json_out import json_text
from conductor_kernel.errors import ConfigError

if TYPE_CHECKING:  # what a batch needs is imported when it runs: `--help` stays quick
    from conductor.tasks.files import Problem, TaskItem
    from conductor.tasks.specs import TaskSpec


def task_spec(args: argparse.Namespace) -> TaskSpec:
    """The task's spec from `--task`, `--spec` or `--scorer`/`--description`."""
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


def warn(text: str) -> None:
    print(text, file=sys.stderr)


def task_items(args: argparse.Namespace) -> list[TaskItem]:
    """The task file's items, the first `--limit` of them; a bad line stops or warns."""
    from conductor.tasks.files import read_task_file

    def skipped(problem: Problem) -> None:
        warn(f"warning: skipped {problem}")

    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be 1 or more, not {args.limit}")
    task_file = read_task_file(args.task_file, on_error=args.on_error, warn=skipped)
    return task_file.items[: args.limit] if args.limit else task_file.items


def print_report(report: dict[str, Any], *, as_json: bool) -> None:
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
