"""`conductor batch TASKFILE --ray [ADDRESS]`: the same batch, its items run on a Ray cluster.

Everything a batch is stays as on one machine (the folder, its id, results.jsonl, the
transcripts, runs.db, the report, resuming); what changes is where items run
(conductor/batch/ray/runner.py) and how the notebook learns (conductor/batch/ray/learning.py).
Ray is an optional extra: `make extras EXTRAS=ray` in the checkout. See docs/batch.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from conductor.batch.ray import POLICIES
from conductor_kernel.errors import ConfigError
from conductor_kernel.text.counts import plural

if TYPE_CHECKING:  # what a batch needs is imported when it runs: `--help` stays quick
    from conductor.batch.store import BatchFolder


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


def run_ray_batch(args: argparse.Namespace) -> int:
    from conductor.batch.ray.cluster import connect, import_ray
    from conductor.cli.batch_shared import task_items, task_spec
    from conductor.config.flags import settings_from_args

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
    import contextlib

    from conductor.batch import session as batch_session
    from conductor.batch.drive import drive
    from conductor.batch.ray.cluster import ray_markdown, start_actors
    from conductor.batch.ray.learning import ClusterLearning
    from conductor.batch.ray.pool import WorkerPool, alive_nodes
    from conductor.batch.ray.runner import RayBatchRunner
    from conductor.batch.report import write_report
    from conductor.batch.setup import IndexSink
    from conductor.cli.batch_shared import print_report
    from conductor.cli.progress import Progress

    concurrency = args.concurrency
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be 1 or more, not {concurrency}")
    learning = ClusterLearning(
        policy,
        notebook=setup.notebook,
        folder=folder.path,
        recall=settings.recall,
        every=args.learn_every,
    )
    nodes = alive_nodes()
    progress = Progress(enabled=not args.json and sys.stdout.isatty())
    gates: list[Any] = []  # the rate gate, made with the runner (it needs the session)

    def make_runner(plan: Any, session: Any) -> RayBatchRunner:
        gate, make_actor = start_actors(
            settings, spec, folder.batch_id, learning, session_no=session.number,
            concurrency=concurrency, rpm=args.rpm, tpm=args.tpm,
        )  # fmt: skip
        gates.append(gate)
        runner = RayBatchRunner(
            plan,
            WorkerPool(make_actor, max_replacements=2 * len(nodes) + 2),
            learning,
            concurrency=concurrency,
            index=IndexSink(folder.path / "runs"),
            on_record=progress.update,
            retry_errors=args.retry_errors,
            session_no=session.number,
        )
        learning.on_written = runner.append_to_transcript
        return runner

    @contextlib.contextmanager
    def workers(runner: RayBatchRunner, todo: list[Any]) -> Any:
        try:
            learning.start()
            if todo:
                runner.pool.start(nodes)
            yield
            learning.finish()
        finally:
            runner.pool.close()

    driven = drive(
        folder, args, settings, spec, items, setup,
        concurrency=concurrency,
        make_runner=make_runner,
        progress=progress,
        announce=lambda runner, todo: (
            f"batch {folder.batch_id}: {plural(len(items), 'item')}, {runner.tally.done} finished "
            f"before, {len(todo)} to run at concurrency {concurrency} on "
            f"{cluster['nodes']} Ray nodes, learning {policy} ({folder.path})"
        ),
        recorded={"ray": cluster},
        around=workers,
        closing=lambda: {"cpu_s": round(sum(os.times()[:2]), 2)},
    )  # fmt: skip
    import ray

    session, runner, outcome = driven.session, driven.runner, driven.outcome
    gate, pool = gates[0], runner.pool
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
