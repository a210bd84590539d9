"""The JSON the commands print: strict JSON, whatever a number turned out to be.

Python's `json` writes a NaN or an infinity as `NaN`/`Infinity`, which no strict reader
accepts, and a NaN cost would read as "no cost" downstream. Prices are validated where
they are read; this is the last guard: a non-finite number is printed as `null`.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every non-finite float, however deep, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps` that never writes NaN or Infinity."""
    return json.dumps(finite(value), allow_nan=False, **options)
