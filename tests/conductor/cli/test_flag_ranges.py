"""Flags that are no settings are range-checked when parsed, with or without --ray:
a rate of zero or less, or a wave of fewer than one item, is a usage error, never
accepted and ignored."""

from __future__ import annotations

import argparse
import functools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.cli import build_parser

BATCH = ["batch", "tasks.jsonl", "--scorer", "exact"]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def _parsed(*flags: str) -> argparse.Namespace:
    return _parser().parse_args([*BATCH, *flags])


@settings(deadline=None, max_examples=40)
@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["--rpm", "--tpm"]))
def test_rates_must_be_positive_and_finite(value: float, flag: str) -> None:
    if value > 0 and math.isfinite(value):
        assert getattr(_parsed(flag, repr(value)), flag[2:]) == value
    else:
        with pytest.raises(SystemExit) as stopped:
            _parsed(flag, repr(value))
        assert stopped.value.code == 2


@settings(deadline=None, max_examples=40)
@given(st.integers(-(10**6), 10**6))
def test_a_wave_holds_at_least_one_item(value: int) -> None:
    if value >= 1:
        assert _parsed("--learn-every", str(value)).learn_every == value
    else:
        with pytest.raises(SystemExit):
            _parsed("--learn-every", str(value))


def test_the_refusal_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    for flag, value in (("--rpm", "-5"), ("--learn-every", "0")):
        with pytest.raises(SystemExit):
            _parsed(flag, value)
        err = capsys.readouterr().err
        assert f"argument {flag}" in err and value in err and "Traceback" not in err
