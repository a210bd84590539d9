"""`conductor batch TASKFILE --ray [ADDRESS]`: the same batch, its items run on a Ray cluster.

Everything a batch is stays as on one machine (the folder, its id, results.jsonl, the
transcripts, runs.db, the report, resuming); what changes is where items run
(conductor/batch/ray/runner.py) and how the notebook learns (conductor/batch/ray/learning.py).
Ray is an optional extra: `make extras EXTRAS=ray` in the checkout. See docs/batch.md.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from conductor.batch.ray.learning import POLICIES, ClusterLearning  # light: no session
from conductor.cli.batch_shared import print_report, task_items, task_spec
from conductor.cli.progress import Progress
from conductor.config.flags import settings_from_args
from conductor_kernel.errors import ConfigError, UserFacingError

if TYPE_CHECKING:  # what a batch needs is imported when it runs: `--help` stays quick
    from conductor.batch.store import BatchFolder

# Worker processes get these from the driver's environment (keys, endpoints, the
# sandbox image cache), so nodes need no per-batch set-up of their own.
FORWARDED_ENV = ("OPENAI_", "ANTHROPIC_", "CONDUCTOR_SANDBOX")


def install_hint() -> str:
    from conductor.extras import install_command

    return (
        f"--ray needs Ray, an optional extra: {install_command('ray')}, then run the same "
        "command again"
    )


def add_ray_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run the items on a Ray cluster: ADDRESS (the head node's host:port), "
        "`auto` (the cluster `ray start` made here), or nothing to start a small local one",
    )
    p.add_argument(
        "--learning",
        choices=POLICIES,
        default="frozen",
        help="with --ray: frozen (recall the notebook as at the start, merge learned notes "
        "at the end; default), waves (merge every --learn-every items, workers refresh), off",
    )
    from conductor.config.flags import number_above

    p.add_argument(
        "--learn-every",
        type=number_above(1, int, inclusive=True),
        default=25,
        help="with --learning waves: items per wave",
    )
    rate = number_above(0)
    p.add_argument("--rpm", type=rate, help="with --ray: model requests per minute, all nodes")
    p.add_argument("--tpm", type=rate, help="with --ray: model tokens per minute, all nodes")


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


def run_ray_batch(args: argparse.Namespace) -> int:
    import_ray()
    if args.replay:
        raise ConfigError("--replay runs on one machine: drop --ray")
    if args.learn_every < 1:
        raise ConfigError(f"--learn-every must be 1 or more, not {args.learn_every}")
    from conductor.batch import session as batch_session
    from conductor.batch.setup import live_setup
    from conductor.batch.store import BatchFolder, batch_id

    settings = settings_from_args(args)
    spec = task_spec(args)
    items = task_items(args)
    folder_box: list[BatchFolder] = []
    no_python = settings.run.model_copy(update={"python": False})
    driver_only = settings.model_copy(update={"run": no_python})
    setup = live_setup(driver_only, spec, lambda: folder_box[0].path / "runs")
    policy = args.learning if settings.learn else "off"
    order = f"ray-{policy}" + (f"-{args.learn_every}" if policy == "waves" else "")
    identity = batch_session.batch_identity(args, settings, spec, setup, learn_order=order)
    folder = BatchFolder(batch_id(spec.name, identity), identity)
    folder_box.append(folder)
    folder.acquire()
    try:
        cluster = connect(args.ray)
        return _run(args, settings, spec, items, setup, folder, cluster, policy)
    finally:
        folder.release()
        import ray

        if ray.is_initialized():
            ray.shutdown()


def _run(
    args: argparse.Namespace,
    settings: Any,
    spec: Any,
    items: list[Any],
    setup: Any,
    folder: BatchFolder,
    cluster: dict[str, Any],
    policy: str,
) -> int:
    from conductor.batch import session as batch_session
    from conductor.batch.ray.pool import WorkerPool, alive_nodes
    from conductor.batch.ray.runner import RayBatchRunner
    from conductor.batch.report import write_report
    from conductor.batch.runner import BatchPlan
    from conductor.batch.setup import IndexSink, make_scorer

    concurrency = args.concurrency
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be 1 or more, not {concurrency}")
    session = batch_session.open_session(folder, args, settings, setup, concurrency, ray=cluster)
    with batch_session.batch_log(folder.path):
        plan = BatchPlan(
            folder.path, folder.batch_id, spec.name, items, setup.question,
            make_scorer(spec, setup.sandbox_name, settings), {"batch_id": folder.batch_id},
        )  # fmt: skip
        learning = ClusterLearning(
            policy,
            notebook=setup.notebook,
            folder=folder.path,
            recall=settings.recall,
            every=args.learn_every,
        )
        nodes = alive_nodes()
        gate, make_actor = _actors(
            args, settings, spec, folder, learning, session.number, concurrency
        )
        pool = WorkerPool(make_actor, max_replacements=2 * len(nodes) + 2)
        progress = Progress(enabled=not args.json and sys.stdout.isatty())
        runner = RayBatchRunner(
            plan,
            pool,
            learning,
            concurrency=concurrency,
            index=IndexSink(folder.path / "runs"),
            on_record=progress.update,
            retry_errors=args.retry_errors,
            session_no=session.number,
        )
        learning.on_written = runner.append_to_transcript
        try:
            todo = runner.pending()
            learning.start()
            if todo:
                pool.start(nodes)
            print(
                f"batch {folder.batch_id}: {len(items)} items, {runner.tally.done} finished "
                f"before, {len(todo)} to run at concurrency {concurrency} on "
                f"{cluster['nodes']} Ray nodes, learning {policy} ({folder.path})",
                file=sys.stderr,
            )
            with progress.shown(runner.tally):
                outcome = runner.run()
            learning.finish()
        finally:
            pool.close()
    import ray

    batch_session.close_session(session, outcome, cpu_s=round(sum(os.times()[:2]), 2))
    report = batch_session.session_report(session, args, spec, items, runner.log)
    report["ray"] = {
        **cluster,
        "workers": pool.summary(),
        "moved": runner.moved,
        "duplicates_dropped": runner.duplicates_dropped,
        "learning": learning.summary(),
        "rate_limit": ray.get(gate.stats.remote()) if gate is not None else None,
    }
    write_report(folder.path, report)
    section = ray_markdown(report["ray"])
    with (folder.path / "report.md").open("a", encoding="utf-8") as fh:
        fh.write(section)
    print_report(report, as_json=args.json)
    if not args.json:
        print(section)
    return batch_session.exit_code(outcome, report)


def _actors(
    args: argparse.Namespace,
    settings: Any,
    spec: Any,
    folder: BatchFolder,
    learning: ClusterLearning,
    session_no: int,
    concurrency: int,
) -> tuple[Any, Any]:
    """The rate gate (on the head node) and a function that starts a worker."""
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
        .remote(args.rpm, args.tpm)
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
            folder.batch_id,
            gate=gate,
            meter_tokens=args.tpm is not None,
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
