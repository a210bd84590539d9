"""The MCP server: the tools of tools.py, with the official SDK's `MCPServer`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from conductor.config import load_settings
from conductor.mcp_server import tools
from conductor.mcp_server.slots import DEFAULT_MAX_CONCURRENT, RunSlots
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from conductor.config.settings import Settings

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


async def _off_loop(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a tool's blocking work on a thread; a refusal goes to the client as said."""
    try:
        return await anyio.to_thread.run_sync(work)
    except UserFacingError as exc:
        raise ToolError(str(exc)) from None


def _solved(solved: dict[str, Any]) -> CallToolResult:
    """A run's result for the client: with no answer it is an error whose first text is
    why (an agent reads the text; the data beside it says the rest)."""
    data = TextContent(type="text", text=json.dumps(solved, indent=2))
    reason = solved.get("reason")
    if not reason:
        return CallToolResult(content=[data], structured_content=solved)
    why = TextContent(type="text", text=str(reason))
    return CallToolResult(content=[why, data], structured_content=solved, is_error=True)


def create_server(
    settings: Settings | None = None,
    *,
    models: tuple[str, ...] | None = None,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
) -> MCPServer:
    """The server; `settings` (the configured ones by default) hold every run and name
    the notebook read. `solve` runs one of `models` (the configured model alone by
    default), at most `max_concurrent` at once."""
    settings = settings or load_settings()
    notebook = settings.notebook or None
    offered = models or (settings.model,)
    slots = RunSlots(max_concurrent)
    server = MCPServer(
        "conductor",
        instructions="Meta-prompting runs and the experience notebook they learn into.",
    )

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True),
        description="Solve a question with a conductor run (recorded, within the configured "
        "limits). method: meta, meta-no-python, standard, zero-shot-cot, expert-static, "
        f"expert-dynamic, multipersona; model: one of {', '.join(offered)} (default "
        f"{offered[0]}). At most {max_concurrent} runs at once. Returns the answer, the run "
        "id and a short account of the run.",
    )
    async def solve(
        question: str, method: str | None = None, model: str | None = None
    ) -> CallToolResult:
        solved = await _off_loop(
            lambda: tools.solve(
                question,
                method=method,
                model=model,
                settings=settings,
                models=offered,
                slots=slots,
            )
        )
        return _solved(solved)

    @server.tool(
        annotations=READ_ONLY,
        description="What the notebook would show a run of this question: its notes with "
        "their verification, record and trust.",
    )
    async def recall(question: str) -> dict[str, Any]:
        return await _off_loop(lambda: tools.recall(question, notebook=notebook))

    @server.tool(annotations=READ_ONLY, description="Search the notebook's notes by words.")
    async def notebook_search(query: str, k: int = 8) -> dict[str, Any]:
        return await _off_loop(lambda: tools.notebook_search(query, k=k, notebook=notebook))

    @server.tool(
        annotations=READ_ONLY, description="A recorded run (id or unique prefix) as Markdown."
    )
    async def run_show(run: str) -> dict[str, Any]:
        return await _off_loop(lambda: tools.run_show(run))

    # Resources: what an agent may read into its context without calling a tool.
    @server.resource(
        "conductor://runs",
        name="runs",
        description="The newest recorded runs: status, right or wrong, findings, question.",
        mime_type="application/json",
    )
    async def runs() -> dict[str, Any]:
        return await _off_loop(tools.runs_listing)

    @server.resource(
        "conductor://runs/{run_id}",
        name="run",
        description="One recorded run as Markdown: the question, every turn and call, the answer.",
        mime_type="text/markdown",
    )
    async def run(run_id: str) -> str:
        shown = await _off_loop(lambda: tools.run_show(run_id))
        return str(shown["markdown"])

    @server.resource(
        "conductor://notes",
        name="notes",
        description="The notebook's newest notes with their verification and trust.",
        mime_type="application/json",
    )
    async def notes() -> dict[str, Any]:
        return await _off_loop(lambda: tools.notes_listing(notebook=notebook))

    @server.resource(
        "conductor://notes/{note_id}",
        name="note",
        description="One note whole: its text, code, answer and the run it came from.",
        mime_type="application/json",
    )
    async def note(note_id: str) -> dict[str, Any]:
        return await _off_loop(lambda: tools.note_show(note_id, notebook=notebook))

    return server
