"""Every finding of one run's audit, whole: the run screen's side panel is narrow, so
`f` opens this full-width, wrapped, scrollable list (with the run's verdict on top)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible
from record.correctness import Correctness
from record.findings import FINDING_KINDS, AuditReport


def findings_text(report: AuditReport, verdict: Correctness | None) -> Text:
    """The verdict, then each finding: its badge, round, message and what the badge
    means, every word of it (the widget wraps; nothing is cut)."""
    text = Text()
    if verdict is not None:
        style = {"correct": "bold green", "wrong": "bold red"}.get(verdict.label, "dim")
        text.append("answer " + visible(verdict.describe()) + "\n\n", style)
    if not report.findings:
        text.append("no findings", "dim")
    for number, finding in enumerate(report.findings, 1):
        where = f" · round {finding.round}" if finding.round else ""
        text.append(f"{number}. [{finding.badge}]{where} ", "bold yellow")
        text.append(visible(finding.message))
        text.append(f"\n   {FINDING_KINDS[finding.kind][1]}\n", "dim")
    return text


class FindingsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f,q", "dismiss", "Close", id="findings.close", tooltip="Back to the run."),
    ]

    def __init__(self, report: AuditReport, verdict: Correctness | None = None) -> None:
        super().__init__()
        self.report = report
        self.verdict = verdict

    def compose(self) -> ComposeResult:
        title = f"{plural(len(self.report.findings), 'finding')} · Esc closes"
        with VerticalScroll(id="findings-box") as box:
            box.border_title = title
            yield Static(findings_text(self.report, self.verdict), id="findings-text")

    def on_mount(self) -> None:
        self.query_one("#findings-box").focus()
