"""The model ids a server offers: `conductor:METHOD@MODEL`, one per method and model.

Only the underlying models the operator served may be asked for: a client naming any
other (a URL of its own, say) would make the server call a host of the client's
choosing with the operator's key. The check is conductor/config/offered.py's, which
`conductor mcp` uses too.
"""

from __future__ import annotations

from dataclasses import dataclass

from conductor.config.offered import is_offered
from conductor.methods import METHODS
from conductor_kernel.errors import UserFacingError

PREFIX = "conductor:"


class UnknownServedModel(UserFacingError):
    """A model id this server does not offer."""


@dataclass(frozen=True)
class ServedModel:
    method: str
    model: str  # the underlying model spec, as the `model` setting takes it

    @property
    def id(self) -> str:
        return f"{PREFIX}{self.method}@{self.model}"


def served_ids(models: tuple[str, ...]) -> list[ServedModel]:
    """Every method with every served model, in the methods' order."""
    return [ServedModel(method, model) for model in models for method in METHODS]


def resolve(model_id: str, models: tuple[str, ...]) -> ServedModel:
    """What `model_id` asks for: `conductor:METHOD@MODEL`, or `conductor:METHOD` for the
    first served model; anything else is refused with the ids to use."""
    if not models:
        raise UnknownServedModel("this server offers no model")
    method, sep, model = model_id.removeprefix(PREFIX).partition("@")
    if not model_id.startswith(PREFIX) or method not in METHODS:
        raise UnknownServedModel(_unknown(model_id, models))
    model = model if sep else models[0]
    if not is_offered(model, models):
        raise UnknownServedModel(_unknown(model_id, models))
    return ServedModel(method, model)


def _unknown(model_id: str, models: tuple[str, ...]) -> str:
    return (
        f"model {model_id!r} is not served here; ask for {PREFIX}METHOD@MODEL with METHOD "
        f"one of {', '.join(METHODS)} and MODEL one of {', '.join(models)} "
        "(GET /v1/models lists them)"
    )
