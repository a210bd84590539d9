"""`conductor mcp`'s `solve` runs at most `--max-concurrent` runs at once: with N runs
waiting on a slow model, one more call is refused at once with the bound and what to
do, no session built for it; once the N end, a slot is free again."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client

from conductor.config import load_settings
from conductor.mcp_server.server import create_server
from equipment.wire_server import WireServer
from transcripts.index import RunIndex

QUIET = {"recall": False, "learn": False}
ANSWER = '>> FINAL ANSWER:\n"""24"""'
GUARD_S = 60  # only against a hang: nothing here waits on the clock to decide


class SlowModel:
    """A responder that tells of each request and answers only once released."""

    def __init__(self) -> None:
        self.arrived = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> str:
        self.arrived.release()
        self.release.wait(GUARD_S)
        return ANSWER


@pytest.mark.slow
@pytest.mark.parametrize("bound", [1, 3])
def test_one_call_past_the_bound_is_refused_while_the_others_run(bound: int) -> None:
    slow = SlowModel()
    with WireServer(responder=slow) as wire:
        model = f"openai:slow@{wire.openai_url}"
        server = create_server(load_settings(QUIET), models=(model,), max_concurrent=bound)
        arguments = {"question": "Use 4 7 8 8 to make 24", "method": "standard"}

        async def calls() -> tuple[list[Any], Any, Any]:
            results: list[Any] = []
            async with Client(server) as client:

                async def one() -> None:
                    results.append(await client.call_tool("solve", arguments))

                try:
                    async with anyio.create_task_group() as group:
                        for _ in range(bound):
                            group.start_soon(one)
                        for _ in range(bound):  # every run is at its model, waiting
                            assert await anyio.to_thread.run_sync(
                                slow.arrived.acquire, True, GUARD_S
                            )
                        refused = await client.call_tool("solve", arguments)
                        assert len(wire.requests) == bound  # the refused call reached nothing
                        slow.release.set()
                finally:
                    slow.release.set()
                again = await client.call_tool("solve", arguments)  # the slots are free again
            return results, refused, again

        results, refused, again = anyio.run(calls)
    text = refused.content[0].text
    in_progress = f"{bound} run in progress" if bound == 1 else f"{bound} runs in progress"
    assert refused.is_error and in_progress in text, text
    assert "--max-concurrent" in text and "retry" in text
    assert len(results) == bound and not any(result.is_error for result in results)
    assert not again.is_error, again.content
    run_ids = {dict(r.structured_content)["run_id"] for r in [*results, again]}
    assert len(run_ids) == bound + 1
    assert all(RunIndex().get(run_id) is not None for run_id in run_ids)
