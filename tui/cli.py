"""`conductor tui`: open the Textual app (the only command that imports textual)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from conductor.config.flags import add_setting_flags

if TYPE_CHECKING:
    from textual.app import App

SCREENS = ("solve", "runs", "notebook", "batch")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the terminal UI: solve live, audit runs, notebook, batch")
    p.add_argument("--screen", choices=SCREENS, default="solve", help="screen to open first")
    p.add_argument("--run", help="open this run (id, prefix or transcript file) for audit")
    add_setting_flags(p)
    p.set_defaults(handler=run_tui)


CRASHED = (
    "conductor tui stopped on an unexpected error (shown above). Every run is saved as it "
    "goes; `conductor runs list` shows them. Please report the error with the lines above."
)


def run_tui(args: argparse.Namespace) -> int:
    from conductor.config.flags import settings_from_args
    from tui.app import ConductorApp

    settings = settings_from_args(args)
    return run_app(ConductorApp(settings, start_mode=args.screen, open_run=args.run))


def run_app(app: App[Any], *, headless: bool = False) -> int:
    """Run the app; an error it did not handle ends it non-zero with a short message.

    A stop signal (SIGTERM, SIGINT from outside, SIGHUP from a closed terminal) closes the
    app as ctrl+q does, and the exit code says which signal it was. However the app ends,
    the run in flight is stopped and its end recorded before the process goes.
    """
    import asyncio
    import sys

    from conductor import interrupts
    from tui.app import ConductorApp

    def stop(signal_name: str) -> bool:
        try:
            loop = asyncio.get_running_loop()  # the app's: a handler runs in its thread
        except RuntimeError:
            return False  # the app is not running (yet or any more): stop at once
        loop.call_soon_threadsafe(app.exit)  # safe from a signal handler
        return True

    try:
        with interrupts.graceful(stop):
            app.run(headless=headless)
    except Exception as exc:  # raised outside the app's own loop (start-up, shut-down)
        print(f"conductor tui: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(CRASHED, file=sys.stderr)
        return 1
    finally:
        if isinstance(app, ConductorApp):
            app.stop_runs()
    signal_name = interrupts.last_signal()
    if signal_name is not None:
        interrupts.say(
            f"conductor tui: stopped by {signal_name}; every run is saved "
            "(`conductor runs list` shows them)."
        )
        return interrupts.EXIT_CODES.get(signal_name, 130)
    code = app.return_code or 0
    if code != 0:
        print(CRASHED, file=sys.stderr)
    return code
