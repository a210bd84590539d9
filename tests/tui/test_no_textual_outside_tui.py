"""Nothing outside tui/ may import textual: the core must run (and be tested) without it."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP = {"tui", "tests", ".venv", "build", "dist", ".git"}


def textual_imports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(n == "textual" or n.startswith("textual.") for n in names):
            lines.append(node.lineno)
    return lines


def python_files_outside_tui() -> list[Path]:
    """Every .py file of the repository's packages and scripts, tui/ and tests/ excepted."""
    files = []
    for root, dirs, names in os.walk(REPO):
        top = Path(root) == REPO
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (top and d in SKIP)]
        files += [Path(root) / n for n in names if n.endswith(".py")]
    return sorted(files)


@pytest.mark.slow
def test_no_module_outside_tui_imports_textual() -> None:
    files = python_files_outside_tui()
    # the scan sees the core
    assert any(p.parts[-3:] == ("conductor_kernel", "run", "loop.py") for p in files)
    offenders = {str(p.relative_to(REPO)): lines for p in files if (lines := textual_imports(p))}
    assert offenders == {}, f"textual imported outside tui/: {offenders}"


def test_the_check_catches_an_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom textual.app import App\nimport textual\n")
    assert textual_imports(sample) == [2, 3]
