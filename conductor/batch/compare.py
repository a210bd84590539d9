"""A comparison batch: every item of a task file under every method, one model.

`conductor batch FILE --methods standard,zero-shot-cot,...,meta` runs each (item,
method) pair as one item of an ordinary batch (the runner, its results.jsonl, resuming
and failure handling are the batch's own): the pair's id is `ITEM@METHOD`, its record
also says `method` and `task_item_id`, and pairs run item by item in file order, every
method of an item before the next item, so an interrupted comparison has its methods
on the same items. The folder's identity leaves the methods out, so adding a method
later runs only its pairs.

Recall and learning are off for every method unless `--with-notebook` (then every
method recalls and learns as configured): a comparison measures the methods, and a
notebook that learns from one method's runs would teach the others.

With `--replay-dir DIR`, each pair's model answers from the paper's published run of
that method and item (DIR/with-python, DIR/without-python, DIR/baselines/METHOD), so
the whole comparison runs offline.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conductor.batch.setup import BatchSetup, sandbox_cells, sandbox_opener
from conductor.config import Settings
from conductor.methods import PUBLISHED_FOLDERS, REFERENCE, get_method
from conductor.session import Session
from conductor.tasks.files import TaskFileError, TaskItem
from conductor.tasks.specs import TaskSpec
from record.home import home_dir

SEPARATOR = "@"


def pair_id(item_id: str, method: str) -> str:
    return f"{item_id}{SEPARATOR}{method}"


@dataclass(frozen=True)
class Pair:
    """One run of a comparison: a task item under one method."""

    item: TaskItem
    method: str


@dataclass
class Comparison:
    """The methods compared, the task items, and the pairs the runner runs."""

    methods: list[str]
    items: list[TaskItem]
    pairs: dict[str, Pair]  # pair id -> pair

    @classmethod
    def of(cls, items: list[TaskItem], methods: list[str]) -> Comparison:
        pairs = {
            pair_id(item.id, method): Pair(item, method) for item in items for method in methods
        }
        return cls(list(methods), list(items), pairs)

    @property
    def run_items(self) -> list[TaskItem]:
        """The pairs as the runner's items, item by item in file order."""
        return [replace(p.item, id=key) for key, p in self.pairs.items()]

    def describe(self, item: TaskItem) -> dict[str, Any]:
        pair = self.pairs[item.id]
        return {"method": pair.method, "task_item_id": pair.item.id}

    @property
    def reference(self) -> str | None:
        """Meta-prompting with Python, when it is one of the methods."""
        return REFERENCE if REFERENCE in self.methods else None


def comparison_identity(
    args: argparse.Namespace, settings: Settings, spec: TaskSpec, setup: BatchSetup
) -> dict[str, Any]:
    """What decides the comparison's results; the methods are left out (a method added
    later adds its pairs to the same folder)."""
    notebook = setup.notebook is not None
    return {
        "compare": True,
        "task_file": str(Path(args.task_file).resolve()),
        "spec": spec.to_dict(),
        "limits": {k: v for k, v in settings.run.limits().items() if k != "python_timeout_s"},
        "learn_order": args.learn_order if notebook and settings.learn else None,
        **setup.identity,
    }


def live_comparison(
    settings: Settings,
    spec: TaskSpec,
    comparison: Comparison,
    runs: Callable[[], Path],
    *,
    with_notebook: bool = False,
) -> BatchSetup:
    """Sessions of one shared model (and expert model) for every pair; a sandbox only
    for a method that runs code; the notebook only with `with_notebook`."""
    from conductor.session import build_session

    recall = with_notebook and settings.recall
    learn = with_notebook and settings.learn
    notebook = settings.notebook or str(home_dir() / "notebooks" / f"batch-{spec.name}.db")
    no_python = settings.run.model_copy(update={"python": False})
    plain = settings.model_copy(
        update={"notebook": notebook, "recall": recall, "learn": learn, "run": no_python}
    )
    # Built once without a sandbox: models and notebook hooks are shared by every pair.
    template = build_session(plain, index=False, notebook_for_baselines=True)
    meta, expert = template.meta_model, template.expert_model
    shared = getattr(meta, "backoff", None)
    if shared is not None and expert is not meta and hasattr(expert, "backoff"):
        expert.backoff = shared  # type: ignore[union-attr]  # one pause for every worker
    needs_code = any(get_method(m).python for m in comparison.methods)
    sandbox_name, cells = sandbox_cells(settings) if needs_code else (None, None)
    open_box = cells.open if cells is not None else lambda: None
    # Learning's checks open outside the pool: drawn from it while the run holds its
    # cell, they would deadlock once every cell is held (conductor/batch/setup.py).
    _, open_outside_pool = sandbox_opener(settings)

    def make_session(item: TaskItem) -> Session:
        method = get_method(comparison.pairs[item.id].method)
        return Session(
            meta_model=meta,
            expert_model=expert,
            sandbox=open_box() if method.python else None,
            config=settings.run,
            runs_path=runs(),
            recall=template.recall,
            after_run=template.after_run,
            method=method,
            # Learning's checks run in a sandbox of their own, never the run's.
            fresh_sandbox=open_outside_pool if sandbox_name else None,
        )

    uses_notebook = recall or learn
    return BatchSetup(
        make_session,
        lambda item: spec.prompt(item.input),
        meta.name,
        {
            "model": meta.name,
            "expert_model": getattr(expert, "name", ""),
            "notebook": str(Path(notebook).resolve()) if uses_notebook else None,
            "recall": recall,
            "learn": learn,
        },
        notebook if uses_notebook else None,
        sandbox_name,
        cells,
    )


