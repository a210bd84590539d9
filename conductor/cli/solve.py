"""`conductor solve QUESTION`: one run, printed live, saved as a transcript."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from conductor.config import load_settings
from conductor_kernel.display import visible
from conductor_kernel.events import FinalAnswer, RunFinished, RunStarted


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that starts runs."""
    from conductor.methods import METHODS

    parser.add_argument("--model", help="meta model: auto, demo, anthropic:NAME, openai:NAME")
    parser.add_argument(
        "--method",
        metavar="NAME",
        help="how the run asks the model: meta (default; with --no-python, meta without "
        f"Python) or a baseline of the paper's Table 1. One of: {', '.join(METHODS)}",
    )
    parser.add_argument("--expert-model", help="model for the experts (default: the meta model)")
    parser.add_argument("--sandbox", help="auto, docker, bwrap, or subprocess (unsafe)")
    parser.add_argument("--max-rounds", type=int, help="meta-model turns at most (default 15)")
    parser.add_argument("--max-tokens", type=int, help="tokens a run may spend")
    parser.add_argument("--max-cost", type=float, help="dollars a run may spend")
    parser.add_argument("--no-python", action="store_true", help="do not offer Expert Python")
    parser.add_argument(
        "--model-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds a model call may go silent before it is retried (default 60)",
    )
    parser.add_argument(
        "--python-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds each sandboxed program may run (default 10)",
    )
    # The notebook flags (a command may have declared its own already).
    notebook_flags: tuple[tuple[str, dict[str, Any]], ...] = (
        ("--notebook", {"metavar": "PATH", "help": "notebook file (default: notebook.db)"}),
        ("--no-recall", {"action": "store_true", "help": "do not recall notes into the prompt"}),
        ("--no-learn", {"action": "store_true", "help": "do not distill the run into notes"}),
    )
    for flag, options in notebook_flags:
        if flag not in parser._option_string_actions:
            parser.add_argument(flag, **options)


def settings_from_args(args: argparse.Namespace):
    run: dict[str, object] = {
        "max_rounds": args.max_rounds,
        "max_tokens": args.max_tokens,
        "max_cost_usd": args.max_cost,
        "python_timeout_s": getattr(args, "python_timeout", None),
    }
    if args.no_python:
        run["python"] = False
    overrides = {
        "model": args.model,
        "expert_model": args.expert_model,
        "sandbox": args.sandbox,
        "model_timeout_s": getattr(args, "model_timeout", None),
        "run": {k: v for k, v in run.items() if v is not None},
    }
    for flag, key in (("notebook", "notebook"),):
        if getattr(args, flag, None):
            overrides[key] = getattr(args, flag)
    if getattr(args, "no_recall", False):
        overrides["recall"] = False
    if getattr(args, "no_learn", False):
        overrides["learn"] = False
    return load_settings(overrides)


def method_of(args: argparse.Namespace) -> str | None:
    """The method the flags name, checked (None: the default, meta-prompting)."""
    from conductor.methods import check_method

    name = getattr(args, "method", None)
    return check_method(name) if name else None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="solve one question, printing the run live")
    p.add_argument("question", help="the question (use - to read it from stdin)")
    add_run_options(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--quiet", action="store_true", help="print only the final answer")
    p.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    from conductor import interrupts
    from conductor.export.terminal import RichPrinter
    from conductor.session import build_session
    from experts.registry import CONFIGURE_HINT, choose

    question = sys.stdin.read() if args.question == "-" else args.question
    settings = settings_from_args(args)
    method_of(args)  # an unknown method is refused before anything starts
    choice = choose(settings.model)
    if choice.provider == "demo" and not args.json:
        interrupts.say(f"Using the offline demo model ({choice.reason}). {CONFIGURE_HINT}")
    from conductor.methods import get_method

    runs_code = get_method(method_of(args) or "meta", python=settings.run.python).python
    if runs_code and not args.json and sys.stderr.isatty():
        # Starting a sandbox can take seconds on a cold machine: say so at once.
        interrupts.say(f"starting the {settings.sandbox} sandbox…")
    try:
        session = build_session(settings, method=method_of(args))
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
    answer, started, finished = None, None, None

    def stop(signal_name: str) -> bool:
        if session.phase != "running":
            return False  # learning (or nothing) is in progress: abandon it at once
        session.cancel()
        return True

    try:
        with interrupts.graceful(stop):
            for event in session.solve(question, sinks=sinks):
                if isinstance(event, RunStarted):
                    started = event
                elif isinstance(event, FinalAnswer):
                    answer = event.answer
                elif isinstance(event, RunFinished):
                    finished = event
    except KeyboardInterrupt as exc:
        name = getattr(exc, "signal_name", "SIGINT")
        if finished is not None:
            interrupts.say(
                f"stopped by {name} while learning: run {finished.run_id} is saved "
                f"({finished.status}); nothing was learned from it."
            )
        elif started is not None:
            interrupts.say(
                f"stopped by {name}: run {started.run_id} is saved as interrupted "
                "(`conductor runs show` it)."
            )
        else:
            interrupts.say(f"stopped by {name} before the run started; nothing was recorded.")
        return interrupts.EXIT_CODES.get(name, 130)
    finally:
        if session.sandbox is not None:
            session.sandbox.close()
    signal_name = interrupts.last_signal()
    if finished is not None and (signal_name or session.stopped_by):
        why = f"stopped by {signal_name}" if signal_name else session.stopped_by
        how = (
            f"as interrupted after {finished.rounds} rounds"
            if finished.status == "interrupted"
            else f"({finished.status})"
        )
        interrupts.say(
            f"{why}: run {finished.run_id} is saved {how} "
            f"(`conductor runs show {finished.run_id}`)."
        )
    try:
        if args.json and finished is not None:
            print(
                json.dumps(
                    {
                        "run_id": finished.run_id,
                        "method": started.method_name if started is not None else None,
                        "status": finished.status,
                        "answer": answer,
                        "rounds": finished.rounds,
                        "usage": finished.usage.to_dict(),
                        "duration_s": round(finished.duration_s, 3),
                    }
                ),
                flush=True,
            )
        elif args.quiet:
            # Exact for a pipe; on a terminal the model's control characters are shown, not run.
            text = answer if answer is not None else ""
            print(visible(text) if sys.stdout.isatty() else text, flush=True)
    except BrokenPipeError:
        interrupts.silence_broken_stdout()
        return interrupts.EXIT_CODES["SIGPIPE"]
    if signal_name is not None:
        return interrupts.EXIT_CODES.get(signal_name, 130)
    if session.stopped_by is not None:
        interrupts.silence_broken_stdout()
        return interrupts.EXIT_CODES["SIGPIPE"]
    return 0 if finished is not None and finished.status == "answered" else 1


def _output_closed() -> None:
    from conductor import interrupts

    interrupts.silence_broken_stdout()
    raise BrokenPipeError("the reader of the output has gone (a closed pipe)")
