"""A request's limits: the configured ones, lowered where the request asks, never raised.

A client may send the OpenAI fields `max_completion_tokens` (or the older `max_tokens`),
which lower the run's whole token budget (a run spends tokens on the meta model and its
experts alike, all of them billed to this one reply), and a `conductor` object with any
of `max_rounds`, `max_tokens`, `max_cost_usd`, `max_wall_s`. A value above the
configured one is taken as the configured one: the operator's limits hold.

A served run is asked for by someone other than the operator, so where the configuration
sets no token or cost limit it has one anyway (`capped`), which the operator raises with
`--max-tokens` and `--max-cost`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:  # the command line reads the caps below without loading pydantic
    from conductor_kernel.limits.run_config import RunConfig

# The run limits a request may lower, and whether each is a whole number.
LOWERABLE: dict[str, bool] = {
    "max_rounds": True,
    "max_tokens": True,
    "max_cost_usd": False,
    "max_wall_s": False,
}

SERVED_MAX_TOKENS = 500_000
SERVED_MAX_COST_USD = 2.0


class BadLimit(UserFacingError):
    """A limit in a request that is not a positive number."""


def requested_limits(body: dict[str, Any]) -> dict[str, float]:
    """The limits a request body asks for, checked; absent ones left out."""
    asked: dict[str, float] = {}
    extension = body.get("conductor")
    if extension is not None and not isinstance(extension, dict):
        raise BadLimit("`conductor` must be an object of limits (max_rounds, max_tokens, ...)")
    for name, value in (extension or {}).items():
        if name not in LOWERABLE:
            raise BadLimit(
                f"`conductor.{name}` is not a limit a request may set; "
                f"these are: {', '.join(LOWERABLE)}"
            )
        asked[name] = _checked(f"conductor.{name}", value, LOWERABLE[name])
    for field in ("max_tokens", "max_completion_tokens"):
        if body.get(field) is not None:
            given = _checked(field, body[field], True)
            asked["max_tokens"] = min(given, asked.get("max_tokens", math.inf))
    return asked


def capped(config: RunConfig) -> RunConfig:
    """`config` with a token and a cost limit where it has none."""
    update: dict[str, Any] = {}
    if config.max_tokens is None:
        update["max_tokens"] = SERVED_MAX_TOKENS
    if config.max_cost_usd is None:
        update["max_cost_usd"] = SERVED_MAX_COST_USD
    return config.model_copy(update=update)


def lowered(config: RunConfig, asked: dict[str, float]) -> RunConfig:
    """`config` with each asked limit taken where it is lower than the configured one."""
    update: dict[str, Any] = {}
    for name, value in asked.items():
        current = getattr(config, name)
        chosen = value if current is None else min(current, value)
        update[name] = int(chosen) if LOWERABLE[name] else float(chosen)
    return config.model_copy(update=update)


def _checked(name: str, value: Any, whole: bool) -> float:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or value <= 0 or (whole and value != int(value)):
        kind = "a positive whole number" if whole else "a positive number"
        raise BadLimit(f"`{name}` must be {kind}, not {value!r}")
    return value
