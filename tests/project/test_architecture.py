"""The layering holds (docs/architecture.md), and the checks that keep it can fail.

The import contracts live in pyproject.toml ([tool.importlinter]) and run through
import-linter, the same command `make lint` runs. Each planted violation below is one
class of edge the layering forbids, written into a copy of the packages; the contracts
must name it. The package graph is listed from the same import graph (grimp) and must
have no cycle.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

from support import REPO

PACKAGES = (
    "conductor_kernel",
    "record",
    "experts",
    "sandbox",
    "transcripts",
    "lessons",
    "conductor",
    "tui",
)
# The composition root: it registers every command, the TUI's included, so it is drawn
# as a node of its own above `tui` (pyproject.toml puts it first among the layers).
ROOT_OF_COMPOSITION = "conductor.cli"
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
    assert "6 kept, 0 broken" in done.stdout


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
    ("conductor/export", "tui.app", "conductor.export is not allowed to import tui"),
    (
        "conductor/batch",
        "conductor.cli.batch",
        "conductor.batch is not allowed to import conductor.cli",
    ),
    ("conductor/scoring", "conductor.session", "conductor.scoring is not allowed to import"),
    # task specs name the scorers through the leaf table, never the scorers' package
    ("conductor/tasks", "conductor.scoring", "conductor.tasks is not allowed to import"),
    ("record", "transcripts.index", "record is not allowed to import transcripts"),
    ("conductor_kernel", "openai", "conductor_kernel is not allowed to import openai"),
    ("sandbox", "textual", "sandbox is not allowed to import textual"),
    # the notebook's inner order: the read path never reaches into the write path, its
    # storage never into the task types and tools kept in it
    (
        "lessons/read",
        "lessons.write.prepare",
        "lessons.read is not allowed to import lessons.write",
    ),
    ("lessons/storage", "lessons.forms.toolbox", "not allowed to import lessons.forms.toolbox"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("package", "target", "named"), PLANTED)
def test_a_planted_violation_breaks_the_contracts(
    package_copy: Path, package: str, target: str, named: str
) -> None:
    planted = package_copy / package / "planted_violation.py"
    module = package.replace("/", ".") + ".planted_violation"
    # Inside a function, as a lazy import would be: those count too.
    planted.write_text(f"def _late() -> None:\n    import {target}  # noqa: F401\n")
    try:
        done = _lint_imports(package_copy)
    finally:
        planted.unlink()
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert named in done.stdout
    assert f"{module} -> {target}" in done.stdout


# (the module an import is planted in, what it imports): one command of the CLI reaching
# into another, a part of a command reaching back into its command, a shared module
# reaching up into a command's part
PLANTED_IN_CLI = [
    ("runs", "conductor.cli.score"),
    ("compare", "conductor.cli.batch"),
    ("audit", "conductor.cli.imports"),
    ("progress", "conductor.cli.ray"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("module", "target"), PLANTED_IN_CLI)
def test_a_planted_import_between_commands_breaks_the_contracts(
    package_copy: Path, module: str, target: str
) -> None:
    path = package_copy / "conductor" / "cli" / f"{module}.py"
    kept = path.read_text(encoding="utf-8")
    path.write_text(kept + f"\n\ndef _late() -> None:\n    from {target} import _x  # noqa\n")
    try:
        done = _lint_imports(package_copy)
    finally:
        path.write_text(kept, encoding="utf-8")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"conductor.cli.{module} -> {target}" in done.stdout


def package_graph(graph: grimp.ImportGraph, packages: Iterable[str]) -> dict[str, set[str]]:
    """Which package imports which (any module, any import, lazy ones too); the composition
    root is a node of its own."""
    names = (*packages, ROOT_OF_COMPOSITION)

    def node(module: str) -> str | None:
        if module == ROOT_OF_COMPOSITION or module.startswith(ROOT_OF_COMPOSITION + "."):
            return ROOT_OF_COMPOSITION
        top = module.split(".")[0]
        return top if top in names else None

    edges: dict[str, set[str]] = {name: set() for name in names}
    for module in graph.modules:
        source = node(module)
        if source is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            target = node(imported)
            if target is not None and target != source:
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
    # The TUI never reaches back into the command line that registers it.
    assert ROOT_OF_COMPOSITION not in edges["tui"], listing


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


# --- the CLI's own modules -----------------------------------------------------------


def cli_import_graph(folder: Path, package: str = "conductor.cli") -> dict[str, set[str]]:
    """Which module of the CLI imports which, read from the source with ast: imports at
    the top and inside functions alike, `from conductor.cli import runs` as an import of
    the module `runs`, any other name from the package as an import of its __init__."""
    names = {path.stem for path in folder.glob("*.py")}

    def module_of(stem: str) -> str:
        return package if stem == "__init__" else f"{package}.{stem}"

    edges: dict[str, set[str]] = {module_of(stem): set() for stem in names}
    for path in folder.glob("*.py"):
        source = module_of(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == package:
                    targets = [
                        module_of(a.name) if a.name in names else package for a in node.names
                    ]
                else:
                    targets = [node.module]
            for target in targets:
                if target == package or target.startswith(package + "."):
                    head = target.split(".")[: package.count(".") + 2]
                    edges[source].add(".".join(head))
    for source in edges:
        edges[source].discard(source)
    return edges


def test_no_import_circle_among_the_cli_modules() -> None:
    edges = cli_import_graph(REPO / "conductor" / "cli")
    listing = "\n".join(f"{a} -> {', '.join(sorted(b))}" for a, b in sorted(edges.items()))
    assert find_cycle(edges) is None, listing
    # the graph is read, not empty: the composition root registers the commands
    assert {"conductor.cli.batch", "conductor.cli.runs"} <= edges["conductor.cli"]
    assert "conductor.cli.audit" in edges["conductor.cli.runs"], listing


def test_the_cli_graph_sees_a_planted_circle(tmp_path: Path) -> None:
    folder = tmp_path / "cli"
    shutil.copytree(REPO / "conductor" / "cli", folder, ignore=shutil.ignore_patterns("__py*"))
    compare = folder / "compare.py"
    compare.write_text(
        compare.read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    from conductor.cli import batch  # noqa\n",
        encoding="utf-8",
    )
    cycle = find_cycle(cli_import_graph(folder))
    assert cycle is not None
    assert cycle[0] == cycle[-1]
    assert {"conductor.cli.batch", "conductor.cli.compare"} <= set(cycle)


# The front doors stay thin (issue 35): a command parses, calls one operation, prints.
CLI_LINES_AT_MOST = 3000
CLI_MODULE_LINES_AT_MOST = 400


def thickness(folder: Path) -> list[str]:
    """What makes the CLI in `folder` thicker than allowed (empty when it is thin)."""
    sizes = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(folder.glob("*.py"))
    }
    assert "solve.py" in sizes and "runs.py" in sizes, sizes  # the folder was read
    problems = [
        f"{name} has {lines} lines" for name, lines in sizes.items()
        if lines > CLI_MODULE_LINES_AT_MOST
    ]  # fmt: skip
    if sum(sizes.values()) > CLI_LINES_AT_MOST:
        problems.append(f"the CLI has {sum(sizes.values())} lines")
    return problems


def test_the_cli_stays_thin() -> None:
    assert thickness(REPO / "conductor" / "cli") == [], "logic belongs below the CLI"


def test_the_size_check_sees_a_grown_command(tmp_path: Path) -> None:
    folder = tmp_path / "cli"
    shutil.copytree(REPO / "conductor" / "cli", folder, ignore=shutil.ignore_patterns("__py*"))
    runs = folder / "runs.py"
    runs.write_text(runs.read_text(encoding="utf-8") + "\n# grown\n" * 40, encoding="utf-8")
    assert "runs.py has" in " ".join(thickness(folder))
    (folder / "grown.py").write_text("x = 1\n" * 300, encoding="utf-8")
    assert any(p.startswith("the CLI has") for p in thickness(folder))


# --- dynamic imports ---------------------------------------------------------------


def _dynamic_import_targets(path: Path) -> list[tuple[int, str]]:
    """Module names a file imports by string: the literal argument of
    `importlib.import_module`/`__import__`/`find_spec`, or, when the argument is computed,
    every dotted string constant of first-party packages in the file (the registries those
    calls read, e.g. a dict of backend modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in DYNAMIC)
            or (isinstance(node.func, ast.Name) and node.func.id in DYNAMIC)
        )
    ]
    if not calls:
        return []
    found: list[tuple[int, str]] = []
    for call in calls:
        if (
            call.args
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
        ):
            found.append((call.lineno, call.args[0].value))
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.split(".")[0] in PACKAGES
                and all(part.isidentifier() for part in node.value.split("."))
            ):
                found.append((node.lineno, node.value))
    return sorted(set(found))


