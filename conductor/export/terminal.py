"""The CLI's live view of a run: one rich renderer per event kind.

Whatever a model or a sandbox wrote is untrusted: it goes through `visible()` (control
characters shown as escapes) and into `Text` objects (never parsed as rich markup), and
Markdown is drawn without terminal hyperlinks, so nothing in it can act on the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

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
    NotesWritten,
    Observation,
    Recall,
    RunFinished,
    RunScored,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult, Usage
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible, visible_line
from record.checked import checked_line


def shown(text: str, style: str = "") -> Text:
    """Untrusted text as a rich `Text`: escapes visible, no markup."""
    return Text(visible(text), style=style)


def shown_line(text: str, style: str = "") -> Text:
    return Text(visible_line(text), style=style)


def usage_line(usage: Usage) -> str:
    """Tokens and cost as measured; what the server did not report is shown estimated and
    marked so, never as a measured `0 in, 0 out`."""
    cost = f"${usage.cost_usd:.4f}"
    estimate = ""
    if usage.estimated_calls:
        calls = "call" if usage.estimated_calls == 1 else "calls"
        estimate = (
            f"~{usage.estimated_tokens:,} tokens estimated "
            f"({usage.estimated_calls} {calls} with no usage reported)"
        )
        if not (usage.input_tokens or usage.output_tokens):
            return f"{estimate}, {cost}"
        estimate = f", {estimate}"
    cached = f", {usage.cache_read_tokens:,} cached" if usage.cache_read_tokens else ""
    measured = f"{usage.input_tokens:,} in{cached}, {usage.output_tokens:,} out"
    return f"{measured}{estimate}, {cost}"


def exec_status(result: ExecResult) -> str:
    if result.infra_error:
        return f"sandbox error: {visible_line(result.infra_error)}"
    parts = [f"exit {result.exit_code}" if result.signal is None else f"signal {result.signal}"]
    parts += [f"{hit} limit" for hit in result.limits_hit]
    parts.append(f"{result.duration_s * 1000:.0f} ms on {visible_line(result.backend)}")
    return ", ".join(parts)


def _run_started(e: RunStarted) -> Any:
    return Panel(
        shown(e.question),
        title=shown_line(
            f"question · {e.method_name} · {e.model} · sandbox {e.sandbox}"
            + (f" · protocol {e.protocol}" if e.protocol else "")
        ),
        border_style="cyan",
    )


def _recall(e: Recall) -> Any:
    if not e.notes:
        return Text("  notebook: nothing relevant to recall", style="magenta")
    # Kind and id, so the user can `conductor notebook show ID` what the model was shown.
    notes = ", ".join(
        f"{n.get('kind', 'note')} {n.get('id')} ({n.get('score', 0):.2f}"
        + (", another question)" if n.get("differs") else ")")
        for n in e.notes
    )
    kind = f"type {e.task_type}" if e.task_type else "this question"
    line = f"  recalled {plural(len(e.notes), 'note')} ({kind}): {notes}"
    checked = checked_line(e)
    return shown(line + (f"\n  {checked}" if checked else ""), style="magenta")


def _meta_turn(e: MetaTurnFinished) -> Any:
    return Panel(
        shown(e.shown_text),
        title=f"round {e.round} · meta model",
        subtitle=usage_line(e.usage),
        border_style="blue",
    )


def _expert_started(e: ExpertCallStarted) -> Any:
    return Panel(
        shown(e.instruction), title=shown_line(f"→ {e.name}"), border_style="yellow", padding=(0, 1)
    )


def _expert_finished(e: ExpertCallFinished) -> Any:
    body = e.text or "(code given by the meta model; no expert call)"
    # No hyperlinks: a model's [text](url) must not become a terminal link (OSC 8).
    return Panel(
        Markdown(visible(body), hyperlinks=False),
        title=shown_line(f"← {e.name}"),
        subtitle=usage_line(e.usage),
        border_style="yellow",
    )


def _sandbox(e: SandboxExec) -> Any:
    r = e.result
    parts: list[Any] = [Syntax(visible(e.code), "python", line_numbers=False)]
    if r.stdout:
        parts.append(shown(r.stdout.rstrip("\n")))
    if r.stderr:
        parts.append(shown(r.stderr.rstrip("\n"), style="red"))
    style = "green" if r.ok else "red"
    return Panel(Group(*parts), title=Text(f"sandbox · {exec_status(r)}"), border_style=style)


def _observation(e: Observation) -> Any:
    return shown("  " + observation_line(e.reason, e.message), style="dim italic")


def _final(e: FinalAnswer) -> Any:
    return Panel(shown(e.answer), title="final answer", border_style="bold green")


def _limit(e: LimitHit) -> Any:
    return shown_line(f"limit reached: {e.limit} ({e.value:g} of {e.maximum:g})", style="bold red")


def _error(e: ErrorEvent) -> Any:
    return Panel(shown(e.message), title=shown_line(f"error · {e.where}"), border_style="bold red")


def _finished(e: RunFinished) -> Any:
    return shown_line(
        f"{e.status} · {plural(e.rounds, 'round')} · {plural(e.expert_calls, 'expert call')} · "
        f"{plural(e.sandbox_runs, 'sandbox run')} · {usage_line(e.usage)} · {e.duration_s:.1f} s · run {e.run_id}",
        style="bold",
    )


def _scored(e: RunScored) -> Any:
    from record.correctness import Correctness

    verdict = Correctness.of_event(e)
    style = {"correct": "bold green", "wrong": "bold red"}.get(verdict.label, "dim")
    return shown_line(f"answer {verdict.describe()}", style=style)


def _notes(e: NotesWritten) -> Any:
    line = (
        f"  notebook: {plural(len(e.note_ids), 'note')} written ({verification_words(e.verification)}), "
        f"{plural(e.skipped, 'duplicate')} skipped"
    )
    extra = [
        text
        for text in (
            tool_tests_line(e.tools, e.tool_testing),
            learning_cost_line(e.usage, e.budget, e.reflection),
        )
        if text
    ]
    if not extra:
        return shown_line(line, style="magenta")
    return Group(
        shown_line(line, style="magenta"),
        *(shown_line(f"    {text}", style="magenta") for text in extra),
    )


RENDERERS: dict[type[Event], Callable[[Any], Any]] = {
    RunStarted: _run_started,
    Recall: _recall,
    MetaTurnFinished: _meta_turn,
    ExpertCallStarted: _expert_started,
    ExpertCallFinished: _expert_finished,
    SandboxExec: _sandbox,
    Observation: _observation,
    FinalAnswer: _final,
    LimitHit: _limit,
    ErrorEvent: _error,
    RunFinished: _finished,
    NotesWritten: _notes,
    RunScored: _scored,
}


class RichPrinter:
    """An `EventSink` that prints each event as it arrives."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()

    def handle(self, event: Event) -> None:
        render = RENDERERS.get(type(event))
        if render is not None:
            self.console.print(render(event))
