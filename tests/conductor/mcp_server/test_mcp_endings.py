"""MCP `solve` through the official client in-process over the table of run endings
(equipment/run_endings.py): an answer is a plain result; a run with no answer is a
result marked as an error whose first text is why, in the words of record/ending.py,
with the run's data beside it. Each shows the status and the reason its fold holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client

import conductor.session
from conductor.config import load_settings
from conductor.mcp_server.server import create_server
from equipment.run_endings import CASES, EndingCase, recorded_ending, session_for


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_solve_tells_each_ending(
    case: EndingCase, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conductor.session, "build_session", session_for(case))

    async def call() -> Any:
        server = create_server(load_settings({"recall": False, "learn": False}), models=("demo",))
        async with Client(server) as client:
            return await client.call_tool("solve", {"question": case.question})

    result = anyio.run(call)
    data = dict(result.structured_content or {})
    told = recorded_ending(data["run_id"])
    assert data["status"] == case.status == told.status and told.headline == case.headline
    assert result.is_error == (not told.answered)
    if told.answered:
        assert data["answer"] == told.answer and data["verdict"] == told.verdict
        assert data["reason"] is None
    else:
        assert data["answer"] is None and data["reason"] == told.line()
        assert result.content[0].text == told.line() and case.said in told.line()
