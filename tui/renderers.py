"""One renderer per event kind, shared by the live Solve view and the audit Runs view.

A `RunRenderer` turns events into blocks inside a root container. Nesting follows the
events' `parent_id`: an expert call goes under the meta turn that made it, a sandbox
run and notes to the model under their expert call. Streamed text (`TextDelta`) flows
into the block of its parent; the finishing event then sets the exact final text, so a
view fed from a transcript (no deltas) and a live view end up identical.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.text import Text
from textual.content import Content
from textual.widget import Widget

from conductor.export.terminal import exec_status, usage_line
from conductor.export.wording import (
    learning_cost_line,
    observation_line,
    tool_tests_line,
    verification_words,
)
from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    NotesWritten,
    Observation,
    Recall,
    RunFinished,
    RunScored,
    RunStarted,
    SandboxExec,
    TextDelta,
    UnknownEvent,
)
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible
from record.checked import checked_line
from record.ending import ending
from record.fold import outline
from tui.widgets.blocks import (
    BoxedText,
    EventLine,
    ExpertBlock,
    SandboxBlock,
    TurnBlock,
    shown_text,
)


def first_words(text: str, limit: int = 40) -> str:
    """The first whole words of `text` (a one-line summary; the block shows it all)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 2].rsplit(" ", 1)[0] if " " in flat[: limit - 2] else flat[: limit - 2]
    return head + " …"


def expert_title(name: str, instruction: str, tail: str) -> Content:
    return Content(f"{name} · {first_words(instruction)} · {tail}")


class RunRenderer:
    """Draws the events of one run (or one page of it) into `root`, in order."""

    def __init__(self, root: Widget) -> None:
        self.root = root
        self.blocks: dict[str, Widget] = {}
        self.instructions: dict[str, str] = {}
        self.seen: list[Event] = []  # the run's events so far, for the account of its end
        self.ending: EventLine | None = None

    async def add(self, event: Event) -> None:
        if not event.transient:
            self.seen.append(event)
        render = RENDERERS.get(type(event))
        if render is not None:
            await render(self, event)

    def container_for(self, parent_id: str | None) -> Widget:
        block = self.blocks.get(parent_id or "")
        if isinstance(block, TurnBlock):
            return block.calls
        if isinstance(block, ExpertBlock):
            return block.runs
        return self.root

    async def mount(self, widget: Widget, parent_id: str | None = None) -> Widget:
        await self.container_for(parent_id).mount(widget)
        return widget

    async def turn(self, turn_id: str | None, round_no: int) -> TurnBlock:
        """The block of a turn; made on the spot when its start event is missing."""
        block = self.blocks.get(turn_id or "")
        if isinstance(block, TurnBlock):
            return block
        block = TurnBlock(round_no)
        await self.mount(block)
        self.blocks[turn_id or f"round-{round_no}"] = block
        return block


# A question longer than this is shown cut, with how much more there is: a 21 KB word
# list drawn whole is hundreds of lines the user must scroll past to see the run.
QUESTION_SHOWN = 1500


def shown_question(question: str, limit: int = QUESTION_SHOWN) -> str:
    """The question as the run's view shows it: whole, or its start and what is left."""
    if len(question) <= limit:
        return question
    rest = question[limit:]
    return (
        f"{question[:limit]} …\n[{len(rest):,} more characters, {len(rest.split()):,} words: "
        "`conductor runs show` or this round's raw events (j) have the question whole]"
    )


async def _run_started(r: RunRenderer, e: RunStarted) -> None:
    title = f"question · {e.model} · sandbox {e.sandbox}"
    if e.task:
        title += f" · {e.task}"
    await r.mount(BoxedText(shown_question(e.question), title, "question"))


async def _recall(r: RunRenderer, e: Recall) -> None:
    if not e.notes:
        await r.mount(
            EventLine(Text("notebook: nothing relevant to recall"), "recall"), e.parent_id
        )
        return
    kind = f"type {e.task_type}" if e.task_type else "this question"
    text = Text(f"recalled {plural(len(e.notes), 'note')} ({kind})", "bold")
    for note in e.notes:
        why = f"score {float(note.get('score', 0)):.2f}"
        if note.get("rank") is not None:
            why += f", rank {note['rank']}"
        if note.get("differs"):
            why += f", another question: {visible(str(note['differs']))}"
        # The id is what the Notebook screen and `conductor notebook show` look up.
        key = f" · {note['key']}" if note.get("key") else ""
        text.append(f"\n  {note.get('kind', 'note')} {note.get('id')}{key} ({why})")
    checked = checked_line(e)
    if checked:
        text.append(f"\n{visible(checked)}", "green")
    await r.mount(EventLine(text, "recall"), e.parent_id)


async def _turn_started(r: RunRenderer, e: MetaTurnStarted) -> None:
    block = TurnBlock(e.round)
    r.blocks[e.id] = block
    await r.mount(block, e.parent_id)


