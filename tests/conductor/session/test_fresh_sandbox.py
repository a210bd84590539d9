"""After-run checks (learning's tool tests, reproductions, scorers that run code) get a
sandbox of their own, never the run's: opened only when a check runs code, closed once
the hooks are done, and blind to whatever the run's cells left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.session import Session
from conductor.session.fresh_sandbox import FreshSandbox
from conductor_kernel.events import Event
from conductor_kernel.interfaces import ExecResult, Message, Sandbox
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from sandbox.registry import backend_class, probe
from support import skip_or_fail


class CountingBox:
    """A sandbox that only counts what it is asked to do."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.codes: list[str] = []
        self.closed = 0

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        self.codes.append(code)
        return ExecResult(stdout="ran\n", exit_code=0, backend=self.name)

    def close(self) -> None:
        self.closed += 1


def meta(history: list[Message]) -> str:
    if history[-1].content.startswith("ROUND 1"):
        return 'Expert Python:\n"""\n```python\nopen("/work/planted", "w").write("42")\nprint(42)\n```\nPlease run this code!\n"""'
    return '>> FINAL ANSWER:\n"""\n42\n"""'


def session_of(run_box: Sandbox, tmp_path: Path, factory=None, hooks=()) -> Session:  # type: ignore[no-untyped-def]
    model = ScriptedModel(meta, lambda _n, _t: "unused")
    return Session(meta_model=model, expert_model=model, sandbox=run_box,
                   config=RunConfig(max_rounds=3), runs_path=tmp_path / "runs",
                   after_run=list(hooks), fresh_sandbox=factory)  # fmt: skip


def test_hooks_get_a_fresh_sandbox_opened_on_first_use_and_closed_after(tmp_path: Path) -> None:
    run_box, opened = CountingBox("run"), []
    given: list[Sandbox | None] = []

    def factory() -> Sandbox:
        opened.append(CountingBox("fresh"))
        return opened[-1]

    def quiet_hook(events: list[Event], **kwargs: object) -> list[Event]:
        given.append(kwargs["sandbox"])  # type: ignore[arg-type]
        return []

    def checking_hook(events: list[Event], **kwargs: object) -> list[Event]:
        box = kwargs["sandbox"]
        assert box is not run_box
        box.run("print('check')")  # type: ignore[union-attr]
        return []

    session = session_of(run_box, tmp_path, factory, [quiet_hook])
    list(session.solve("q"))
    assert len(run_box.codes) == 1 and opened == []  # nothing ran code: nothing opened
    assert given and given[0] is not run_box
    session = session_of(run_box, tmp_path, factory, [checking_hook, checking_hook])
    list(session.solve("q"))
    assert len(opened) == 1 and opened[0].codes == ["print('check')"] * 2
    assert opened[0].closed == 1 and run_box.closed == 0
    assert len(run_box.codes) == 2  # the runs' own cells only


def test_without_a_factory_hooks_run_no_code(tmp_path: Path) -> None:
    run_box = CountingBox("run")
    seen: list[object] = []
    session = session_of(run_box, tmp_path, None, [lambda events, **kw: seen.append(kw) or []])
    list(session.solve("q"))
    assert seen and seen[0]["sandbox"] is None  # type: ignore[index]


def test_a_factory_that_fails_is_an_infra_error_of_the_check_not_of_the_run() -> None:
    def broken() -> Sandbox:
        raise RuntimeError("no engine")

    box = FreshSandbox(broken)
    result = box.run("print(1)")
    assert result.infra_error and "no engine" in result.infra_error and not result.ok
    box.close()
    assert FreshSandbox(lambda: None).run("1").infra_error


@pytest.mark.slow
def test_what_the_runs_cells_left_is_not_there_for_the_checks(tmp_path: Path) -> None:
    reason = probe("bwrap")
    if reason is not None:
        skip_or_fail(f"bubblewrap cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")
    run_box = backend_class("bwrap")()
    seen: list[ExecResult] = []

    def check(events: list[Event], **kwargs: object) -> list[Event]:
        box = kwargs["sandbox"]
        seen.append(box.run("import os; print(os.path.exists('/work/planted'))"))  # type: ignore[union-attr]
        return []

    try:
        session = session_of(run_box, tmp_path, lambda: backend_class("bwrap")(), [check])
        list(session.solve("q"))
        in_run = run_box.run("import os; print(os.path.exists('/work/planted'))", timeout=30)
    finally:
        run_box.close()
    assert in_run.stdout.strip() == "True"  # the run's cell did plant it
    assert seen and seen[0].ok and seen[0].stdout.strip() == "False", seen
