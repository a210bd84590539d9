"""The batch's Ray workers: one actor per node, the least busy one chosen per item,
and a replacement when one dies with its node.

Workers take no CPU from Ray's accounting (`num_cpus=0`): an item mostly waits on a
model, and its sandbox runs in Docker or bubblewrap, outside Ray. They are placed one
per alive node (a worker whose node vanished meanwhile is started anywhere instead). Ray never retries their calls (`max_restarts=0`, `max_task_retries=0`): the driver
decides what runs again, so an item cannot be recorded twice by a retry it did not see.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.errors import UserFacingError

log = logging.getLogger("conductor.batch")


@dataclass(eq=False)
class Worker:
    actor: Any
    label: str = "?"
    node_id: str = ""
    sandbox: str = ""
    inflight: int = 0
    alive: bool = True
    items: int = 0
    lost_items: list[str] = field(default_factory=list)


class WorkerPool:
    """Live workers and their load; `make_actor(node_id or None)` starts one."""

    def __init__(self, make_actor: Callable[[str | None], Any], *, max_replacements: int) -> None:
        self.make_actor = make_actor
        self.max_replacements = max_replacements
        self.workers: list[Worker] = []
        self.replaced = 0
        self._lock = threading.Condition()

    def start(self, node_ids: list[str]) -> None:
        import ray

        fresh = [Worker(self.make_actor(node)) for node in node_ids]
        asked = [w.actor.where.remote() for w in fresh]
        for n, (worker, answer) in enumerate(zip(fresh, asked, strict=True)):
            try:
                place = ray.get(answer, timeout=300)
            except ray.exceptions.RayError as exc:  # its node went away: place it anywhere
                log.warning("Ray worker for node %s failed to start (%s)", node_ids[n], exc)
                worker.actor = self.make_actor(None)
                place = ray.get(worker.actor.where.remote(), timeout=300)
            worker.label, worker.node_id = place["label"], place["node_id"]
            worker.sandbox = place.get("sandbox", "")
            log.info("Ray worker on %s, sandbox: %s", worker.label, worker.sandbox or "none")
        with self._lock:
            self.workers.extend(fresh)

    def acquire(self) -> Worker:
        """The live worker with the fewest items in flight (its count taken)."""
        with self._lock:
            live = [w for w in self.workers if w.alive]
            if not live:
                raise UserFacingError(
                    "every Ray worker of this batch has died and no more replacements are "
                    "allowed; check the cluster (`ray status`), then re-run the same command "
                    "to resume"
                )
            worker = min(live, key=lambda w: w.inflight)
            worker.inflight += 1
            return worker

    def release(self, worker: Worker) -> None:
        with self._lock:
            worker.inflight -= 1
            worker.items += 1

    def lost(self, worker: Worker, item_id: str) -> None:
        """`worker` failed mid-item: retire it (once) and start a replacement."""
        import ray

        with self._lock:
            worker.lost_items.append(item_id)
            if not worker.alive:
                return
            worker.alive = False
            replace = self.replaced < self.max_replacements
            self.replaced += replace
        log.warning("Ray worker on %s was lost (item %s)", worker.label, item_id)
        try:
            ray.kill(worker.actor, no_restart=True)
        except Exception:  # already gone with its node
            pass
        if not replace:
            return
        try:
            actor = self.make_actor(self._elsewhere(worker.node_id))
            place = ray.get(actor.where.remote(), timeout=300)
        except Exception as exc:  # the others carry on with the queue
            log.warning("could not start a replacement Ray worker: %s", exc)
            return
        with self._lock:
            self.workers.append(Worker(actor, place["label"], place["node_id"], place["sandbox"]))
        log.info("replacement Ray worker started on %s", place["label"])

    def _elsewhere(self, lost_node: str) -> str | None:
        """An alive node other than the one just lost (Ray may not know yet that it is
        dead), with the fewest live workers; None lets Ray choose."""
        with self._lock:
            load = {w.node_id: 0 for w in self.workers}
            for w in self.workers:
                load[w.node_id] += w.alive
        nodes = [n for n in alive_nodes() if n != lost_node]
        return min(nodes, key=lambda n: load.get(n, 0)) if nodes else None

    def broadcast(self, method: str, *args: Any) -> None:
        for worker in self.workers:
            if worker.alive:
                try:
                    getattr(worker.actor, method).remote(*args)
                except Exception:  # a dead worker needs no message
                    pass

    def close(self) -> None:
        """Let each live worker remove its scratch directory before Ray ends it."""
        import ray

        asked = [w.actor.close.remote() for w in self.workers if w.alive]
        try:
            ray.get(asked, timeout=30)
        except Exception as exc:  # only temporary files are at stake
            log.warning("some Ray workers did not clean up: %s", exc)

    def summary(self) -> list[dict[str, Any]]:
        return [
            {
                "node": w.label,
                "alive": w.alive,
                "items": w.items,
                "lost_items": w.lost_items,
                "sandbox": w.sandbox or None,
            }
            for w in self.workers
        ]


def alive_nodes() -> list[str]:
    import ray

    return [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
