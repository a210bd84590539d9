"""A transcript as Markdown: the whole run, readable without the tool."""

from __future__ import annotations

from conductor.events import (
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

FENCE = "````"  # four backticks: the content may itself hold ``` fences


def _block(text: str, lang: str = "") -> str:
    return f"{FENCE}{lang}\n{text.rstrip()}\n{FENCE}"


def _md(event: Event) -> str | None:
    if isinstance(event, RunStarted):
        target = f"\n\n**Target:** `{event.target}`" if event.target else ""
        return (
            f"# Run {event.run_id}\n\n**Model:** {event.model} · **Experts:** {event.expert_model} "
            f"· **Sandbox:** {event.sandbox}{target}\n\n## Question\n\n{_block(event.question)}"
        )
    if isinstance(event, Recall):
        notes = "\n".join(
            f"- `{n.get('id')}` {n.get('key', '')} (score {n.get('score', 0):.2f})"
            for n in event.notes
        )
        return f"### Recalled notes ({event.task_type or 'no task type'})\n\n{notes}"
    if isinstance(event, MetaTurnStarted):
        return f"## Round {event.round}\n\n<details><summary>What the meta model was sent</summary>\n\n{_block(event.user_message)}\n\n</details>"
    if isinstance(event, MetaTurnFinished):
        return f"### Meta model\n\n{_block(event.text)}"
    if isinstance(event, ExpertCallStarted):
        return f"### → {event.name}\n\n{_block(event.instruction)}"
    if isinstance(event, ExpertCallFinished):
        return f"### ← {event.name}\n\n{_block(event.text or '(code given by the meta model)')}"
    if isinstance(event, SandboxExec):
        r = event.result
        status = r.infra_error or ("timed out" if r.timed_out else f"exit {r.exit_code}")
        parts = [
            f"#### Sandbox ({r.backend}, {status}, {r.duration_s * 1000:.0f} ms)",
            _block(event.code, "python"),
        ]
        if r.stdout:
            parts.append("stdout:\n\n" + _block(r.stdout))
        if r.stderr:
            parts.append("stderr:\n\n" + _block(r.stderr))
        return "\n\n".join(parts)
    if isinstance(event, Observation):
        return f"> **{event.reason}:** {event.message}"
    if isinstance(event, FinalAnswer):
        return f"## Final answer\n\n{_block(event.answer)}"
    if isinstance(event, LimitHit):
        return f"> **Limit reached:** {event.limit} ({event.value:g} of {event.maximum:g})"
    if isinstance(event, ErrorEvent):
        return f"> **Error ({event.where}):** {event.message}"
    if isinstance(event, RunFinished):
        u = event.usage
        return (
            f"## Summary\n\n| status | rounds | expert calls | sandbox runs | input tokens | output tokens | cost | time |\n"
            f"|---|---|---|---|---|---|---|---|\n| {event.status} | {event.rounds} | {event.expert_calls} | "
            f"{event.sandbox_runs} | {u.input_tokens} | {u.output_tokens} | ${u.cost_usd:.4f} | {event.duration_s:.1f} s |"
        )
    if isinstance(event, NotesWritten):
        return f"> **Notebook:** {len(event.note_ids)} notes written ({event.verification})"
    return None


def to_markdown(events: list[Event]) -> str:
    parts = [md for md in (_md(e) for e in events) if md]
    return "\n\n".join(parts) + "\n"
