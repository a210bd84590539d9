"""A request body as a JSON object: parsed, and refused past a depth.

Python's parser recurses, so a body of a hundred thousand `[` would end in a
RecursionError, and a body just shallow enough to parse could still break code that
walks it later; nothing a chat request means is more than a few levels deep.
"""

from __future__ import annotations

import json
from typing import Any

from conductor_kernel.errors import UserFacingError

MAX_DEPTH = 32


class BadBody(UserFacingError):
    """A body that is not a JSON object a request can be read from."""


def json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except RecursionError:
        raise BadBody(f"the request body is not JSON: nested over {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise BadBody(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadBody("the request body must be a JSON object")
    if _depth(body) > MAX_DEPTH:
        raise BadBody(f"the request body is nested over {MAX_DEPTH} levels")
    return body


def _depth(value: Any) -> int:
    """How deeply `value`'s lists and objects nest, walked without recursing (and no
    further than one level past the limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest
