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
from collections.abc import Callable
from typing import Any

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
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible, visible_line
from record.checked import checked_line
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


def _run_started(e: RunStarted) -> str:
    target = f"\n\n**Target:** {_code(e.target)}" if e.target else ""
    return (
        f"# Run {_code(e.run_id)}\n\n**Model:** {_code(e.model)} · **Experts:** "
        f"{_code(e.expert_model)} · **Sandbox:** {_code(e.sandbox)}{target}"
        f"\n\n## Question\n\n{_block(e.question)}"
    )


def _recall(e: Recall) -> str:
    notes = "\n".join(
        f"- {_code(str(n.get('id')))} {_code(str(n.get('key', '')))} "
        f"(score {float(n.get('score', 0)):.2f}"
        + (f"; another question: {_code(str(n['differs']))})" if n.get("differs") else ")")
        for n in e.notes
    )
    kind = _code(e.task_type) if e.task_type else "no task type"
    checked = checked_line(e)
    tail = f"\n\n{_code(checked)}" if checked else ""
    return f"### Recalled notes ({kind})\n\n{notes or 'none'}{tail}"


def _meta_started(e: MetaTurnStarted) -> str:
    return (
        f"## Round {e.round}\n\n<details><summary>What the meta model was sent</summary>"
        f"\n\n{_block(e.user_message)}\n\n</details>"
    )


def _meta_finished(e: MetaTurnFinished) -> str:
    return f"### Meta model\n\n{_block(e.shown_text)}"


def _expert_started(e: ExpertCallStarted) -> str:
    return f"### → {_code(e.name)}\n\n{_block(e.instruction)}"


def _expert_finished(e: ExpertCallFinished) -> str:
    reply = e.text or "(code given by the meta model)"
    return f"### ← {_code(e.name)}\n\n{_block(reply)}"


def _sandbox(e: SandboxExec) -> str:
    r = e.result
    status = r.infra_error or ("timed out" if r.timed_out else f"exit {r.exit_code}")
    limits = "".join(f", {hit} limit" for hit in r.limits_hit)
    parts = [
        f"#### Sandbox ({_code(r.backend)}, {_code(status)}{limits}, {r.duration_s * 1000:.0f} ms)",
        _block(e.code, "python"),
    ]
    if r.stdout:
        parts.append("stdout:\n\n" + _block(r.stdout))
    if r.stderr:
        parts.append("stderr:\n\n" + _block(r.stderr))
    return "\n\n".join(parts)


def _observation(e: Observation) -> str:
    return f"> **{_code(e.reason)}:**\n\n{_block(e.message)}"


def _final(e: FinalAnswer) -> str:
    return f"## Final answer\n\n{_block(e.answer)}"


def _limit(e: LimitHit) -> str:
    return f"> **Limit reached:** {_code(e.limit)} ({e.value:g} of {e.maximum:g})"


def _error(e: ErrorEvent) -> str:
    return f"> **Error ({_code(e.where)}):**\n\n{_block(e.message)}"


def _finished(e: RunFinished) -> str:
    u = e.usage
    return (
        "## Summary\n\n| status | rounds | expert calls | sandbox runs | input tokens "
        "| output tokens | cost | time |\n|---|---|---|---|---|---|---|---|\n"
        f"| {_code(e.status)} | {e.rounds} | {e.expert_calls} | {e.sandbox_runs} "
        f"| {u.input_tokens} | {u.output_tokens} | ${u.cost_usd:.4f} | {e.duration_s:.1f} s |"
    )


def _notes(e: NotesWritten) -> str:
    tools = tool_tests_line(e.tools, e.tool_testing)
    cost = learning_cost_line(e.usage, e.budget, e.reflection)
    return (
        f"> **Notebook:** {plural(len(e.note_ids), 'note')} written ({_code(e.verification)})"
        + (f"; {_code(tools)}" if tools else "")
        + (f"; {_code(cost)}" if cost else "")
    )


# One renderer per event kind, as the terminal's and the TUI's; a kind not here (a
# text delta, a verdict) is left out of the page.
RENDERERS: dict[type[Event], Callable[[Any], str]] = {
    RunStarted: _run_started,
    Recall: _recall,
    MetaTurnStarted: _meta_started,
    MetaTurnFinished: _meta_finished,
    ExpertCallStarted: _expert_started,
    ExpertCallFinished: _expert_finished,
    SandboxExec: _sandbox,
    Observation: _observation,
    FinalAnswer: _final,
    LimitHit: _limit,
    ErrorEvent: _error,
    RunFinished: _finished,
    NotesWritten: _notes,
}


def _md(event: Event) -> str | None:
    render = RENDERERS.get(type(event))
    return render(event) if render is not None else None


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
