"""`conductor serve`: conductor as an OpenAI-compatible model (conductor/serve)."""

from __future__ import annotations

import argparse

from conductor.config.flags import add_setting_flags, settings_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve conductor as an OpenAI-compatible chat model over HTTP",
        description="Each chat request becomes one recorded run; the model name "
        "`conductor:METHOD@MODEL` chooses the method and the underlying model. "
        "Needs the `serve` extra: pip install 'conductor[serve]'.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    p.add_argument(
        "--serve-model",
        action="append",
        metavar="MODEL",
        help="an underlying model to offer (repeatable; default: the `model` setting)",
    )
    p.add_argument(
        "--api-key-env",
        default="CONDUCTOR_SERVE_API_KEY",
        metavar="VARIABLE",
        help="environment variable holding the key clients must send (required unless "
        "bound to loopback only; default: CONDUCTOR_SERVE_API_KEY)",
    )
    p.add_argument(
        "--max-concurrent", type=int, default=4, metavar="N", help="runs at once (default: 4)"
    )
    add_setting_flags(p)
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from conductor_kernel.errors import UserFacingError

    try:
        from conductor.serve.app import ServeOptions
        from conductor.serve.server import key_from, serve
    except ImportError as exc:
        raise UserFacingError(
            f"`conductor serve` needs the serve extra ({exc.name} is missing): "
            "pip install 'conductor[serve]'"
        ) from None
    if args.max_concurrent < 1:
        raise UserFacingError("--max-concurrent must be at least 1")
    from conductor.config.offered import offered_models

    settings = settings_from_args(args)
    models = offered_models(args.serve_model, settings.model)
    options = ServeOptions(
        settings=settings,
        models=models,
        api_key=key_from(args.api_key_env),
        max_concurrent=args.max_concurrent,
    )
    serve(options, host=args.host, port=args.port)
    return 0
