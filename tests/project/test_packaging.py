"""The built wheel: only what a user runs, and no import name that is someone else's.

`pip install` of an earlier wheel overwrote Jupyter's `notebook/__init__.py`, because our
notebook package had that name. The second test installs the wheel next to Jupyter
Notebook in a throwaway venv, as a user would; it needs the package index (skipped
when it cannot be reached, failed then under CI=true).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from support import REPO, skip_or_fail

pytestmark = pytest.mark.slow

OUR_PACKAGES = {
    "conductor",
    "conductor_kernel",
    "experts",
    "lessons",
    "sandbox",
    "record",
    "transcripts",
    "tui",
}


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=1200, cwd=cwd, check=False
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of this checkout, with this venv's setuptools."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "*.egg-info", "build", "__pycache__", ".mypy_cache", ".hypothesis"
        ),
    )
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
        "-w", tmp / "dist", source,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    [found] = (tmp / "dist").glob("conductor_metaprompt-*.whl")
    return found


def test_the_wheel_holds_only_what_a_user_runs(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == OUR_PACKAGES
    assert not [n for n in names if "wire_" in n or "synthetic" in n or "equipment" in n]
    assert not [n for n in names if n.startswith(("tests/", "bench/", "notebook/"))]
    # the application hands the notebook its scorers itself: no plug-in entry point
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[console_scripts]" in text and "task_scoring" not in text
    # data files the code opens by path are inside (templates, styles, the Dockerfile)
    assert any(n.startswith("conductor/export/html/templates/") for n in names)
    assert any(n.endswith(".tcss") for n in names)
    assert "sandbox/Dockerfile" in names


def _record(site: Path, dist_prefix: str) -> list[tuple[str, str]]:
    """(path, sha256) of every file a distribution's RECORD lists with a hash."""
    [info] = site.glob(f"{dist_prefix}-*.dist-info")
    rows = []
    for line in (info / "RECORD").read_text().splitlines():
        path, digest, _size = line.rsplit(",", 2)
        if digest.startswith("sha256="):
            rows.append((path, digest.removeprefix("sha256=")))
    return rows


def _sha256(path: Path) -> str:
    return (
        base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
    )


def test_the_wheel_installs_next_to_jupyter_notebook(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    jupyter = _run(python, "-m", "pip", "install", "-q", "notebook>=7")
    if jupyter.returncode != 0:
        skip_or_fail(
            f"cannot install Jupyter Notebook (package index?): {jupyter.stderr[-300:]}", "CI"
        )
    [site] = (env_dir / "lib").glob("python3*/site-packages")
    theirs = _record(site, "notebook")
    assert any(path == "notebook/__init__.py" for path, _ in theirs)

    ours = _run(python, "-m", "pip", "install", "-q", wheel)
    if ours.returncode != 0 and "No matching distribution" in ours.stderr:
        skip_or_fail(f"cannot install conductor's dependencies: {ours.stderr[-300:]}", "CI")
    assert ours.returncode == 0, ours.stderr[-3000:]

    changed = [path for path, digest in theirs if _sha256(site / path) != digest]
    assert changed == [], f"our install changed Jupyter's files: {changed[:10]}"

    def tops(rows: list[tuple[str, str]]) -> set[str]:  # folders in site-packages
        return {path.split("/")[0] for path, _ in rows if "/" in path} - {".."}

    mine = tops(_record(site, "conductor_metaprompt"))
    assert "notebook" not in mine and not mine & tops(theirs)

    both = _run(
        python,
        "-c",
        "import notebook, lessons.storage.store, conductor.cli, conductor_kernel.run.loop;"
        "from conductor.scoring.notebook import open_notebook;"
        "print(notebook.__version__, type(open_notebook('nb.db').scoring).__name__)",
        cwd=tmp_path,
    )
    assert both.returncode == 0, both.stderr[-2000:]
    version, scoring = both.stdout.split()
    assert version.split(".")[0] == "7" and scoring == "BuiltinTaskScoring"
    assert _run(env_dir / "bin" / "conductor", "--version").returncode == 0
