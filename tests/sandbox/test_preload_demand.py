"""A new sandbox preloads numpy and sympy only while this process's cells use them
(sandbox/preload.py): read from the code the host sends, over generated import lines,
and seen from inside real sandboxes, where a cell that wants a library not preloaded
still gets it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import preload
from sandbox.preload import HEAVY, ImportDemand, imported_heavy
from support import skip_or_fail

LIGHT = ("itertools", "fractions", "math", "numbers", "sympathy", "numpyish", "os")
modules = st.sampled_from(HEAVY + LIGHT)
submodule = st.sampled_from(["", ".linalg", ".abc", ".core.numbers"])


@st.composite
def import_line(draw: st.DrawFn) -> tuple[str, set[str]]:
    """One import statement, and the heavy libraries it names."""
    indent = draw(st.sampled_from(["", "    ", "\t"]))
    if draw(st.booleans()):
        name = draw(modules)
        line = f"from {name}{draw(submodule)} import {draw(st.sampled_from(['x', '*', '(a, b)']))}"
        names = [name]
    else:
        names = draw(st.lists(modules, min_size=1, max_size=3))
        parts = [f"{n}{draw(submodule)}" + draw(st.sampled_from(["", " as m"])) for n in names]
        line = "import " + ", ".join(parts)
    return indent + line, {n for n in names if n in HEAVY}


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(import_line(), max_size=6), filler=st.sampled_from(["", "x = 1", "# ok"]))
def test_the_heavy_libraries_a_program_imports_are_read_from_its_import_lines(
    lines: list[tuple[str, set[str]]], filler: str
) -> None:
    code = "\n".join(part for line, _ in lines for part in (line, filler))
    assert imported_heavy(code) == set().union(*(names for _, names in lines))


def test_names_that_only_mention_a_library_are_not_imports() -> None:
    code = "# import sympy\nprint('numpy')\nx = sympy_like = 1\nnumpyish = 2\n"
    assert imported_heavy(code) == frozenset()


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(st.sets(st.sampled_from(HEAVY)), max_size=40),
    first=st.integers(0, 5),
    recent=st.integers(1, 8),
)
def test_a_sandbox_preloads_what_the_latest_cells_imported(
    cells: list[set[str]], first: int, recent: int
) -> None:
    demand = ImportDemand(first_cells=first, recent_cells=recent)
    for used in cells:
        demand.note("\n".join(f"import {name}" for name in sorted(used)) or "print(1)")
    if len(cells) < first:
        assert demand.wanted() == HEAVY  # too few cells to say: the fast start stays
    else:
        latest = set().union(*cells[-recent:]) if cells else set()
        assert set(demand.wanted()) == latest
        assert list(demand.wanted()) == [name for name in HEAVY if name in latest]


# -- in real sandboxes -----------------------------------------------------------------

PRELOADED = "import sys; print(sorted(n for n in ('numpy', 'sympy') if n in sys.modules))"


@pytest.fixture
def quiet_demand() -> Iterator[ImportDemand]:
    """The process's demand, emptied for the test and put back after."""
    kept = preload.DEMAND
    preload.DEMAND = ImportDemand()
    try:
        yield preload.DEMAND
    finally:
        preload.DEMAND = kept


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_sandbox_started_after_cells_without_sympy_leaves_it_out_and_a_cell_still_gets_it(
    backend: str, quiet_demand: ImportDemand
) -> None:
    from sandbox.registry import BACKENDS, open_sandbox, probe

    if backend not in BACKENDS:
        pytest.skip(f"{backend} is not a backend here")
    reason = probe(backend)
    if reason is not None:
        skip_or_fail(f"{backend} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")
    options = {"pool_size": 0} if backend == "docker" else {}

    def run_in_new_sandbox(*cells: str) -> list[str]:
        box = open_sandbox(backend, **options)
        try:
            results = [box.run(cell, timeout=60) for cell in cells]
        finally:
            box.close()
        for result in results:
            assert result.exit_code == 0 and not result.infra_error, result
        return [result.stdout.strip() for result in results]

    # Nothing noted yet: the first sandbox preloads both, as it always did.
    assert run_in_new_sandbox(PRELOADED) == ["['numpy', 'sympy']"]
    for _ in range(preload.FIRST_CELLS):
        quiet_demand.note("from itertools import permutations\nprint(1)")
    solve = "import sympy as sp\nx = sp.symbols('x')\nprint(sp.solve(x**2 - 2, x))"
    lean, answer = run_in_new_sandbox(PRELOADED, solve)
    assert lean == "[]"
    assert answer == "[-sqrt(2), sqrt(2)]"  # imported by the cell itself
    # That cell used sympy: the next sandbox preloads it again (and numpy, which
    # sympy's import did not name, stays out).
    assert run_in_new_sandbox(PRELOADED) == ["['sympy']"]
