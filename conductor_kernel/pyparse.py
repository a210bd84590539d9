"""Python source parsed into an AST by one thread at a time.

CPython 3.11 keeps the AST constructor's recursion depth in state its threads share;
when a parse in one thread is interleaved with a parse in another (a garbage
collection during the conversion can run Python code, and the scheduler switches), the
conversion fails with a spurious `SystemError: AST constructor recursion depth
mismatch` (python/cpython#106905 and its kin). A batch parses in every worker: the
demo model reads expressions, scorers check answers, learning reads tools, and an
item ended `error` this way on a 30-item batch. Every parse goes through here, under
one lock (re-entrant, so a parse from a finalizer on the same thread waits for nothing; such a nested parse is the one case the lock cannot make safe, and nothing here does it).
tests/project/test_architecture.py checks nothing else calls `ast.parse`.
"""

from __future__ import annotations

import ast
import threading
from typing import Any, Literal

_ONE_AT_A_TIME = threading.RLock()


def parse(source: str, mode: Literal["exec", "eval"] = "exec") -> Any:
    """`ast.parse(source, mode=mode)`, never beside another thread's parse."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, mode=mode)


def literal(source: str) -> Any:
    """`ast.literal_eval(source)`, its parse made through `parse`."""
    return ast.literal_eval(parse(source.lstrip(" \t"), mode="eval"))
