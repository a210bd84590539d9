"""`make test` ends with one summary of what was skipped and why (tests/conftest.py),
also when the tests ran in parallel worker processes (pytest-xdist), as both tiers do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parents[1]  # where conftest.py and support.py are


# Under xdist in the full tier only: every `make test` shows the summary under xdist.
@pytest.mark.parametrize(
    "workers",
    [
        pytest.param([], id="one-process"),
        pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow),
    ],
)
def test_skips_are_summed_up_once_at_the_end_by_reason(tmp_path: Path, workers: list[str]) -> None:
    for name in ("conftest.py", "support.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_some.py").write_text(
        "import pytest\n"
        "def test_a(): pytest.skip('no Docker engine: gone')\n"
        "def test_b(): pytest.skip('no Docker engine: gone')\n"
        "def test_c(): pytest.skip('shared data not found at /x')\n"
        "def test_d(): pass\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    ).stdout
    tail = out[out.index("3 skipped, and why") :]
    assert "2  no Docker engine: gone" in tail
    assert "1  shared data not found at /x" in tail
    assert out.count("skipped, and why") == 1
    assert "start a Docker engine" in tail and "../shared/data" in tail


def test_advice_is_given_only_for_what_it_can_fix(tmp_path: Path) -> None:
    for name in ("conftest.py", "support.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_some.py").write_text(
        "import pytest\ndef test_a(): pytest.skip('root reads any file')\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    ).stdout
    assert "1  root reads any file" in out
    assert "To run them" not in out
