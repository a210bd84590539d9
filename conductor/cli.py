"""The `conductor` command: a thin argparse front over subcommand modules.

Each area registers its own subcommands (`register(subparsers)`) in its own module, so
no one file grows with every feature. A `UserFacingError` anywhere ends the command with
its message on stderr (no traceback) and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from conductor import __version__
from conductor.errors import UserFacingError

# Modules that add subcommands; each defines `register(subparsers)`.
COMMAND_MODULES = (
    "conductor.cli_solve",
    "conductor.cli_runs",
    "conductor.cli_replay",
    "conductor.cli_import",
    "conductor.cli_score",
    "conductor.cli_batch",
    "conductor.cli_audit",
    "sandbox.cli",
    "notebook.cli",
    "tui.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conductor",
        description="A sandboxed meta-prompting conductor: one model conducts experts.",
    )
    parser.add_argument("--version", action="version", version=f"conductor {__version__}")
    parser.add_argument(
        "--home", help="data directory for runs and notebooks (default: $CONDUCTOR_HOME)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from conductor import interrupts

    try:
        with interrupts.installed():
            return _main(argv)
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


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.home:
        import os

        os.environ["CONDUCTOR_HOME"] = args.home
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return int(handler(args) or 0)
    except UserFacingError as exc:
        from rich.console import Console
        from rich.markup import escape

        try:
            Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        except OSError:
            pass
        return 2


if __name__ == "__main__":
    sys.exit(main())
