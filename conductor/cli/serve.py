"""`conductor serve`: conductor as an OpenAI-compatible model (conductor/serve)."""

from __future__ import annotations

import argparse

from conductor.cli.http_flags import access_from, add_http_flags, limits_from
from conductor.config.flags import add_setting_flags, settings_from_args
from conductor.serve.conversation import MAX_QUESTION_CHARS
from conductor.serve.limits import SERVED_MAX_COST_USD, SERVED_MAX_TOKENS

KEY_VARIABLE = "CONDUCTOR_SERVE_API_KEY"
# Said beside the run limits' own help: a served run is capped even where they are unset.
SERVED_CAPS = {
    "run.max_tokens": f"A served run: {SERVED_MAX_TOKENS} unless set.",
    "run.max_cost_usd": f"A served run: {SERVED_MAX_COST_USD:g} unless set.",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve conductor as an OpenAI-compatible chat model over HTTP",
        description="Each chat request becomes one recorded run; the model name "
        "`conductor:METHOD@MODEL` chooses the method and the underlying model. Every "
        "request sends a key (`Authorization: Bearer KEY`): $CONDUCTOR_SERVE_API_KEY, or "
        "one made at start and printed with the URL. Needs the `serve` extra: "
        "make extras EXTRAS=serve in the checkout.",
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
        "--max-concurrent", type=int, default=4, metavar="N", help="runs at once (default: 4)"
    )
    p.add_argument(
        "--max-question-chars",
        type=int,
        default=MAX_QUESTION_CHARS,
        metavar="N",
        help="a request's question (its messages, folded) in characters at most "
        f"(default: {MAX_QUESTION_CHARS})",
    )
    add_http_flags(p, key_variable=KEY_VARIABLE)
    add_setting_flags(p, notes=SERVED_CAPS)
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from conductor_kernel.errors import UserFacingError

    try:
        from conductor.serve.app import ServeOptions
        from conductor.serve.server import serve
    except ImportError as exc:
        from conductor.extras import needs_extra

        raise UserFacingError(needs_extra("`conductor serve`", "serve", exc.name)) from None
    if args.max_concurrent < 1 or args.max_question_chars < 1:
        raise UserFacingError("--max-concurrent and --max-question-chars must be at least 1")
    from conductor.config.offered import offered_models
    from record.writable import writable_home

    writable_home()  # every request records a run there: refuse now, not per request
    access, key_said = access_from(args, args.host)
    settings = settings_from_args(args)
    options = ServeOptions(
        settings=settings,
        models=offered_models(args.serve_model, settings.model),
        access=access,
        max_question_chars=args.max_question_chars,
        max_concurrent=args.max_concurrent,
    )
    serve(options, host=args.host, port=args.port, limits=limits_from(args), key_said=key_said)
    return 0
