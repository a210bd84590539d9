"""Small exact statistics shared by the notebook's tool ranking and the method comparison.

Pure functions on counts: the Wilson score interval of a proportion, and the exact
McNemar test of two paired binary outcomes (a two-sided binomial test on the pairs
where they differ). Exact arithmetic with `math.comb` and fractions, no approximation
below the float conversion of the result.
"""

from __future__ import annotations

import math
from fractions import Fraction

Z90 = 1.64
Z95 = 1.96


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for `successes` of `trials` (0 to 1 when none ran)."""
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes of {trials} trials")
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    # At 0 or all successes an end is exactly 0 or 1; floats would miss it by an ulp.
    low = 0.0 if successes == 0 else max(0.0, (centre - spread) / scale)
    high = 1.0 if successes == trials else min(1.0, (centre + spread) / scale)
    return low, high


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value: of the pairs where the outcomes differ, how
    unlikely a split at least this uneven is when either side is equally likely.

    `only_first` pairs were a success for the first arm alone, `only_second` for the
    second alone; the pairs where both agree do not enter the test. 1.0 when none differ.
    """
    if only_first < 0 or only_second < 0:
        raise ValueError("counts of discordant pairs cannot be negative")
    n = only_first + only_second
    if n == 0:
        return 1.0
    low = min(only_first, only_second)
    tail = sum(math.comb(n, k) for k in range(low + 1))
    p = Fraction(2 * tail, 2**n)
    return float(min(p, Fraction(1)))
