"""A sandbox asked for by name that cannot run here says which one would (issue 36,
item 13): the CLI's error and the TUI's notice name the backend that works."""

from __future__ import annotations

import pytest

from sandbox import registry
from sandbox.registry import why_unusable


def machine(monkeypatch: pytest.MonkeyPatch, works: set[str]) -> None:
    monkeypatch.setattr(
        registry, "probe", lambda name: None if name in works else f"{name} is not here"
    )


@pytest.mark.parametrize(
    ("asked", "works", "named"),
    [
        ("docker", {"bwrap", "subprocess"}, "bwrap"),
        ("bwrap", {"docker", "subprocess"}, "docker"),
        ("docker", {"subprocess"}, None),
    ],
)
def test_the_backend_that_works_is_named(
    asked: str, works: set[str], named: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(monkeypatch, works)
    problem = why_unusable(asked)
    assert problem is not None and f"{asked} is not here" in problem
    if named is None:
        assert "works here" not in problem and "`--sandbox subprocess`" in problem
    else:
        assert f"`--sandbox {named}`" in problem and f"Sandbox: {named}" in problem
    with pytest.raises(registry.SandboxUnavailable) as raised:
        registry.open_sandbox(asked)
    assert str(raised.value) == problem


def test_a_backend_that_works_has_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, {"bwrap"})
    assert why_unusable("bwrap") is None and why_unusable("auto") is None
    machine(monkeypatch, set())
    assert "No sandbox can run Python here" in (why_unusable("auto") or "")


def test_the_tui_notice_says_bubblewrap_works_when_docker_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conductor.config import load_settings
    from tui.app import ConductorApp

    machine(monkeypatch, {"bwrap", "subprocess"})
    app = ConductorApp(load_settings({"model": "demo", "sandbox": "docker"}))
    app.check_sandbox()
    assert app.sandbox_problem is not None
    assert "Sandbox: bwrap" in app.sandbox_problem
    assert "run anyway" not in app.sandbox_problem  # an isolating one works: no subprocess advice
