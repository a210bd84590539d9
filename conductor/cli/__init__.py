"""The `conductor` command: a thin argparse front over subcommand modules.

Each area registers its own subcommands (`register(subparsers)`) in its own module, so
no one file grows with every feature. A `UserFacingError` anywhere ends the command with
its message on stderr (no traceback) and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence

from conductor import __version__
from conductor_kernel.errors import UserFacingError


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """The whole command line; `lazy` leaves each command's setting flags to be made
    when that command is parsed (or its help printed), as `main` does."""
    from conductor.cli.lazy_parser import ExactParser, LazyParser

    parser = (LazyParser if lazy else ExactParser)(
        prog="conductor",
        description="A sandboxed meta-prompting conductor: one model conducts experts.",
    )
    parser.add_argument("--version", action="version", version=f"conductor {__version__}")
    parser.add_argument(
        "--home", help="data directory for runs and notebooks (default: $CONDUCTOR_HOME)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # The composition root: every command group, the TUI's included, is a plain import
    # here, so the import contracts see each edge (pyproject.toml, docs/architecture.md).
    # Each `register` only declares flags; what a command needs is imported when it runs.
    from conductor.cli import batch, mcp, notebook, replay, runs, score, serve, solve
    from sandbox import cli as sandbox_cli
    from tui import cli as tui_cli

    for module in (solve, runs, replay, score, batch, sandbox_cli, notebook, serve, mcp):
        module.register(sub)
    tui_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        # Answered before any command module (settings, models, pydantic) is imported.
        print(f"conductor {__version__}")
        return 0
    from conductor import interrupts

    # Help (the list of commands, or one command's flags) is argparse's own printing:
    # it needs neither rich nor the logging set up for a command, which cost
    # `solve --help` a third of its start.
    listing = not args or "-h" in args or "--help" in args
    try:
        with interrupts.installed(), contextlib.ExitStack() as stack:
            if not listing:
                stack.enter_context(_visible_logging())
                stack.enter_context(interrupts.pipes_close_alike())
            return _main(args)
    except KeyboardInterrupt as exc:
        name = getattr(exc, "signal_name", None) or interrupts.last_signal() or "SIGINT"
        interrupts.say(
            f"stopped by {name}; what had finished is saved "
            "(`conductor runs list` shows the runs, a batch resumes with the same command)."
        )
        return interrupts.EXIT_CODES.get(name, 130)
    except BrokenPipeError:
        interrupts.silence_broken_stdout()  # the reader (`| head`) has what it wanted
        return interrupts.EXIT_CODES["SIGPIPE"]


@contextlib.contextmanager
def _visible_logging() -> Iterator[None]:
    """Warnings to stderr as Python would print them, control characters made visible.

    Only when nothing else handles logging (an embedding program or a test harness
    keeps its own handlers); removed again when the command ends.
    """
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    from conductor_kernel.text.display import VisibleFormatter

    handler = logging.StreamHandler()  # sys.stderr as it is now
    handler.setLevel(logging.WARNING)
    handler.setFormatter(VisibleFormatter("%(message)s"))
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser(lazy=True)
    args = parser.parse_args(argv)
    if args.home:
        os.environ["CONDUCTOR_HOME"] = args.home
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        try:
            return int(handler(args) or 0)
        except OSError as exc:
            from record.writable import failed_write_message

            told = failed_write_message(exc)
            if told is None:
                raise
            raise UserFacingError(told) from None
    except UserFacingError as exc:
        from rich.console import Console
        from rich.text import Text

        from conductor_kernel.text.display import visible

        # As text, never markup: the message may quote a path, a user's argument or a
        # record (a `[/x]` would crash rich; an escape sequence would act on the terminal).
        message = Text("error: ", style="bold red").append(visible(str(exc)))
        try:
            Console(stderr=True).print(message, highlight=False, soft_wrap=True)
        except OSError:
            pass
        return 2


if __name__ == "__main__":
    sys.exit(main())
