"""`conductor tui`: open the Textual app (the only command that imports textual)."""

from __future__ import annotations

import argparse

SCREENS = ("solve", "runs", "notebook", "batch")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the terminal UI: solve live, audit runs, notebook, batch")
    p.add_argument("--model", help="meta model: auto, demo, anthropic:NAME, openai:NAME")
    p.add_argument("--sandbox", help="auto, docker, bwrap, or subprocess (unsafe)")
    p.add_argument("--notebook", help="notebook database to recall from and learn into")
    p.add_argument("--screen", choices=SCREENS, default="solve", help="screen to open first")
    p.add_argument("--run", help="open this run (id, prefix or transcript file) for audit")
    p.set_defaults(handler=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    from conductor.config import load_settings
    from tui.app import ConductorApp

    overrides = {"model": args.model, "sandbox": args.sandbox, "notebook": args.notebook}
    settings = load_settings({k: v for k, v in overrides.items() if v})
    ConductorApp(settings, start_mode=args.screen, open_run=args.run).run()
    return 0
