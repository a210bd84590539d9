"""Python source is parsed into an AST in one place (conductor_kernel/pyparse.py), under
one lock: CPython 3.11 fails parses interleaved across threads with a spurious
SystemError, and a batch's workers parse (the demo model, the scorers, learning). A
direct `ast.parse` or `ast.literal_eval` anywhere else is found here; so is a planted one.
"""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

from conductor_kernel import pyparse
from support import REPO

PACKAGES = ("conductor_kernel", "record", "experts", "sandbox", "transcripts", "lessons",
            "conductor", "tui")  # fmt: skip
ALLOWED = {Path("conductor_kernel/pyparse.py")}
DIRECT = {"parse", "literal_eval"}


def direct_parses(root: Path) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if relative in ALLOWED or "runner" in relative.parts:  # the in-sandbox runner
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                func = node.func if isinstance(node, ast.Call) else None
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "ast"
                    and func.attr in DIRECT
                ):
                    found.append(f"{relative}:{node.lineno} ast.{func.attr}")
    return found


def test_nothing_but_pyparse_parses_python_source() -> None:
    assert direct_parses(REPO) == []


def test_a_planted_direct_parse_is_found(tmp_path: Path) -> None:
    planted = tmp_path / "lessons" / "planted.py"
    planted.parent.mkdir()
    planted.write_text("import ast\n\n\ndef tree(code):\n    return ast.parse(code)\n")
    assert direct_parses(tmp_path) == ["lessons/planted.py:5 ast.parse"]


def test_parses_from_many_threads_under_collection_all_succeed() -> None:
    """Eight threads parse while the collector frees garbage whose finalizers give the
    interpreter to another thread mid-conversion: every parse comes back whole and equal
    to a lone thread's. (The same workload through a bare `ast.parse` failed with the
    SystemError in each of 3 runs on a 2-core machine, once per run.)"""
    source = "\n".join(
        f"def f{i}(a):\n    return [x * {i} for x in range(a) if x]" for i in range(30)
    )
    expected = ast.dump(pyparse.parse(source))
    failures: list[BaseException] = []

    class Finalized:
        def __del__(self) -> None:
            time.sleep(0.0005)  # lets another thread run inside this thread's parse

    def work() -> None:
        for _ in range(60):
            junk: list[object] = [Finalized()]
            junk.append(junk)  # a cycle: freed by the collector, finalizer and all
            try:
                assert ast.dump(pyparse.parse(source)) == expected
            except BaseException as exc:  # a SystemError would land here
                failures.append(exc)

    thresholds = gc.get_threshold()
    gc.set_threshold(100, 10, 10)  # collections often, inside the parses
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        gc.set_threshold(*thresholds)
    assert not failures, failures[:3]


def test_literal_reads_what_ast_literal_eval_reads() -> None:
    for text in ("[1, 2]", "  {'a': (1, None)}", "\t-3.5", "'x'"):
        assert pyparse.literal(text) == ast.literal_eval(text)