async def _text_delta(r: RunRenderer, e: TextDelta) -> None:
    block = r.blocks.get(e.parent_id or "")
    if isinstance(block, TurnBlock):
        await block.text.stream(e.text)
    elif isinstance(block, ExpertBlock):
        await block.reply.stream(e.text)


async def _turn_finished(r: RunRenderer, e: MetaTurnFinished) -> None:
    block = await r.turn(e.parent_id, e.round)
    await block.text.settle(e.shown_text)
    block.border_subtitle = f"{usage_line(e.usage)} · {e.duration_s:.1f} s"


async def _expert_started(r: RunRenderer, e: ExpertCallStarted) -> None:
    block = ExpertBlock(expert_title(e.name, e.instruction, "running…"), e.instruction)
    r.blocks[e.id] = block
    r.instructions[e.id] = e.instruction
    await r.mount(block, e.parent_id)


async def _expert_finished(r: RunRenderer, e: ExpertCallFinished) -> None:
    block = r.blocks.get(e.parent_id or "")
    if not isinstance(block, ExpertBlock):
        block = ExpertBlock(expert_title(e.name, "", "started before this page"), "")
        r.blocks[e.parent_id or e.id] = block
        await r.mount(block)
    tokens = e.usage.total_tokens
    tail = f"{tokens:,} tok · {e.duration_s:.1f} s"
    if e.error:
        tail += " · failed"
        block.add_class("failed")
    block.retitle(expert_title(e.name, r.instructions.get(e.parent_id or "", ""), tail))
    await block.reply.settle(e.text or "*(the meta model gave the code; no expert was asked)*")


async def _sandbox(r: RunRenderer, e: SandboxExec) -> None:
    res = e.result
    await r.mount(
        SandboxBlock(e.code, res.stdout, res.stderr, exec_status(res), res.ok), e.parent_id
    )


async def _observation(r: RunRenderer, e: Observation) -> None:
    await r.mount(EventLine(observation_line(e.reason, e.message), "observation"), e.parent_id)


async def _final(r: RunRenderer, e: FinalAnswer) -> None:
    await r.mount(BoxedText(e.answer, f"final answer · round {e.round}", "final"))


async def _limit(r: RunRenderer, e: LimitHit) -> None:
    await r.mount(EventLine(f"limit reached: {e.limit} ({e.value:g} of {e.maximum:g})", "limit"))


async def _error(r: RunRenderer, e: ErrorEvent) -> None:
    await r.mount(BoxedText(e.message, f"error · {e.where}", "error"))


async def _finished(r: RunRenderer, e: RunFinished) -> None:
    text = (
        f"{e.status} · {plural(e.rounds, 'round')} · {plural(e.expert_calls, 'expert call')} · "
        f"{plural(e.sandbox_runs, 'sandbox run')} · {usage_line(e.usage)} · {e.duration_s:.1f} s"
    )
    await r.mount(EventLine(text, f"summary status-{e.status}"))
    # What the end means for the user (the answer's verdict, or why there is none), in
    # the words every way in uses (record/ending.py).
    r.ending = EventLine(ending(outline(r.seen)).line(), f"ending status-{e.status}")
    await r.mount(r.ending)


async def _scored(r: RunRenderer, e: RunScored) -> None:
    if r.ending is not None:  # the verdict comes just after the run's end
        r.ending.update(shown_text(ending(outline(r.seen)).line()))


async def _notes_written(r: RunRenderer, e: NotesWritten) -> None:
    text = (
        f"notebook: {plural(len(e.note_ids), 'note')} written "
        f"({verification_words(e.verification)}), {e.merged} merged, "
        f"{plural(e.skipped, 'duplicate')} skipped"
    )
    await r.mount(EventLine(text, "notes"))
    tools = tool_tests_line(e.tools, e.tool_testing)
    if tools:
        await r.mount(EventLine(tools, "notes"))
    cost = learning_cost_line(e.usage, e.budget, e.reflection)
    if cost:
        await r.mount(EventLine(cost, "notes"))


async def _unknown(r: RunRenderer, e: UnknownEvent) -> None:
    kind = e.raw.get("kind", "?")
    await r.mount(EventLine(f"an event of kind {kind!r} this version cannot show", "observation"))


RENDERERS: dict[type[Event], Callable[[RunRenderer, Any], Awaitable[None]]] = {
    RunStarted: _run_started,
    Recall: _recall,
    MetaTurnStarted: _turn_started,
    TextDelta: _text_delta,
    MetaTurnFinished: _turn_finished,
    ExpertCallStarted: _expert_started,
    ExpertCallFinished: _expert_finished,
    SandboxExec: _sandbox,
    Observation: _observation,
    FinalAnswer: _final,
    LimitHit: _limit,
    ErrorEvent: _error,
    RunFinished: _finished,
    RunScored: _scored,
    NotesWritten: _notes_written,
    UnknownEvent: _unknown,
}
