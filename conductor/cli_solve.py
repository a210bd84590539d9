"""`conductor solve QUESTION`: one run, printed live, saved as a transcript."""

from __future__ import annotations

import argparse
import json
import sys

from conductor.config import load_settings
from conductor.display import visible
from conductor.events import FinalAnswer, RunFinished


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that starts runs."""
    parser.add_argument("--model", help="meta model: auto, demo, anthropic:NAME, openai:NAME")
    parser.add_argument("--expert-model", help="model for the experts (default: the meta model)")
    parser.add_argument("--sandbox", help="auto, docker, bwrap, or subprocess (unsafe)")
    parser.add_argument("--max-rounds", type=int, help="meta-model turns at most (default 15)")
    parser.add_argument("--max-tokens", type=int, help="tokens a run may spend")
    parser.add_argument("--max-cost", type=float, help="dollars a run may spend")
    parser.add_argument("--no-python", action="store_true", help="do not offer Expert Python")
    # The notebook flags (a command may have declared its own already).
    notebook_flags = (
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
    }
    if args.no_python:
        run["python"] = False
    overrides = {
        "model": args.model,
        "expert_model": args.expert_model,
        "sandbox": args.sandbox,
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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="solve one question, printing the run live")
    p.add_argument("question", help="the question (use - to read it from stdin)")
    add_run_options(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--quiet", action="store_true", help="print only the final answer")
    p.set_defaults(handler=run_solve)


def run_solve(args: argparse.Namespace) -> int:
    from conductor.printer import RichPrinter
    from conductor.session import build_session
    from experts.registry import CONFIGURE_HINT, choose

    question = sys.stdin.read() if args.question == "-" else args.question
    settings = settings_from_args(args)
    choice = choose(settings.model)
    if choice.provider == "demo" and not args.json:
        print(f"Using the offline demo model ({choice.reason}). {CONFIGURE_HINT}", file=sys.stderr)
    session = build_session(settings)
    sinks = () if (args.json or args.quiet) else (RichPrinter(),)
    answer, finished = None, None
    try:
        for event in session.solve(question, sinks=sinks):
            if isinstance(event, FinalAnswer):
                answer = event.answer
            elif isinstance(event, RunFinished):
                finished = event
    finally:
        if session.sandbox is not None:
            session.sandbox.close()
    if args.json and finished is not None:
        print(
            json.dumps(
                {
                    "run_id": finished.run_id,
                    "status": finished.status,
                    "answer": answer,
                    "rounds": finished.rounds,
                    "usage": finished.usage.to_dict(),
                    "duration_s": round(finished.duration_s, 3),
                }
            )
        )
    elif args.quiet:
        # Exact for a pipe; on a terminal the model's control characters are shown, not run.
        text = answer if answer is not None else ""
        print(visible(text) if sys.stdout.isatty() else text)
    return 0 if finished is not None and finished.status == "answered" else 1
