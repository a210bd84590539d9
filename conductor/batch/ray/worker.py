"""A Ray worker of a batch: runs items on its node and streams each run back.

One `ItemWorker` actor per node (threaded: many items at once, like the single-process
runner's threads) builds its own models, resolves its own sandbox backend on its node
and opens a fresh sandbox per item. It writes nothing the batch keeps: each item's
events are yielded to the driver as they happen (a Ray streaming generator), then the
item's record and, when learning, the run prepared for the notebook
(`lessons.write.prepare.PreparedRun`, the slow half of learning).
The driver alone writes results.jsonl, the transcripts, runs.db and the notebook.

Recall reads a snapshot of the notebook that the driver ships through Ray's object
store (a version number with it); a newer version replaces it before the next item.
Every item runs through `BatchRunner._run_item`, the single-process runner's own item
code, so a record means the same whichever way a batch ran.
"""

from __future__ import annotations

import logging
import queue
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conductor.batch.runner import BatchPlan, BatchRunner
from conductor.batch.setup import make_scorer, sandbox_opener
from conductor.config import Settings
from conductor.session import Session, build_session
from conductor.session.notebook_hooks import CheckedRecall, learning_options
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import TaskSpec
from conductor_kernel.events import Event
from conductor_kernel.interfaces import Sandbox, Usage
from lessons.write.prepare import LearnOptions, model_can_reflect, prepare_run
from record.fold import RunOutline

log = logging.getLogger("conductor.batch")

_DONE = object()


