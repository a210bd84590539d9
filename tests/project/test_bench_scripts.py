"""`make bench` runs every bench/*.py as a script: each must run something when it does.

bench/batch.py once lost its `if __name__ == "__main__"` block, and `make bench` went on
reporting success for a benchmark that no longer ran. This checks the shape every
benchmark shares: a main block that calls `main()`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def runs_main_as_a_script(source: str) -> bool:
    """Whether the module's `__main__` block calls its main()."""
    tree = ast.parse(source)
    for node in tree.body:
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if not (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
        ):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "main":
                return True
    return False


@pytest.mark.parametrize("script", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_every_benchmark_runs_when_make_bench_runs_it(script: Path) -> None:
    assert runs_main_as_a_script(script.read_text(encoding="utf-8")), (
        f"{script.name} does nothing as a script: end it with "
        '`if __name__ == "__main__": sys.exit(main())`'
    )


def test_the_check_sees_a_missing_main_block() -> None:
    assert runs_main_as_a_script(
        "def main():\n    return 0\nif __name__ == '__main__':\n    import sys\n    sys.exit(main())\n"
    )
    assert not runs_main_as_a_script("def main():\n    return 0\n")
    assert not runs_main_as_a_script(
        "def main():\n    return 0\nif __name__ == '__main__':\n    pass\n"
    )
    assert runs_main_as_a_script("def main():\n    pass\nif __name__ == '__main__':\n    main()\n")