def published_file(folder: Path, method: str, task: str) -> Path:
    """Where the paper's runs of `method` on `task` are under a transcripts folder."""
    name = next(k for k, v in PUBLISHED_FOLDERS.items() if v == method)
    sub = folder / name if name.endswith("-python") else folder / "baselines" / name
    return sub / f"{task}.jsonl"


def replay_comparison(
    settings: Settings,
    spec: TaskSpec,
    comparison: Comparison,
    runs: Callable[[], Path],
    folder: Path,
) -> BatchSetup:
    """Every pair answered from the paper's published run of its method and item (by
    the item's input), under the published runs' own rules; nothing leaves the machine.
    A method's file missing, or an item without a run in it, stops the batch here."""
    from conductor.replay import baselines
    from conductor.replay.runner import replay_config
    from experts.replay import ReplayModel, TurnsReplayModel
    from record.published import read_published

    answers: dict[str, Callable[[], Session]] = {}
    meta_python = settings.run.python
    sandbox_name, cells = sandbox_cells(settings) if meta_python else (None, None)
    open_box = cells.open if cells is not None else lambda: None
    for method in comparison.methods:
        path = published_file(folder, method, spec.name)
        if not path.is_file():
            raise TaskFileError(
                f"{path}: no published runs of {method} on {spec.name}; --replay-dir names "
                "a folder like ../shared/data/meta-prompting/transcripts"
            )
        by_input: dict[str, list[Any]] = {}
        if method in (REFERENCE, "meta-no-python"):
            published = read_published(path)
            if published.problem is not None:
                raise published.problem
            for record in published.records:
                by_input.setdefault(record.question, []).append(record)
        else:
            found, problem = baselines.read_baselines(path, method)
            if problem is not None:
                raise problem
            for b in found:
                by_input.setdefault(b.task_input, []).append(b)
        seen: dict[str, int] = {}
        for item in comparison.items:
            nth = seen.get(item.input, 0)
            seen[item.input] = nth + 1
            matches = by_input.get(item.input, [])
            if nth >= len(matches):
                raise TaskFileError(
                    f"{item.source}:{item.line}: no published run of {method} for this item "
                    f"in {path} (runs are matched to items by their input)"
                )
            record = matches[nth]
            key = pair_id(item.id, method)
            if method in (REFERENCE, "meta-no-python"):
                python = meta_python and method == REFERENCE

                def meta_session(record: Any = record, method: str = method, python: bool = python):
                    model = ReplayModel(record)
                    config = replay_config(record.notice_round)
                    config.python = python
                    return Session(
                        model, model, open_box() if python else None, config,
                        runs_path=runs(), method=get_method(method),
                    )  # fmt: skip

                answers[key] = meta_session
            else:

                def baseline_session(record: Any = record, method: str = method) -> Session:
                    model = TurnsReplayModel(record.calls, line=record.line)
                    return Session(
                        model, model, None, baselines.replay_config(record),
                        runs_path=runs(), method=get_method(method),
                    )  # fmt: skip

                answers[key] = baseline_session

    identity = {"model": "replay", "replay_dir": str(folder.resolve()), "python": meta_python}
    return BatchSetup(
        lambda item: answers[item.id](),
        lambda item: spec.prompt(item.input),
        "replay",
        identity,
        None,
        sandbox_name,
        cells,
    )
