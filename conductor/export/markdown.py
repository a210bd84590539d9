"""A transcript as Markdown: the whole run, readable without the tool.

Read from the run's fold (record/fold.py), as the HTML page is: round by round, each
expert call whole (its instruction, notes to the model, sandbox runs and reply together,
also when calls ran concurrently and their events interleave), the rest of a round in
the order it came.

Model and sandbox text is untrusted: it goes through `visible()` and into fenced blocks
whose fence is longer than any backtick run inside (so nothing can close the block
early), and one-line fields (expert names, reasons) are shown as inline code.
"""

from __future__ import annotations

import re

from conductor.export.wording import learning_cost_line, tool_tests_line
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
    RunStarted,
    SandboxExec,
)
from conductor_kernel.text.display import visible, visible_line
from record.fold import CallView, RoundView, RunOutline

FENCE = "````"  # at least four backticks: the content may itself hold ``` fences
_TICKS = re.compile(r"`+")


def _block(text: str, lang: str = "") -> str:
    text = visible(text.rstrip())
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    fence = "`" * max(len(FENCE), longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _code(text: str) -> str:
    """One untrusted line as inline code (backticks inside lengthen the delimiters)."""
    text = visible_line(text)
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}"


def _md(event: Event) -> str | None:
    if isinstance(event, RunStarted):
        target = f"\n\n**Target:** {_code(event.target)}" if event.target else ""
        return (
            f"# Run {_code(event.run_id)}\n\n**Model:** {_code(event.model)} · **Experts:** "
            f"{_code(event.expert_model)} · **Sandbox:** {_code(event.sandbox)}{target}"
            f"\n\n## Question\n\n{_block(event.question)}"
        )
    if isinstance(event, Recall):
        notes = "\n".join(
            f"- {_code(str(n.get('id')))} {_code(str(n.get('key', '')))} "
            f"(score {float(n.get('score', 0)):.2f})"
            for n in event.notes
        )
        kind = _code(event.task_type) if event.task_type else "no task type"
        return f"### Recalled notes ({kind})\n\n{notes or 'none'}"
    if isinstance(event, MetaTurnStarted):
        return f"## Round {event.round}\n\n<details><summary>What the meta model was sent</summary>\n\n{_block(event.user_message)}\n\n</details>"
    if isinstance(event, MetaTurnFinished):
        return f"### Meta model\n\n{_block(event.shown_text)}"
    if isinstance(event, ExpertCallStarted):
        return f"### → {_code(event.name)}\n\n{_block(event.instruction)}"
    if isinstance(event, ExpertCallFinished):
        reply = event.text or "(code given by the meta model)"
        return f"### ← {_code(event.name)}\n\n{_block(reply)}"
    if isinstance(event, SandboxExec):
        r = event.result
        status = r.infra_error or ("timed out" if r.timed_out else f"exit {r.exit_code}")
        limits = "".join(f", {hit} limit" for hit in r.limits_hit)
        parts = [
            f"#### Sandbox ({_code(r.backend)}, {_code(status)}{limits}, "
            f"{r.duration_s * 1000:.0f} ms)",
            _block(event.code, "python"),
        ]
        if r.stdout:
            parts.append("stdout:\n\n" + _block(r.stdout))
        if r.stderr:
            parts.append("stderr:\n\n" + _block(r.stderr))
        return "\n\n".join(parts)
    if isinstance(event, Observation):
        return f"> **{_code(event.reason)}:**\n\n{_block(event.message)}"
    if isinstance(event, FinalAnswer):
        return f"## Final answer\n\n{_block(event.answer)}"
    if isinstance(event, LimitHit):
        return f"> **Limit reached:** {_code(event.limit)} ({event.value:g} of {event.maximum:g})"
    if isinstance(event, ErrorEvent):
        return f"> **Error ({_code(event.where)}):**\n\n{_block(event.message)}"
    if isinstance(event, RunFinished):
        u = event.usage
        return (
            f"## Summary\n\n| status | rounds | expert calls | sandbox runs | input tokens | output tokens | cost | time |\n"
            f"|---|---|---|---|---|---|---|---|\n| {_code(event.status)} | {event.rounds} | {event.expert_calls} | "
            f"{event.sandbox_runs} | {u.input_tokens} | {u.output_tokens} | ${u.cost_usd:.4f} | {event.duration_s:.1f} s |"
        )
    if isinstance(event, NotesWritten):
        tools = tool_tests_line(event.tools, event.tool_testing)
        cost = learning_cost_line(event.usage, event.budget, event.reflection)
        return (
            f"> **Notebook:** {len(event.note_ids)} notes written ({_code(event.verification)})"
            + (f"; {_code(tools)}" if tools else "")
            + (f"; {_code(cost)}" if cost else "")
        )
    return None


def _round(r: RoundView) -> list[Event]:
    """The round's events in reading order: the turn, then each call whole where it began."""
    events: list[Event] = []
    if r.started is not None:
        events.append(r.started)
    if r.finished is not None:
        events.append(r.finished)
    for item in r.timeline:
        events += _call(item) if isinstance(item, CallView) else [item]
    return events


def _call(call: CallView) -> list[Event]:
    head: list[Event] = [call.started] if call.started is not None else []
    tail: list[Event] = [call.finished] if call.finished is not None else []
    return head + list(call.observations) + list(call.execs) + tail


def to_markdown(run: RunOutline) -> str:
    events: list[Event] = [run.started] if run.started is not None else []
    events += run.recalls
    events += run.loose
    for r in run.rounds:
        events += _round(r)
    if run.finished is not None:
        events.append(run.finished)
    events += run.notes_written
    parts = [md for md in (_md(e) for e in events) if md]
    return "\n\n".join(parts) + "\n"
