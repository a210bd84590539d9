"""The cluster's side of a Ray batch: importing Ray, joining or starting the cluster,
the rate gate and the item workers' actors (with the environment they are given), and
the report's Ray section. The CLI's `--ray` (conductor/cli/ray.py) parses and calls these.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

from conductor.batch.ray.learning import ClusterLearning
from conductor_kernel.errors import UserFacingError

# Worker processes get these from the driver's environment (keys, endpoints, the
# sandbox image cache), so nodes need no per-batch set-up of their own.
FORWARDED_ENV = ("OPENAI_", "ANTHROPIC_", "CONDUCTOR_SANDBOX")


def install_hint() -> str:
    from conductor.extras import install_command

    return (
        f"--ray needs Ray, an optional extra: {install_command('ray')}, then run the same "
        "command again"
    )


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserFacingError(install_hint()) from None
    return ray


def connect(address: str) -> dict[str, Any]:
    """Join (or start) the cluster; what the report says about it."""
    ray = import_ray()
    quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address == "local":
            # A small one-machine cluster inside this process: no dashboard, a small store.
            ray.init(include_dashboard=False, object_store_memory=128 * 1024**2, **quiet)
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UserFacingError(
            f"could not join the Ray cluster at {address!r}: {exc}. Start one with "
            "`ray start --head`, or pass its address (host:port), or `--ray` alone for a "
            "local one"
        ) from exc
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {"address": address, "nodes": len(nodes), "ray_version": ray.__version__}


def start_actors(
    settings: Any,
    spec: Any,
    batch: str,
    learning: ClusterLearning,
    *,
    session_no: int,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
) -> tuple[Any, Any]:
    """The rate gate (on the head node) and a function that starts a worker for batch
    `batch` (its id)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from conductor.batch.ray.gate import RateGate
    from conductor.batch.ray.worker import ItemWorker

    # The gate lives on the head node: the cluster ends with it anyway.
    head = next(
        (n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n.get("Resources", {})),
        ray.get_runtime_context().get_node_id(),
    )
    gate = (
        ray.remote(RateGate)
        .options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False))
        .remote(rpm, tpm)
    )
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
    worker_cls = ray.remote(ItemWorker)
    nodes = max(1, len(ray.nodes()))

    def make_actor(node_id: str | None) -> Any:
        strategy: Any = "DEFAULT"
        if node_id is not None:
            strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        return worker_cls.options(
            num_cpus=0,
            max_concurrency=concurrency + math.ceil(concurrency / nodes) + 4,
            max_restarts=0,
            max_task_retries=0,
            scheduling_strategy=strategy,
            runtime_env={"env_vars": env},
        ).remote(
            settings,
            spec,
            batch,
            gate=gate,
            meter_tokens=tpm is not None,
            recall=learning.recall,
            learn=learning.learning,
            session_no=session_no,
        )

    return gate, make_actor


def ray_markdown(ray_part: dict[str, Any]) -> str:
    """The report's Ray section: nodes, workers, moved items, learning, the rate gate."""
    from conductor_kernel.text.display import visible_line

    learning = ray_part["learning"]
    lines = [
        "",
        "## Ray",
        "",
        f"{ray_part['nodes']} nodes at `{ray_part['address']}` (Ray {ray_part['ray_version']}); "
        f"learning policy **{learning['policy']}**"
        + (
            f" (a wave every {learning['every']} items, {learning['waves']} waves)"
            if learning["every"]
            else ""
        )
        + f"; {learning['runs_merged']} runs' notes merged into the notebook.",
        "",
        "| worker | alive | items | lost in flight |",
        "| --- | --- | --- | --- |",
        *(
            f"| {w['node']} | {'yes' if w['alive'] else 'no'} | {w['items']} | "
            f"{', '.join(visible_line(i) for i in w['lost_items']) or '-'} |"
            for w in ray_part["workers"]
        ),
    ]
    if ray_part["moved"]:
        lines += ["", "Items moved after their worker died:", ""]
        lines += [
            f"- `{visible_line(m['item_id'])}`: from {', '.join(m['from'])} to {m['to']}"
            for m in ray_part["moved"]
        ]
    limit = ray_part.get("rate_limit") or {}
    if limit:
        lines += [
            "",
            f"Rate limit (one for the cluster): {limit['pauses']} pauses, "
            f"{limit['paused_s']} s paused, {limit['requests_admitted']} requests admitted, "
            f"{limit['requests_held']} held back.",
        ]
    return "\n".join(lines) + "\n"
