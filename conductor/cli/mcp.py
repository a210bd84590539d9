"""`conductor mcp`: runs and the notebook as MCP tools (conductor/mcp_server)."""

from __future__ import annotations

import argparse

from conductor.cli.http_flags import access_from, add_http_flags, limits_from
from conductor.config.flags import add_setting_flags, settings_from_args

KEY_VARIABLE = "CONDUCTOR_MCP_API_KEY"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the tools solve, recall, notebook_search, run_show over MCP (stdio)",
        description="A Model Context Protocol server for agents: over stdio by default, or "
        "streamable HTTP on 127.0.0.1 with --http PORT, where every request sends a key "
        "(`Authorization: Bearer KEY`): $CONDUCTOR_MCP_API_KEY, or one made at start and "
        "printed with the URL. Needs the mcp extra: make extras EXTRAS=mcp in the checkout.",
    )
    p.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on this port")
    add_http_flags(p, key_variable=KEY_VARIABLE)  # what --http answers
    p.add_argument(
        "--serve-model",
        action="append",
        metavar="MODEL",
        help="a model `solve` may be asked for (repeatable; default: the `model` setting); "
        "a caller names one of these, never a spec of its own",
    )
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=4,
        metavar="N",
        help="`solve` runs at once; more are refused (default: 4)",
    )
    add_setting_flags(p)  # the settings every run `solve` starts is held to
    p.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    from conductor_kernel.errors import UserFacingError

    try:
        from conductor.mcp_server.server import create_server
    except ImportError as exc:
        from conductor.extras import needs_extra

        raise UserFacingError(needs_extra("`conductor mcp`", "mcp", exc.name)) from None
    from conductor.config.offered import offered_models

    if args.max_concurrent < 1:
        raise UserFacingError("--max-concurrent must be at least 1")
    settings = settings_from_args(args)
    server = create_server(
        settings,
        models=offered_models(args.serve_model, settings.model),
        max_concurrent=args.max_concurrent,
    )
    if args.http is None:
        server.run("stdio")
        return 0
    from conductor.mcp_server.http import HOST, serve_http

    access, key_said = access_from(args, HOST)
    serve_http(server, access, args.http, limits=limits_from(args), key_said=key_said)
    return 0
