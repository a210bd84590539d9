"""How many examples a fuzz or property test draws: few in the fast tier (`make test`),
many in the full one (the `slow` variant). `TIERS` parametrises a test over both; its
body builds the Hypothesis test with `settings(max_examples=budget)` and calls it.
Environment variables raise either budget for a longer hunt."""

from __future__ import annotations

import os

import pytest

FAST = int(os.environ.get("CONDUCTOR_FUZZ_FAST", "8"))
FULL = int(os.environ.get("CONDUCTOR_FUZZ_FULL", "150"))

TIERS = pytest.mark.parametrize(
    "budget",
    [pytest.param(FAST, id="fast"), pytest.param(FULL, id="full", marks=pytest.mark.slow)],
)