DYNAMIC = {"import_module", "__import__", "find_spec"}


def _is_module(root: Path, name: str) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _may_name(root: Path, module: str, target: str) -> bool:
    """A module may import by name what lies in its own folder or below it (a registry of
    its package's backends, of its room's scorers), never across folders or floors."""
    folder = module.rsplit(".", 1)[0]
    if (root.joinpath(*module.split(".")) / "__init__.py").is_file():
        folder = module
    return target == folder or target.startswith(folder + ".")


def hidden_layer_edges(root: Path) -> list[str]:
    problems = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "runner" in path.parts:  # the in-cell runner never runs on the host
                continue
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            for line, target in _dynamic_import_targets(path):
                if _is_module(root, target) and not _may_name(root, module, target):
                    problems.append(f"{module}:{line} imports {target} by name")
    return problems


def test_no_dynamic_import_hides_a_layer_edge() -> None:
    """Dynamic imports stay inside their own room (a registry of scorers or backends); an
    edge between rooms or floors is a plain import, which the contracts can see."""
    assert hidden_layer_edges(REPO) == []


def test_a_hidden_edge_is_found(package_copy: Path) -> None:
    planted = package_copy / "conductor" / "export" / "planted_dynamic.py"
    planted.write_text(
        "import importlib\n\nSCREENS = {'runs': 'tui.screens.runs'}\n\n"
        "def load(name: str) -> object:\n    return importlib.import_module(SCREENS[name])\n"
    )
    try:
        problems = hidden_layer_edges(package_copy)
    finally:
        planted.unlink()
    assert problems == ["conductor.export.planted_dynamic:3 imports tui.screens.runs by name"]
