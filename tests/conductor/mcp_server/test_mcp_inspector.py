"""`conductor mcp` driven by the MCP Inspector's command-line mode (a client we did not
write): every tool and resource listed, each tool called, each resource read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import skip_or_fail
from transcripts.index import RunIndex

pytest.importorskip("mcp", reason="the mcp extra is not installed")

pytestmark = pytest.mark.slow

# Read at import: the home fixture clears CONDUCTOR_* settings from the environment.
INSPECTOR = os.environ.get("CONDUCTOR_MCP_INSPECTOR") or shutil.which("mcp-inspector")


def inspector() -> str:
    found = INSPECTOR
    if not found or not Path(found).exists():
        skip_or_fail(
            "the MCP Inspector is not installed (.ci/setup.d/50-mcp-inspector.sh installs it)",
            "CONDUCTOR_REQUIRE_MCP_INSPECTOR",
        )
    return str(found)


def call(*args: str) -> dict[str, Any]:
    conductor = Path(os.environ.get("VIRTUAL_ENV", ".venv")) / "bin" / "conductor"
    server = str(conductor) if conductor.exists() else shutil.which("conductor") or "conductor"
    env = {**os.environ, "CONDUCTOR_MODEL": "demo"}
    done = subprocess.run(
        [inspector(), "--cli", server, "mcp", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


def test_the_inspector_lists_and_calls_every_tool(isolated_home: Path) -> None:
    tools = {tool["name"]: tool for tool in call("--method", "tools/list")["tools"]}
    assert set(tools) == {"solve", "recall", "notebook_search", "run_show"}
    read_only = {name for name, tool in tools.items() if tool["annotations"]["readOnlyHint"]}
    assert read_only == {"recall", "notebook_search", "run_show"}

    question = "Use 4 7 8 8 to make 24"
    solved = call("--method", "tools/call", "--tool-name", "solve", "--tool-arg",
                  f"question={question}")["structuredContent"]  # fmt: skip
    record = RunIndex().get(solved["run_id"])
    assert record is not None and record["final_answer"] == solved["answer"]
    shown = call("--method", "tools/call", "--tool-name", "run_show", "--tool-arg",
                 f"run={solved['run_id']}")["structuredContent"]  # fmt: skip
    assert question in shown["markdown"]
    recalled = call("--method", "tools/call", "--tool-name", "recall", "--tool-arg",
                    "question=Use 3 3 8 8 to make 24")["structuredContent"]  # fmt: skip
    assert any(note["source_run"] == solved["run_id"] for note in recalled["notes"])
    found = call("--method", "tools/call", "--tool-name", "notebook_search", "--tool-arg",
                 f"query={question}")["structuredContent"]  # fmt: skip
    assert found["notes"]

    listed = {r["uri"] for r in call("--method", "resources/list")["resources"]}
    assert listed == {"conductor://runs", "conductor://notes"}
    runs = call("--method", "resources/read", "--uri", "conductor://runs")["contents"][0]
    assert solved["run_id"] in runs["text"]