class ItemWorker:
    """Runs items for the driver (as a Ray actor; see conductor/batch/ray/runner.py)."""

    def __init__(
        self,
        settings: Settings,
        spec: TaskSpec,
        batch_id: str,
        *,
        gate: Any = None,
        meter_tokens: bool = False,
        recall: bool = False,
        learn: bool = False,
        session_no: int = 1,
    ) -> None:
        import ray

        self.scratch = Path(tempfile.mkdtemp(prefix="conductor-ray-worker-"))
        self.node_id = ray.get_runtime_context().get_node_id()
        self.label = f"{socket.gethostname()}/{self.node_id[:8]}"
        self.recall_on, self.learn_on = recall, learn
        # Built without the notebook: this worker only reads snapshots, never the file.
        no_python = settings.run.model_copy(update={"python": False})
        bare = settings.model_copy(update={"recall": False, "learn": False, "run": no_python})
        template = build_session(bare, index=False)
        self.meta, self.expert = template.meta_model, template.expert_model
        if gate is not None:
            self._share_gate(gate, metered=meter_tokens)
        self.sandbox_name, self.open_box = sandbox_opener(settings)
        self.settings = settings
        self.plan = BatchPlan(
            self.scratch, batch_id, spec.name, [], lambda item: spec.prompt(item.input),
            make_scorer(spec, self.sandbox_name, settings), {"batch_id": batch_id},
        )  # fmt: skip
        self.session_no = session_no
        self._lock = threading.Lock()
        self._runners: set[BatchRunner] = set()
        self._snapshot_lock = threading.Lock()
        self._snapshot_version = -1
        self._hooks: Any = None
        self._learned: dict[str, dict[str, Any]] = {}
        self._stopped: str | None = None

    def _share_gate(self, gate: Any, *, metered: bool) -> None:
        from conductor.batch.ray.gate import ClusterBackoff, spent_on
        from conductor_kernel.limits.ledger import MeteredModel

        backoff = ClusterBackoff(gate)
        for model in {id(self.meta): self.meta, id(self.expert): self.expert}.values():
            if model is not None and hasattr(model, "backoff"):
                model.backoff = backoff
        if metered:
            meter = spent_on(gate)
            wrapped = MeteredModel(self.meta, meter)
            if self.expert is self.meta:
                self.expert = wrapped
            elif self.expert is not None:
                self.expert = MeteredModel(self.expert, meter)
            self.meta = wrapped

    # -- called by the driver -----------------------------------------------------------

    def where(self) -> dict[str, str]:
        return {"node_id": self.node_id, "label": self.label, "sandbox": self.sandbox_name or ""}

    def cancel(self, reason: str) -> None:
        """Start no more items here and cancel those in flight (they come back
        interrupted, and run again on resume)."""
        with self._lock:
            self._stopped = reason
            runners = list(self._runners)
        for runner in runners:
            runner.stop(reason)

    def run_item(self, item: TaskItem, attempt: int, snapshot: tuple[int, list] | None) -> Any:
        """Yields {"events": [...]} chunks while the item runs, then {"record": ...}."""
        self._use_snapshot(snapshot)
        events: queue.Queue[Any] = queue.Queue()
        runner = BatchRunner(
            self.plan, self._make_session, sinks=(_QueueSink(events),), session_no=self.session_no
        )
        outcome: dict[str, Any] = {}
        with self._lock:
            self._runners.add(runner)
            if self._stopped:
                runner.stop(self._stopped)

        def work() -> None:
            try:
                outcome["record"] = runner._run_item(item)
            except BaseException as exc:  # the driver records it as this item's error
                outcome["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                events.put(_DONE)

        thread = threading.Thread(target=work, name=f"item-{item.id}", daemon=True)
        thread.start()
        try:
            done = False
            while not done:
                chunk = [events.get()]
                while True:
                    try:
                        chunk.append(events.get_nowait())
                    except queue.Empty:
                        break
                done = chunk[-1] is _DONE
                sent = [e.to_dict() for e in chunk if isinstance(e, Event)]
                if sent:
                    yield {"events": sent}
            thread.join()
        finally:
            with self._lock:
                self._runners.discard(runner)
        record = outcome.get("record")
        learned = self._learned.pop(str((record or {}).get("run_id")), None)
        if record is not None and learned and learned.get("usage"):
            # The run's learning is part of the item's cost, as on one machine.
            spent = Usage.from_dict(learned["usage"])
            record["learning_usage"] = spent.to_dict()
            record["usage"] = (Usage.from_dict(record.get("usage")) + spent).to_dict()
        if record is not None and record.get("run_id"):
            (self.scratch / f"{record['run_id']}.jsonl").unlink(missing_ok=True)
        yield {
            "record": record,
            "error": outcome.get("error"),
            "learned": learned,
            "stopped": runner.outcome.stopped,
            "node": self.label,
            "attempt": attempt,
        }

    # -- sessions -----------------------------------------------------------------------

    def _make_session(self, item: TaskItem) -> Session:
        with self._lock:
            hooks = self._hooks
        session = Session(
            meta_model=self.meta,
            expert_model=self.expert,
            sandbox=self.open_box(),
            config=self.settings.run,
            runs_path=self.scratch,
            # Learning's checks run in a sandbox of their own, never the item's.
            fresh_sandbox=self.open_box if self.sandbox_name else None,
            # Checked in this session's fresh sandboxes, as a local batch's recall is.
            recall=CheckedRecall(hooks) if hooks is not None and self.recall_on else None,
        )
        if self.learn_on:
            session.after_run.append(self._distill)
        return session

    def _distill(
        self,
        events: list[Event],
        *,
        ledger: Any = None,
        sandbox: Sandbox | None = None,
        cancelled: Callable[[], bool] | None = None,
        run: RunOutline | None = None,
    ) -> list[Event]:
        """After a run: the slow half of learning, against this worker's snapshot, for
        the driver to write; nothing written here. The model calls it makes go on the
        run's ledger, as when learning in place, and the tools it makes are tested in
        the run's sandbox on this node (the results travel with the prepared run)."""
        with self._lock:
            hooks = self._hooks
        model = self.meta
        if ledger is not None and model_can_reflect(model):
            model = ledger.metered(model, "learning")
        mark = ledger.mark() if ledger is not None else 0
        book = hooks.book if hooks is not None else None
        options = learning_options(
            hooks.learn_options if hooks is not None else LearnOptions(), sandbox, cancelled
        )
        learned = prepare_run(
            book, run if run is not None else events, model=model, options=options
        )
        if learned is not None:
            if ledger is not None:
                learned.usage = ledger.since(mark).to_dict()
            with self._lock:
                self._learned[learned.run_id] = learned.to_dict()
        return []

    def _use_snapshot(self, snapshot: tuple[int, list] | None) -> None:
        """Open the notebook snapshot the driver sent, if newer than the one in use."""
        if snapshot is None:
            return
        version, (ref,) = snapshot
        with self._snapshot_lock:  # one thread loads it; the others wait, then use it
            if version <= self._snapshot_version:
                return
            import ray

            from conductor.scoring.notebook import open_notebook
            from conductor.session.notebook_hooks import NotebookHooks

            path = self.scratch / f"notebook-v{version}.db"
            path.write_bytes(ray.get(ref))
            hooks = NotebookHooks(open_notebook(path), model=self.meta)
            with self._lock:
                self._snapshot_version, self._hooks = version, hooks

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


class _QueueSink:
    def __init__(self, events: queue.Queue[Any]) -> None:
        self.events = events

    def handle(self, event: Event) -> None:
        if not event.transient:
            self.events.put(event)
