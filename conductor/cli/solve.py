"""`conductor solve QUESTION`: one run, printed live, saved as a transcript."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from conductor.cli.json_out import json_text
from conductor.config.flags import add_setting_flags, settings_from_args
from conductor_kernel.errors import ConfigError

if TYPE_CHECKING:
    from conductor.session.run import RunResult
    from conductor_kernel.events import RunFinished, RunStarted


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="solve one question, printing the run live")
    p.add_argument("question", help="the question (use - to read it from stdin)")
    add_setting_flags(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--quiet", action="store_true", help="print only the final answer")
    p.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    from conductor import interrupts
    from conductor.export.terminal import RichPrinter
    from conductor.session import build_session
    from conductor_kernel.text.counts import plural
    from experts.registry import CONFIGURE_HINT, choose

    question = sys.stdin.read() if args.question == "-" else args.question
    if not question.strip():
        # A usage error: nothing to run, so nothing is recorded.
        raise ConfigError(
            "the question is empty; give it as the argument, or `-` to read it from stdin"
        )
    settings = settings_from_args(args)
    choice = choose(settings.model)
    from conductor.methods import get_method

    runs_code = get_method(settings.method, python=settings.run.python).python
    if choice.provider == "demo" and not args.json:
        interrupts.say(f"Using the offline demo model ({choice.reason}). {CONFIGURE_HINT}")
    if runs_code and not args.json and sys.stderr.isatty():
        # Starting a sandbox can take seconds on a cold machine: say so at once.
        interrupts.say(f"starting the {settings.sandbox} sandbox…")
    try:
        session = build_session(settings)
    except KeyboardInterrupt as exc:
        name = getattr(exc, "signal_name", "SIGINT")
        interrupts.say(f"stopped by {name} before the run started; nothing was recorded.")
        return interrupts.EXIT_CODES.get(name, 130)
    sinks: tuple = ()
    if not (args.json or args.quiet):
        printer = RichPrinter()
        # rich ends the process (SystemExit) when stdout's reader is gone; here the
        # session stops the run instead, so its end is recorded and told.
        printer.console.on_broken_pipe = _output_closed  # type: ignore[method-assign]
        sinks = (printer,)

    def stop(signal_name: str) -> bool:
        if session.phase != "running":
            return False  # learning (or nothing) is in progress: abandon it at once
        session.cancel()
        return True

    try:
        with session, interrupts.graceful(stop):
            session.run(question, sinks=sinks)
    except KeyboardInterrupt as exc:
        name = getattr(exc, "signal_name", "SIGINT")
        interrupts.say(_stopped_message(name, session.last.started, session.last.finished))
        return interrupts.EXIT_CODES.get(name, 130)
    result = session.last
    finished = result.finished
    signal_name = interrupts.last_signal()
    if finished is not None and (signal_name or session.stopped_by):
        why = f"stopped by {signal_name}" if signal_name else session.stopped_by
        how = (
            f"as interrupted after {plural(finished.rounds, 'round')}"
            if finished.status == "interrupted"
            else f"({finished.status})"
        )
        interrupts.say(
            f"{why}: run {finished.run_id} is saved {how} "
            f"(`conductor runs show {finished.run_id}`)."
        )
    try:
        _present(args, result, sinks)
    except BrokenPipeError:
        interrupts.silence_broken_stdout()
        return interrupts.EXIT_CODES["SIGPIPE"]
    if signal_name is not None:
        return interrupts.EXIT_CODES.get(signal_name, 130)
    if session.stopped_by is not None:
        interrupts.silence_broken_stdout()
        return interrupts.EXIT_CODES["SIGPIPE"]
    return 0 if finished is not None and finished.status == "answered" else 1


def _stopped_message(name: str, started: RunStarted | None, finished: RunFinished | None) -> str:
    """What a signal during `solve` left recorded, in a sentence."""
    if finished is not None:
        return (
            f"stopped by {name} while learning: run {finished.run_id} is saved "
            f"({finished.status}); nothing was learned from it."
        )
    if started is not None:
        return (
            f"stopped by {name}: run {started.run_id} is saved as interrupted "
            "(`conductor runs show` it)."
        )
    return f"stopped by {name} before the run started; nothing was recorded."


def _present(args: argparse.Namespace, result: RunResult, sinks: tuple) -> None:
    """The run's end as asked: one JSON object, the bare answer, or the account line."""
    from conductor.export.terminal import shown_line
    from conductor_kernel.text.display import visible
    from record.ending import ending

    started, answer, finished = result.started, result.answer, result.finished
    told = ending(result.outline) if result.outline is not None else None
    if told is None:
        return
    if args.json and finished is not None:
        fields = {
            "run_id": finished.run_id,
            "method": started.method_name if started is not None else None,
            "status": finished.status,
            "answer": answer,
            "verdict": told.verdict or None,
            "reason": told.why or None,
            "account": told.line(),
            "rounds": finished.rounds,
            "usage": finished.usage.to_dict(),
            "duration_s": round(finished.duration_s, 3),
        }
        print(json_text(fields), flush=True)
    elif args.quiet and answer is not None and told.answered:
        # Exact for a pipe; on a terminal the model's control characters are shown, not run.
        print(visible(answer) if sys.stdout.isatty() else answer, flush=True)
    elif args.quiet:
        from conductor import interrupts

        interrupts.say(told.line())
    elif sinks:
        # The account of the run's end, the same words every way in uses.
        sinks[0].console.print(shown_line(told.line(), style="bold"))


def _output_closed() -> None:
    from conductor import interrupts

    interrupts.silence_broken_stdout()
    raise BrokenPipeError("the reader of the output has gone (a closed pipe)")
