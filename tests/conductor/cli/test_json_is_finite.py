"""`--json` prints strict JSON: never NaN or Infinity, and a price file that would make
costs NaN is refused before any call, naming the file and the line (issue 27)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.cli.json_out import json_text
from equipment.wire_server import WireServer

CONDUCTOR = str(Path(sys.executable).with_name("conductor"))

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


def strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in the output")

    return json.loads(text, parse_constant=refuse)


def same_but_finite(original: Any, printed: Any) -> bool:
    if isinstance(original, float):
        return printed == original if math.isfinite(original) else printed is None
    if isinstance(original, dict):
        return all(same_but_finite(v, printed[k]) for k, v in original.items())
    if isinstance(original, list):
        return all(same_but_finite(a, b) for a, b in zip(original, printed, strict=True))
    return bool(printed == original)


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_json_output_is_strict_and_keeps_every_finite_number(value: Any) -> None:
    assert same_but_finite(value, strict(json_text(value)))


@pytest.mark.slow
def test_solve_json_refuses_a_nan_price_with_file_and_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    prices = home / "prices.toml"
    prices.write_text('[models."gpt-4o"]\ninput = 2.5\noutput = nan\n')
    config = tmp_path / "config.toml"
    config.touch()
    env = {"CONDUCTOR_HOME": str(home), "CONDUCTOR_CONFIG": str(config), "PATH": "/usr/bin:/bin"}
    with WireServer(['>> FINAL ANSWER:\n"""\n42\n"""']) as server:
        done = subprocess.run(
            [
                CONDUCTOR,
                "solve",
                "What is 6*7?",
                "--json",
                "--no-python",
                "--model",
                f"openai:gpt-4o@{server.openai_url}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        asked = len(server.requests)
    assert done.returncode != 0 and asked == 0
    assert "NaN" not in done.stdout and "Traceback" not in done.stderr
    assert f"{prices}, line 3" in done.stderr and "output must be a finite number" in done.stderr
