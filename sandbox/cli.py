"""`conductor sandbox build|doctor|exec`: make the image, see what works, try code."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from conductor_kernel.errors import UserFacingError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sandbox", help="build, check and try the sandbox that runs Expert Python's code"
    )
    actions = parser.add_subparsers(dest="sandbox_action", metavar="ACTION")
    parser.set_defaults(handler=lambda _args: parser.print_help() or 0)

    build = actions.add_parser("build", help="build the Docker sandbox image")
    mode = build.add_mutually_exclusive_group()
    mode.add_argument(
        "--online",
        dest="mode",
        action="store_const",
        const="online",
        help="docker build from sandbox/Dockerfile (needs a registry)",
    )
    mode.add_argument(
        "--offline",
        dest="mode",
        action="store_const",
        const="offline",
        help="debootstrap a Debian root file system and import it (needs root and a "
        "Debian mirror; the default when no registry is reachable)",
    )
    build.add_argument(
        "--cache",
        type=Path,
        help="where to keep the debootstrap tarball (default: $CONDUCTOR_HOME/sandbox)",
    )
    build.add_argument("--mirror", help="Debian mirror for --offline")
    build.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    build.set_defaults(handler=cmd_build, mode="auto")

    doctor = actions.add_parser("doctor", help="say which sandbox backends work here, and why not")
    doctor.set_defaults(handler=cmd_doctor)

    run = actions.add_parser("exec", help="run a Python file (or - for stdin) and print the result")
    run.add_argument("file", help="a Python file, or - to read the code from standard input")
    run.add_argument(
        "--sandbox", dest="backend", default="auto", help="docker, bwrap, subprocess or auto"
    )
    # The old name, kept working but not advertised: every other command says --sandbox.
    run.add_argument("--backend", dest="backend", help=argparse.SUPPRESS)
    run.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    run.set_defaults(handler=cmd_exec)


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def cmd_build(args: argparse.Namespace) -> int:
    from sandbox import image
    from sandbox.docker.backend import daemon_problem, docker_client

    problem = daemon_problem()
    if problem:
        raise UserFacingError(f"cannot build the sandbox image: {problem}")
    console = _console()
    tag = image.build_image(
        docker_client(),
        mode=args.mode,
        cache_dir=args.cache,
        mirror=args.mirror or image.DEFAULT_MIRROR,
        force=args.force,
        progress=lambda line: console.print(f"[dim]sandbox build:[/] {line}"),
    )
    print(tag)
    return 0


def cmd_doctor(_args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from sandbox import image, registry

    table = Table(title="sandbox backends on this machine")
    table.add_column("backend")
    table.add_column("works")
    table.add_column("details")
    working = []
    for name in registry.BACKENDS:
        why_not = registry.probe(name)
        if why_not is None:
            working.append(name)
            detail = _details(name)
            table.add_row(name, "[green]yes[/]", detail)
        else:
            table.add_row(name, "[red]no[/]", why_not)
    console = Console(highlight=False)
    console.print(table)
    console.print(f"image tag: {image.image_tag()}   bubblewrap root: {image.rootfs_path()}")
    _print_protections(console, working)
    try:
        chosen = registry.resolve_name("auto")
    except UserFacingError as exc:
        console.print(f"[red]auto picks nothing:[/] {exc}")
        return 1
    console.print(f"auto picks: [bold]{chosen}[/]")
    return 0


def _print_protections(console: Any, backends: list[str]) -> None:
    """Per working backend: which protections hold on this machine, checked live."""
    from rich.table import Table

    from sandbox.protections import REPORTS

    for name in backends:
        if name not in REPORTS:
            continue
        table = Table(title=f"{name}: protections on this machine")
        table.add_column("protection")
        table.add_column("holds")
        table.add_column("details")
        try:
            rows = REPORTS[name]()
        except Exception as exc:  # a broken probe is itself worth reporting
            console.print(f"[red]{name}: could not check the protections:[/] {exc}")
            continue
        marks = {True: "[green]yes[/]", False: "[red]no[/]", None: "[dim]n/a[/]"}
        for row in rows:
            table.add_row(row.name, marks[row.holds], row.detail)
        console.print(table)


def _details(name: str) -> str:
    if name == "docker":
        from sandbox import image

        return f"image {image.image_tag()} present; hardened, warm pool"
    if name == "subprocess":
        return "runs code as you, isolating nothing: only when asked for by name"
    return "ready"


def cmd_exec(args: argparse.Namespace) -> int:
    from sandbox.registry import backend_class, open_sandbox, resolve_name

    if args.timeout <= 0:
        raise UserFacingError(f"--timeout must be positive, got {args.timeout}")
    backend = resolve_name(args.backend)
    backend_class(backend)  # an unknown name fails here, before stdin is read
    code = _read_code(args.file)
    # One execution: no spare container is worth warming.
    options = {"pool_size": 0} if backend == "docker" else {}
    sandbox = open_sandbox(backend, **options)
    try:
        result = sandbox.run(code, timeout=args.timeout)
    finally:
        sandbox.close()
    print(json.dumps(result.to_dict(), indent=2))
    if result.infra_error:
        return 2
    return 0 if result.ok else 1


def _read_code(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserFacingError(
            f"cannot read {path}: {exc}. Pass a UTF-8 Python file, or - for stdin."
        ) from exc
