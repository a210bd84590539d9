"""The layering holds (docs/architecture.md), and the checks that keep it can fail.

The import contracts live in pyproject.toml ([tool.importlinter]) and run through
import-linter, the same command `make lint` runs. Each planted violation below is one
class of edge the layering forbids, written into a copy of the packages; the contracts
must name it. The package graph is listed from the same import graph (grimp) and must
have no cycle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

from support import REPO

PACKAGES = ("conductor_kernel", "experts", "sandbox", "transcripts", "lessons", "conductor", "tui")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the packages under `root`, with `root`'s pyproject contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_import_contracts_hold() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 kept, 0 broken" in done.stdout


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and their contracts, copied where a test may plant imports."""
    root = tmp_path_factory.mktemp("layout")
    for name in PACKAGES:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


# (where the import is planted, what it imports, words the report must hold)
PLANTED = [
    ("lessons", "conductor.cli", "lessons is not allowed to import conductor"),
    ("experts", "sandbox.registry", "experts is not allowed to import sandbox"),
    ("transcripts", "lessons.storage.store", "transcripts is not allowed to import lessons"),
    ("conductor_kernel", "transcripts.index", "conductor_kernel is not allowed to import"),
    ("conductor", "tui.app", "conductor is not allowed to import tui"),
    ("conductor_kernel", "openai", "conductor_kernel is not allowed to import openai"),
    ("sandbox", "textual", "sandbox is not allowed to import textual"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("package", "target", "named"), PLANTED)
def test_a_planted_violation_breaks_the_contracts(
    package_copy: Path, package: str, target: str, named: str
) -> None:
    planted = package_copy / package / "planted_violation.py"
    # Inside a function, as a lazy import would be: those count too.
    planted.write_text(f"def _late() -> None:\n    import {target}  # noqa: F401\n")
    try:
        done = _lint_imports(package_copy)
    finally:
        planted.unlink()
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert named in done.stdout
    assert f"{package}.planted_violation -> {target}" in done.stdout


def package_graph(graph: grimp.ImportGraph, packages: Iterable[str]) -> dict[str, set[str]]:
    """Which top-level package imports which (any module, any import, lazy ones too)."""
    names = tuple(packages)
    edges: dict[str, set[str]] = {name: set() for name in names}
    for source in names:
        for target in names:
            if source != target and graph.direct_import_exists(
                importer=source, imported=target, as_packages=True
            ):
                edges[source].add(target)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it began, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_graph_is_acyclic() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = package_graph(graph, PACKAGES)
    listing = "\n".join(f"{a} -> {', '.join(sorted(b)) or '(nothing)'}" for a, b in edges.items())
    print(listing)
    assert find_cycle(edges) is None, listing
    # The kernel is the floor: it imports none of the others, and all of them import it.
    assert edges["conductor_kernel"] == set(), listing
    assert all("conductor_kernel" in edges[p] for p in PACKAGES if p != "conductor_kernel")


def test_the_cycle_finder_finds_a_planted_cycle(package_copy: Path) -> None:
    planted = package_copy / "conductor_kernel" / "planted_cycle.py"
    planted.write_text("import experts.registry  # noqa: F401\n")
    sys.path.insert(0, str(package_copy))
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in PACKAGES}
    for name in saved:
        del sys.modules[name]
    try:
        graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(package_copy))
        for name in [k for k in sys.modules if k.split(".")[0] in PACKAGES]:
            del sys.modules[name]
        sys.modules.update(saved)
        planted.unlink()
    cycle = find_cycle(package_graph(graph, PACKAGES))
    assert cycle is not None
    assert cycle[0] == cycle[-1] and {"conductor_kernel", "experts"} <= set(cycle)
