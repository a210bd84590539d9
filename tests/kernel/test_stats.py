"""The Wilson interval and the exact McNemar test (conductor_kernel/stats.py), checked
against their definitions on generated counts."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from conductor_kernel.stats import Z95, mcnemar_exact, wilson_interval

counts = st.integers(min_value=1, max_value=400).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)


@given(counts)
def test_the_wilson_interval_holds_the_observed_share_and_solves_its_quadratic(kn) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    p = k / n
    assert 0.0 <= low <= p <= high <= 1.0
    # Each end q solves (p - q)^2 = z^2 q (1 - q) / n, the score test's boundary.
    for q in (low, high):
        if 0.0 < q < 1.0:
            assert math.isclose((p - q) ** 2, Z95**2 * q * (1 - q) / n, abs_tol=1e-9)
    mirror_low, mirror_high = wilson_interval(n - k, n)
    assert math.isclose(low, 1 - mirror_high, abs_tol=1e-12)
    assert math.isclose(high, 1 - mirror_low, abs_tol=1e-12)


@given(counts)
def test_a_wider_confidence_gives_a_wider_interval(kn) -> None:
    k, n = kn
    low90, high90 = wilson_interval(k, n, 1.64)
    low95, high95 = wilson_interval(k, n)
    assert low95 <= low90 and high90 <= high95


def test_no_trials_says_nothing() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _by_coin_flips(b: int, c: int) -> Fraction:
    """Two-sided exact test by flipping b + c fair coins one at a time (the chance of
    each number of heads, built up flip by flip): the probability of splits at least as
    uneven as the one seen."""
    n = b + c
    chances = [Fraction(1)]  # chances[k]: k heads so far
    for _ in range(n):
        nxt = [Fraction(0)] * (len(chances) + 1)
        for k, chance in enumerate(chances):
            nxt[k] += chance / 2
            nxt[k + 1] += chance / 2
        chances = nxt
    seen = abs(b - c)
    total = sum((ch for k, ch in enumerate(chances) if abs(k - (n - k)) >= seen), Fraction(0))
    return min(total, Fraction(1))


def test_small_cases_by_hand() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 9) == 2 * 11 / 1024  # 2 x (1 + 10) / 2^10
    assert mcnemar_exact(0, 5) == 2 / 32
    assert mcnemar_exact(3, 3) == 1.0


@given(st.integers(min_value=0, max_value=30), st.integers(min_value=0, max_value=30))
def test_mcnemar_is_the_exact_binomial_test_on_the_flips(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert p == mcnemar_exact(c, b)
    assert 0.0 < p <= 1.0
    assert math.isclose(p, float(_by_coin_flips(b, c)), rel_tol=1e-12)


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=60))
def test_a_more_uneven_split_is_less_likely(b: int, extra: int) -> None:
    assert mcnemar_exact(b, b + extra) <= mcnemar_exact(b, b + extra - 1)
