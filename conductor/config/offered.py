"""The models a server offers its callers: the operator names them, a caller picks one.

A model spec says where a run's requests go and which key goes with them:
`openai:NAME@URL` sends the operator's OpenAI key to URL, `anthropic:NAME@URL` the
Anthropic one. So a caller of `conductor serve` or `conductor mcp` never writes a spec
of its own: it names one the operator offered (`--serve-model`, else the `model`
setting), exactly as offered, and anything else is refused before any model client is
built, so nothing is connected to and no key is sent. Both servers decide here.
"""

from __future__ import annotations

from collections.abc import Sequence

from conductor_kernel.errors import UserFacingError


class UnofferedModel(UserFacingError):
    """A model a caller asked for that the operator did not offer."""


def offered_models(named: Sequence[str] | None, configured: str) -> tuple[str, ...]:
    """What a server offers: the models the operator named, in order and once each,
    else the configured `model` alone."""
    models = tuple(dict.fromkeys(spec.strip() for spec in named or () if spec.strip()))
    return models or (configured,)


def is_offered(spec: str, models: tuple[str, ...]) -> bool:
    """Whether `spec` is one of `models`, character for character: a spec that differs
    at all (another URL, a space) may mean another server."""
    return spec in models


def offered(asked: str | None, models: tuple[str, ...]) -> str:
    """The offered model `asked` names (the first offered when None); anything else is
    refused with the ones to name."""
    if not models:
        raise UnofferedModel("this server offers no model")
    if asked is None:
        return models[0]
    if is_offered(asked, models):
        return asked
    raise UnofferedModel(
        f"model {asked!r} is not offered here; name one of: {', '.join(models)} "
        f"(or none, for {models[0]}). The operator offers more with --serve-model MODEL."
    )
