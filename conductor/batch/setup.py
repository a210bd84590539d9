"""How a batch's items become runs: sessions, questions and scoring, live or replayed.

Live: one meta model and one expert model (sharing one `Backoff`) and the notebook's
hooks serve every item; each item gets a fresh sandbox. Replay: each item's meta model
and experts are a `ReplayModel` over that item's published record, so nothing leaves
the machine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conductor.batch.cells import CellPool, LazyCell
from conductor.config import Settings
from conductor.session import Session
from conductor.tasks.files import TaskFileError, TaskItem
from conductor.tasks.specs import TaskSpec
from conductor_kernel.events import Event, RunStarted
from conductor_kernel.interfaces import Sandbox
from record.fold import RunOutline
from record.home import home_dir


@dataclass
class BatchSetup:
    """How each item becomes a session and a question, and what names the batch."""

    make_session: Callable[[TaskItem], Session]
    question: Callable[[TaskItem], str]
    model_name: str
    identity: dict[str, Any]
    notebook: str | None  # path, when recall or learning is on
    sandbox_name: str | None
    cells: CellPool | None = None  # every sandbox of the batch comes from here


# How a batch opens each backend's sandboxes: no spare container warmed ahead outside
# the pool's count, and a close that returns once the container is gone (a pool counts
# a cell alive until its sandbox closes).
BATCH_OPTIONS: dict[str, dict[str, Any]] = {"docker": {"pool_size": 0, "close_waits": True}}


def sandbox_opener(settings: Settings) -> tuple[str | None, Callable[[], Sandbox | None]]:
    """Resolve the backend once (a clear error now, not once per item)."""
    if not settings.run.python:
        return None, lambda: None
    from sandbox.registry import BACKENDS, probe, resolve_name

    name = resolve_name(settings.sandbox)
    if name in BACKENDS:
        # Probed once here (bubblewrap's probe starts a sandbox of its own and is
        # cached): else the first items' opens probe side by side, outside the pool.
        probe(name)
    return name, lambda: open_started(name)


def open_started(name: str) -> Sandbox:
    """A sandbox whose container (or bubblewrap runner) is up now: a start that fails
    raises here, where the pool tries again, rather than at the run's first cell."""
    from sandbox.registry import open_sandbox

    box = open_sandbox(name, **BATCH_OPTIONS.get(name, {}))
    start = getattr(box, "start_now", None)
    if callable(start):
        try:
            start()
        except BaseException:
            box.close()
            raise
    return box


def sandbox_cells(settings: Settings) -> tuple[str | None, CellPool]:
    """The backend, and the pool of cells every sandbox of the batch comes from (sized
    by the `sandbox_cells` setting, else by the host)."""
    from sandbox.registry import leave_quickly

    name, open_box = sandbox_opener(settings)
    return name, CellPool(open_box, settings.sandbox_cells or None, leave=leave_quickly)


def live_setup(
    settings: Settings, spec: TaskSpec, runs: Callable[[], Path], *, method: str | None = None
) -> BatchSetup:
    """Every item through one shared model; `method` (default meta-prompting) names how
    each run asks it. A baseline method runs no code and, like `build_session`, neither
    recalls nor learns."""
    from conductor.methods import get_method, uses_notebook
    from conductor.session import build_session

    chosen = get_method(method or settings.method, python=settings.run.python)
    if not uses_notebook(chosen.name):
        settings = settings.model_copy(update={"recall": False, "learn": False})
    if not chosen.python:
        no_python = settings.run.model_copy(update={"python": False})
        settings = settings.model_copy(update={"run": no_python})

    # A batch learns into a notebook of its own, named for its task, unless told
    # otherwise (--notebook or the `notebook` setting): gold targets in a batch must
    # not leak into the notebook a user's own questions are answered from.
    notebook = settings.notebook or str(home_dir() / "notebooks" / f"batch-{spec.name}.db")
    settings = settings.model_copy(update={"notebook": notebook})
    # Built once without a sandbox: models and notebook hooks are shared by every item.
    no_python = settings.run.model_copy(update={"python": False})
    template = build_session(settings.model_copy(update={"run": no_python}), index=False)
    meta, expert = template.meta_model, template.expert_model
    shared = getattr(meta, "backoff", None)
    if shared is not None and expert is not meta and hasattr(expert, "backoff"):
        expert.backoff = shared  # type: ignore[union-attr]  # one pause for every worker
    sandbox_name, cells = sandbox_cells(settings)
    # Recall's and learning's checks open their sandboxes outside the pool. They were
    # put there when an item held its cell from start to end, and a check drawn from
    # the pool deadlocked once every cell was held by an item waiting for a second;
    # now an item holds none then (LazyCell, Session.single_run), but moving them in
    # would change what the pool bounds, and is left to a measured change.
    _, open_outside_pool = sandbox_opener(settings)

    def make_session(item: TaskItem) -> Session:
        return Session(
            meta_model=meta,
            expert_model=expert,
            # Taken from the pool at the run's first cell (LazyCell), not now.
            sandbox=LazyCell(cells, sandbox_name) if sandbox_name else None,
            config=settings.run,
            runs_path=runs(),
            recall=template.recall,
            after_run=template.after_run,
            method=chosen,
            # Learning's checks run in a sandbox of their own, never the item's.
            fresh_sandbox=open_outside_pool if sandbox_name else None,
            single_run=True,
        )

    with_notebook = settings.recall or settings.learn
    identity = {
        "model": meta.name,
        "expert_model": getattr(expert, "name", ""),
        "notebook": str(Path(notebook).resolve()) if with_notebook else None,
        "recall": settings.recall,
        "learn": settings.learn,
    }
    if not uses_notebook(chosen.name):  # meta-prompting's batches keep the ids they had
        identity["method"] = chosen.name
    return BatchSetup(
        make_session,
        lambda item: spec.prompt(item.input),
        meta.name,
        identity,
        notebook if with_notebook else None,
        sandbox_name,
        cells,
    )


