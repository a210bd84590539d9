"""`conductor mcp` driven by the official `mcp` client over stdio and streamable HTTP:
every tool listed with its read-only mark, `solve` making a recorded run, `run_show` and the notebook tools
answering about it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from fractions import Fraction
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import ClientSession, StdioServerParameters, stdio_client

from experts import demo
from support import REPO
from transcripts.index import RunIndex

pytestmark = pytest.mark.slow

TOOLS = {"solve": False, "recall": True, "notebook_search": True, "run_show": True}


def server_parameters() -> StdioServerParameters:
    env = {
        key: value
        for key, value in os.environ.items()
        if key.startswith(("CONDUCTOR_", "PATH", "HOME"))
    }
    env["CONDUCTOR_MODEL"] = "demo"
    env["PYTHONPATH"] = str(REPO)  # this checkout's code, whatever the venv installed
    return StdioServerParameters(
        command=sys.executable, args=["-m", "conductor.cli", "mcp"], env=env
    )


def payload(result) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)


@contextlib.asynccontextmanager
async def connected() -> AsyncIterator[ClientSession]:
    """A client session with `conductor mcp`, started as a subprocess over stdio."""
    async with (
        stdio_client(server_parameters()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def session_calls(calls: list[tuple[str, dict]]) -> tuple[list, list[dict]]:
    async with connected() as session:
        listed = (await session.list_tools()).tools
        results = []
        for name, arguments in calls:
            results.append(payload(await session.call_tool(name, arguments)))
            if name == "solve":  # later calls name the run just made
                run_id = results[-1]["run_id"]
                calls[:] = [
                    (n, {k: (run_id if v == "$run" else v) for k, v in a.items()}) for n, a in calls
                ]
        return listed, results


def test_every_tool_over_stdio(isolated_home: Path) -> None:
    question = "Use 4 7 8 8 to make 24"
    calls = [
        ("solve", {"question": question, "method": "meta-no-python"}),
        ("run_show", {"run": "$run"}),
        ("recall", {"question": "Use 3 3 8 8 to make 24"}),
        ("notebook_search", {"query": question, "k": 5}),
    ]
    listed, (solved, shown, recalled, found) = anyio.run(session_calls, calls)
    marks = {
        tool.name: bool(tool.annotations and tool.annotations.read_only_hint) for tool in listed
    }
    assert marks == TOOLS
    value, used = demo.evaluate(solved["answer"].split("=")[0])
    assert value == Fraction(24) and sorted(used) == [4, 7, 8, 8]
    record = RunIndex().get(solved["run_id"])
    assert record is not None and record["status"] == solved["status"] == "answered"
    assert record["final_answer"] == solved["answer"] and "expert calls" in solved["account"]
    assert shown["run_id"] == solved["run_id"] and solved["answer"] in shown["markdown"]
    assert question in shown["markdown"]
    # The run was learned from: a like question recalls its notes, each with its trust.
    learned = [n for n in recalled["notes"] if n["source_run"] == solved["run_id"]]
    assert learned and all(0 < n["trust"] <= 1 and n["verification"] for n in learned)
    assert all(n["id"] in recalled["rendered"] for n in learned)
    assert {n["id"] for n in learned} <= {n["id"] for n in found["notes"]}


def test_runs_and_notes_are_resources_a_client_can_read(isolated_home: Path) -> None:
    async def read() -> tuple[set[str], set[str], dict, str, dict, dict]:
        async with connected() as session:
            solved = payload(
                await session.call_tool("solve", {"question": "Use 2 3 4 6 to make 24"})
            )
            run_id = solved["run_id"]
            static = {str(r.uri) for r in (await session.list_resources()).resources}
            templates = {
                t.uri_template for t in (await session.list_resource_templates()).resource_templates
            }

            async def text(uri: str) -> str:
                contents = (await session.read_resource(uri)).contents
                return "".join(getattr(part, "text", "") for part in contents)

            runs = json.loads(await text("conductor://runs"))
            markdown = await text(f"conductor://runs/{run_id}")
            notes = json.loads(await text("conductor://notes"))
            first = notes["notes"][0]["id"] if notes["notes"] else "none"
            note = json.loads(await text(f"conductor://notes/{first}"))
            return static, templates, {"run_id": run_id, **runs}, markdown, notes, note

    static, templates, runs, markdown, notes, note = anyio.run(read)
    assert static == {"conductor://runs", "conductor://notes"}
    assert templates == {"conductor://runs/{run_id}", "conductor://notes/{note_id}"}
    listed = {run["run_id"]: run for run in runs["runs"]}
    record = RunIndex().get(runs["run_id"])
    assert record is not None and runs["run_id"] in listed
    assert listed[runs["run_id"]]["status"] == record["status"]
    assert "Use 2 3 4 6 to make 24" in markdown and str(record["final_answer"]) in markdown
    # The run was learned from; its notes are listed, and one reads whole by its uri.
    assert any(n["source_run"] == runs["run_id"] for n in notes["notes"])
    assert note["id"] == notes["notes"][0]["id"] and "code" in note and note["verification"]


def test_a_bad_call_is_an_error_the_client_sees(isolated_home: Path) -> None:
    async def call() -> object:
        async with connected() as session:
            return await session.call_tool("run_show", {"run": "no-such-run"})

    result = anyio.run(call)
    assert result.is_error and "conductor runs list" in result.content[0].text


def test_every_tool_over_streamable_http(isolated_home: Path) -> None:
    import socket
    import subprocess
    import time

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    parameters = server_parameters()
    key = "mcp-test-key"  # every request over HTTP must send it
    parameters.env = {**(parameters.env or {}), "CONDUCTOR_MCP_API_KEY": key}
    process = subprocess.Popen(
        [parameters.command, *parameters.args, "--http", str(port)],
        env=parameters.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "conductor mcp --http did not listen"
            time.sleep(0.1)

        async def calls() -> tuple[list, dict, dict]:
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                listed = (await session.list_tools()).tools
                result = await session.call_tool(
                    "solve", {"question": "Use 1 2 3 4 to make 24", "method": "standard"}
                )
                # The demo declines a Standard prompt: a result marked as an error, why first.
                solved = dict(result.structured_content or {})
                assert result.is_error == (solved["status"] != "answered")
                assert not result.is_error or result.content[0].text == solved["reason"]
                shown = payload(await session.call_tool("run_show", {"run": solved["run_id"]}))
                return listed, solved, shown

        listed, solved, shown = anyio.run(calls)
    finally:
        process.terminate()
        process.wait(30)
    assert {tool.name for tool in listed} == set(TOOLS)
    record = RunIndex().get(solved["run_id"])
    assert record is not None and record["method"] == "standard" == solved["method"]
    assert shown["run_id"] == solved["run_id"] and shown["status"] == record["status"]
