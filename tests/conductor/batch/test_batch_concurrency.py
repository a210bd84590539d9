"""The batch runner's concurrency and backoff: items really run at once up to the limit,
a rate limit seen by one worker pauses them all, meta and expert models share one backoff.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from batch_support import (
    BATCH_FLAGS,
    OFFLINE,
    consult_then_answer,
    numbered_tasks,
    plan_for,
    run_cli,
)

from conductor.batch.runner import BatchRunner
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor_kernel.interfaces import Completion, Message
from conductor_kernel.limits.run_config import RunConfig
from equipment.wire_server import Answer, Fault, WireServer
from experts.openai_model import OpenAIModel
from experts.retry import Backoff


class InFlight:
    """Wraps a real model and counts calls in progress at once."""

    def __init__(self, model: Any) -> None:
        self.model, self.name = model, model.name
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], **kw: Any) -> Completion:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return self.model.complete(messages, **kw)
        finally:
            with self._lock:
                self.now -= 1


def wire_sessions(tmp_path: Path, model: Any) -> Any:
    def make(item: TaskItem) -> Session:
        cfg = RunConfig(python=False)
        return Session(model, model, None, cfg, runs_path=tmp_path / "batch" / "runs")

    return make


def test_items_really_run_concurrently_up_to_the_limit(tmp_path: Path) -> None:
    # The first four requests are answered only once all four are in: run one at a time,
    # the first would wait for ever (the barrier's timeout only ends a failure).
    four_in = threading.Barrier(4, timeout=60)
    seen = itertools.count()

    def together(body: dict[str, Any]) -> Answer:
        if next(seen) < 4:
            four_in.wait()
        return consult_then_answer(body)

    with WireServer(responder=together) as server:
        model = InFlight(OpenAIModel("t", base_url=server.openai_url, api_key="k"))
        runner = BatchRunner(plan_for(tmp_path, 8), wire_sessions(tmp_path, model), concurrency=4)
        outcome = runner.run()
    assert outcome.finished == 8 and runner.tally.accuracy == 100.0
    assert model.peak == 4  # four at once, never more


class WatchedBackoff(Backoff):
    """Notes, on the server's clock, when the pause began and until when it holds."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.paused = threading.Event()
        self.resume_wall = 0.0

    def pause(self, seconds: float) -> None:
        self.resume_wall = max(self.resume_wall, time.time() + seconds)
        super().pause(seconds)
        self.paused.set()


def test_a_rate_limit_seen_by_one_worker_pauses_all_of_them(tmp_path: Path) -> None:
    # The first four requests (one per worker) all arrive; one is refused with a 429, the
    # other three are answered only once the pause is in force. So every later request
    # was sent after the pause began, and none may arrive before it ends. No window of
    # wall-clock time is assumed: under load requests only come later.
    backoff = WatchedBackoff(base_s=0.05, cap_s=0.2)
    first_four = threading.Barrier(4, timeout=60)
    seen = itertools.count()

    def limit_one(body: dict[str, Any]) -> Answer:
        n = next(seen)
        if n < 4:
            if first_four.wait() == 0:
                return Fault.rate_limit(retry_after=0.5)
            assert backoff.paused.wait(60)
        return consult_then_answer(body)

    with WireServer(responder=limit_one) as server:
        model = OpenAIModel("t", base_url=server.openai_url, api_key="k", backoff=backoff)
        runner = BatchRunner(plan_for(tmp_path, 12), wire_sessions(tmp_path, model), concurrency=4)
        outcome = runner.run()
        later = [r.ts for r in server.requests[4:]]
    assert outcome.finished == 12 and backoff.pauses == 1
    assert later and min(later) >= backoff.resume_wall


def test_meta_and_expert_models_share_one_backoff(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from conductor.batch.setup import live_setup
    from conductor.config import load_settings
    from conductor.tasks.specs import get_spec

    overrides = {"model": "openai:t", "expert_model": "openai:other", "run": {"python": False}}
    settings = load_settings(overrides)
    setup = live_setup(settings, get_spec("GameOf24"), lambda: tmp_path)
    first, second = (setup.make_session(TaskItem(id=x, input="1 2 3 4")) for x in "ab")
    assert first.meta_model is second.meta_model  # one model instance for every worker
    assert first.expert_model is not first.meta_model
    assert first.expert_model.backoff is first.meta_model.backoff  # type: ignore[union-attr]

    tasks = numbered_tasks(tmp_path / "t.jsonl", 2)
    args = [str(tasks), *BATCH_FLAGS, *OFFLINE, "--expert-model", "openai:other", "--json"]
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["accuracy"]["percent"] == 100.0
    models = Counter((r.body or {}).get("model") for r in wire.requests)
    assert models == {"t": 4, "other": 2}