def replay_setup(
    settings: Settings,
    spec: TaskSpec,
    items: list[TaskItem],
    runs: Callable[[], Path],
    *,
    on_error: str = "stop",
    warn: Callable[[str], None] = print,
) -> tuple[BatchSetup, list[TaskItem]]:
    """The setup, and the items that are published records (others stop the batch,
    or with on_error="skip" are left out with a warning)."""
    from conductor.replay.runner import question_of, replay_config
    from experts.replay import ReplayModel
    from record.published import PublishedRecord, parse_record

    records: dict[str, PublishedRecord] = {}
    for item in items:
        raw = {**item.metadata, "input": item.input, "target": item.target}
        try:
            records[item.id] = parse_record(raw, line=item.line, task=spec.name)
        except ValueError as exc:
            problem = f"{item.source}:{item.line}: not a published record ({exc})"
            if on_error == "skip":
                warn(f"warning: skipped {problem}")
                continue
            raise TaskFileError(
                f"{problem}; --replay reads transcript files such as "
                "transcripts/with-python/GameOf24.jsonl (or skip such lines: --on-error skip)"
            ) from None
    notice = next((r.notice_round for r in records.values() if r.notice_round), None)
    sandbox_name, cells = sandbox_cells(settings)

    def make_session(item: TaskItem) -> Session:
        record = records[item.id]
        model = ReplayModel(record)
        config = replay_config(record.notice_round or notice)
        config.python = settings.run.python
        return Session(model, model, cells.open(), config, runs_path=runs(), single_run=True)

    identity = {"model": "replay", "python": settings.run.python}
    setup = BatchSetup(
        make_session, lambda item: question_of(records[item.id]), "replay", identity, None,
        sandbox_name, cells,
    )  # fmt: skip
    return setup, [item for item in items if item.id in records]


def make_scorer(spec: TaskSpec, sandbox_name: str | None, settings: Settings) -> Callable[..., Any]:
    from conductor.scoring import score

    def score_one(answer: str | None, item: TaskItem, sandbox: Sandbox | None, output: str):
        own = None
        if spec.scorer == "p3":
            # Answers run only in a sandbox, and one of its own: it must pass back a
            # solution's value larger than a run's sandbox keeps (SANDBOX_OPTIONS).
            from conductor.scoring.puzzles import SANDBOX_OPTIONS
            from sandbox.registry import open_sandbox

            own = sandbox = open_sandbox(sandbox_name or settings.sandbox, **SANDBOX_OPTIONS)
        try:
            result = score(spec, answer, item, output=output or None, sandbox=sandbox)
        finally:
            if own is not None:
                own.close()
        return result.to_dict()

    return score_one


class IndexSink:
    """Feeds runs.db from many worker threads, one event at a time."""

    stores_record = True  # a failure here is the run's storage failing (Session)

    def __init__(self, runs_path: Path) -> None:
        from transcripts.index import RunIndex

        self.index = RunIndex()
        # Runs left `running` by a killed batch or solve, or kept out of runs.db by a
        # full disk: ended now (logged, never raised).
        self.index.repair_on_start()
        self.runs_path = runs_path
        self._lock = threading.Lock()

    def handle(self, event: Event) -> None:
        if event.transient:
            return
        with self._lock:
            if isinstance(event, RunStarted):
                self.index.attach(event.run_id, self.runs_path / f"{event.run_id}.jsonl")
            self.index.handle(event)

    def record_findings(self, run: RunOutline) -> None:
        """The finished run's audit, from the fold its session made of it."""
        with self._lock:
            self.index.record_findings(run)
