"""`conductor tui`: open the Textual app (the only command that imports textual)."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

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


class _Notify(logging.Handler):
    """A warning logged while the app runs becomes a notification: written to stderr it
    was drawn over the screen (`the subprocess sandbox isolates nothing…` across the
    first screen's banner)."""

    def __init__(self, app: App[Any]) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.shown: set[str] = set()  # each once: the subprocess warning comes every run

    def emit(self, record: logging.LogRecord) -> None:
        message = self.format(record)
        if message in self.shown:
            return
        self.shown.add(message)
        severity: Literal["warning", "error"] = (
            "error" if record.levelno >= logging.ERROR else "warning"
        )
        # `notify` posts a message, which Textual makes safe from any thread and never
        # waits on the app (`call_from_thread` would: a worker logging while the app
        # thread joins it would deadlock).
        self.app.notify(message, severity=severity, markup=False)


@contextlib.contextmanager
def logs_as_notifications(app: App[Any]) -> Iterator[None]:
    """While the app runs: the root logger's terminal handlers set aside, warnings shown
    as notifications (control characters made visible, as on the terminal)."""
    from conductor_kernel.text.display import VisibleFormatter

    root = logging.getLogger()
    terminal = [
        h for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]  # fmt: skip
    notify = _Notify(app)
    notify.setFormatter(VisibleFormatter("%(message)s"))
    for handler in terminal:
        root.removeHandler(handler)
    root.addHandler(notify)
    try:
        yield
    finally:
        root.removeHandler(notify)
        for handler in terminal:
            root.addHandler(handler)


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
        with interrupts.graceful(stop), logs_as_notifications(app):
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
