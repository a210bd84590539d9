"""The session owns its run's end: no caller closes a sandbox by hand (the session does,
and the sandbox package itself), and nothing outside the kernel reads the conductor's
private cancel flag. The scan is shown catching both."""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

APPLICATION = ("conductor", "tui")
MAY_CLOSE = ("conductor/session/",)


def hand_closes(source: str) -> bool:
    """Whether the module calls `close()` on something named `sandbox` (`x.sandbox` too)."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        named = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if node.func.attr == "close" and named == "sandbox":
            return True
    return False


def reads_foreign_cancel(source: str) -> bool:
    """Whether the module reads `_cancel` of anything but itself (`x.conductor._cancel`)."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "_cancel"
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        for node in ast.walk(ast.parse(source))
    )


def _modules() -> list[Path]:
    return sorted(p for name in APPLICATION for p in (REPO / name).rglob("*.py"))


def test_only_the_session_closes_a_sandbox() -> None:
    closers = [
        str(path.relative_to(REPO))
        for path in _modules()
        if hand_closes(path.read_text(encoding="utf-8"))
    ]
    assert [c for c in closers if not c.startswith(MAY_CLOSE)] == []
    assert any(c.startswith(MAY_CLOSE) for c in closers)  # the scan sees the session's


def test_nothing_outside_the_kernel_reads_the_conductors_cancel_flag() -> None:
    readers = [
        str(path.relative_to(REPO))
        for path in _modules()
        if reads_foreign_cancel(path.read_text(encoding="utf-8"))
    ]
    assert readers == []


def test_the_scans_catch_what_they_look_for() -> None:
    assert hand_closes("session.sandbox.close()\n") and hand_closes("sandbox.close()\n")
    assert not hand_closes("session.close()\nbook.close()\n")
    assert reads_foreign_cancel("flag = session.conductor._cancel.is_set()\n")
    assert not reads_foreign_cancel("self._cancel.set()\n")
