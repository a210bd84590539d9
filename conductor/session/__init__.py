"""Sessions: `Session` runs one question end to end (conductor/session/run.py), and
`build_session` makes one from user settings: models by name, the method, the sandbox,
the runs index and the notebook's hooks."""

from __future__ import annotations

from collections.abc import Callable

from conductor.config import Settings
from conductor.session.run import RunResult as RunResult  # re-exported: the public names
from conductor.session.run import Session as Session
from conductor_kernel.interfaces import ChatModel, Sandbox
from transcripts.index import RunIndex


def check_endpoints(*models: ChatModel) -> None:
    """Refuse at once when a model's server cannot be reached at all, saying what to do;
    nothing is started or recorded first."""
    from conductor_kernel.errors import ModelUnreachable
    from experts.registry import endpoint_problem

    for model in dict.fromkeys(models):
        problem = endpoint_problem(model)
        if problem is not None:
            raise ModelUnreachable(problem)


def check_model(spec: str, *, timeout: float | None = None) -> None:
    """The checks a run makes of its model before anything starts, for a model a user
    names (the TUI's model screen): a known name, a model that can be made (its key), a
    server that takes a connection (and, with no name, lists what it serves). Raises
    `UserFacingError` saying what to do."""
    from experts.registry import get_model

    check_endpoints(get_model(spec, timeout=timeout))


def build_session(
    settings: Settings,
    *,
    sandbox: Sandbox | None = None,
    index: bool = True,
    method: str | None = None,
    notebook_for_baselines: bool = False,
) -> Session:
    """A session from user settings: models by name, the method (`method`, else the
    setting), the sandbox (only for a method that runs code), the runs index, and the
    notebook's hooks. A baseline
    method neither recalls nor learns unless `notebook_for_baselines` says so: its
    prompt is the paper's method, and notes in it would make it another."""
    from conductor.methods import get_method, uses_notebook
    from experts.registry import get_model
    from sandbox.registry import open_sandbox

    chosen = get_method(method or settings.method, python=settings.run.python)
    timeout = settings.model_timeout_s
    meta = get_model(settings.model, timeout=timeout)
    expert = get_model(settings.expert_model, timeout=timeout) if settings.expert_model else meta
    check_endpoints(meta, expert)  # before the sandbox starts: seconds, on a busy machine
    if sandbox is None and chosen.python:
        sandbox = open_sandbox(settings.sandbox)
    session = Session(
        meta_model=meta,
        expert_model=expert,
        sandbox=sandbox,
        config=settings.run,
        index=_open_index() if index else None,
        method=chosen,
        fresh_sandbox=fresh_sandbox_opener(settings),
    )
    recall, learn = settings.recall, settings.learn
    if not (notebook_for_baselines or uses_notebook(chosen.name)):
        recall = learn = False
    if recall or learn:
        # The notebook: recall before round 1, distill after every run.
        from conductor.session.notebook_hooks import NotebookHooks

        hooks = NotebookHooks.open(settings.notebook or None, model=meta)
        hooks.attach(session, recall=recall, learn=learn)
    return session


def fresh_sandbox_opener(settings: Settings) -> Callable[[], Sandbox | None] | None:
    """How to open a sandbox for a run's after-run checks (None when runs have none)."""
    if not settings.run.python:
        return None
    from sandbox.registry import open_sandbox

    name = settings.sandbox
    return lambda: open_sandbox(name)


def _open_index() -> RunIndex:
    """The runs index, after finishing the runs of processes that died mid-run."""
    index = RunIndex()
    index.repair_on_start()  # logs, never raises: a failed repair must not stop a run
    return index
