"""`conductor --version` answers without importing any command's modules (the settings,
pydantic, the models): what it imports is measured, not how long it takes."""

from __future__ import annotations

import subprocess
import sys

from support import modules_imported_by


def test_version_imports_no_command_module() -> None:
    modules = modules_imported_by("--version")
    assert "conductor.cli" in modules
    heavy = {"pydantic", "conductor.config", "conductor.cli.batch", "experts", "rich"}
    assert not heavy & modules, sorted(heavy & modules)


def test_version_prints_the_version() -> None:
    from conductor import __version__

    done = subprocess.run(
        [sys.executable, "-m", "conductor.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == f"conductor {__version__}\n"
