"""One run, for audit: step through its rounds, see its findings, notes, raw events.

The transcript is opened lazily (tui/pages.py) and only the shown round is drawn, so
a run of thousands of rounds opens at once; the findings are computed in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Label, OptionList, Static
from textual.widgets.option_list import Option

from conductor.config import home_dir
from conductor.display import visible_line
from conductor.errors import UserFacingError
from conductor.printer import usage_line
from transcripts.audit import AuditReport, audit_events
from tui.pages import TranscriptPages
from tui.screens.raw_events import RawEventsScreen
from tui.widgets.round_list import RoundList
from tui.widgets.run_view import RunView

if TYPE_CHECKING:
    from tui.app import ConductorApp


class RunDetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step(1)", "Next", id="run.next", tooltip="Show the next round."),
        Binding("p", "step(-1)", "Prev", id="run.previous", tooltip="Show the previous round."),
        Binding(
            "home,g",
            "first",
            "First",
            id="run.first",
            tooltip="Show the start of the run.",
            priority=True,
        ),
        Binding(
            "end,G", "last", "Last", id="run.last", tooltip="Show the last round.", priority=True
        ),
        Binding(
            "j",
            "raw_json",
            "JSON",
            id="run.raw_json",
            tooltip="Show the raw JSON of any event of this round.",
        ),
        Binding(
            "e",
            "export_markdown",
            "Export",
            id="run.export",
            tooltip="Write the whole run as Markdown under the data directory.",
        ),
        Binding("escape", "back", "Back", id="run.back", tooltip="Back to the list of runs."),
    ]

    @dataclass
    class Audited(Message, bubble=False):
        report: AuditReport | None
        error: str | None = None

    app: ConductorApp  # type: ignore[assignment]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.pages: TranscriptPages | None = None
        self.current = 0
        self.report: AuditReport | None = None
        self.exported: Path | None = None
        self._audit_started = False

    @staticmethod
    def resolve(run: str) -> Path:
        """A transcript path from a path, a run id or a unique prefix of one."""
        path = Path(run)
        if path.suffix == ".jsonl" and path.exists():
            return path
        from transcripts.index import RunIndex

        row = RunIndex().get(run)
        if row is None or not row.get("path"):
            raise UserFacingError(f"no run matches {run!r} (or the prefix is ambiguous).")
        return Path(row["path"])

    def compose(self) -> ComposeResult:
        yield Static(id="run-header")
        with Horizontal(id="run-body"):
            with Vertical(id="run-side"):
                yield Label("Rounds", classes="side-title")
                yield RoundList(id="rounds")
                yield Label("Findings", classes="side-title")
                yield OptionList(Option("auditing…", disabled=True), id="findings")
                yield Label("Notes", classes="side-title")
                yield OptionList(id="notes")
            yield RunView(id="page")
        yield Footer()

    def on_mount(self) -> None:
        try:
            self.pages = TranscriptPages.open(self.path)
        except OSError as exc:
            self.notify(f"cannot read {self.path}: {exc}", severity="error")
            return
        if self.pages.problem is not None:
            self.notify(str(self.pages.problem), severity="warning", title="transcript")
        self._fill_header()
        self._fill_notes()
        rounds = self.query_one("#rounds", RoundList)
        rounds.set_labels([p.label for p in self.pages.pages])
        rounds.highlighted = 0
        rounds.focus()

    def _fill_header(self) -> None:
        assert self.pages is not None
        start, end = self.pages.started, self.pages.finished
        text = Text()
        if start is not None:
            text.append(visible_line(start.run_id), "bold")
            text.append(visible_line(f" · {start.task or 'no task'} · {start.model}") + "\n", "dim")
            text.append(visible_line(" ".join(start.question.split())[:300]))
        if end is not None:
            text.append(
                f"\n{visible_line(end.status)} · {end.rounds} rounds · {usage_line(end.usage)}",
                "bold",
            )
        else:
            text.append("\nno end recorded (still running, or interrupted hard)", "yellow")
        self.query_one("#run-header", Static).update(text)

    def _fill_notes(self) -> None:
        assert self.pages is not None
        notes = self.query_one("#notes", OptionList)
        for recall in self.pages.recalls:
            for note in recall.notes:
                key = note.get("key") or note.get("id")
                shown = Text(f"shown: {visible_line(str(key))}")
                notes.add_option(Option(shown, id=f"note:{note.get('id')}"))
        for written in self.pages.notes_written:
            for note_id in written.note_ids:
                notes.add_option(
                    Option(Text(f"wrote: {visible_line(note_id)}"), id=f"note:{note_id}")
                )
        if not notes.option_count:
            notes.add_option(Option("none", disabled=True))

    # -- pages -------------------------------------------------------------------
    @on(RoundList.Highlighted, "#rounds")
    def _round_highlighted(self, event: RoundList.Highlighted) -> None:
        self.current = event.index
        self.show_page(self.current)

    @work(exclusive=True, group="page")
    async def show_page(self, index: int) -> None:
        assert self.pages is not None
        view = self.query_one("#page", RunView)
        await view.show(self.pages.events(index))
        view.scroll_home(animate=False)
        if self.report is None and not self._audit_started:
            self._audit_started = True  # after the first page: the view comes first
            self.audit()

    def _go(self, index: int) -> None:
        if self.pages is None:
            return
        index = max(0, min(index, len(self.pages.pages) - 1))
        self.query_one("#rounds", RoundList).highlighted = index

    def action_step(self, delta: int) -> None:
        self._go(self.current + delta)

    def action_first(self) -> None:
        self._go(0)

    def action_last(self) -> None:
        if self.pages is not None:
            self._go(len(self.pages.pages) - 1)

    # -- findings and notes ----------------------------------------------------------
    @work(thread=True, exclusive=True, group="audit")
    def audit(self) -> None:
        from transcripts.reader import read_transcript

        try:
            report = audit_events(read_transcript(self.path).events)
        except Exception as exc:  # a finding we cannot compute must not hide the run
            self.post_message(self.Audited(None, str(exc)))
            return
        self.post_message(self.Audited(report))

    def on_run_detail_screen_audited(self, message: Audited) -> None:
        findings = self.query_one("#findings", OptionList)
        findings.clear_options()
        self.report = message.report
        if message.report is None:
            failed = Text(f"audit failed: {visible_line(str(message.error))}")
            findings.add_option(Option(failed, disabled=True))
            return
        for i, f in enumerate(message.report.findings):
            where = f"r{f.round} " if f.round else ""
            line = Text(f"[{f.badge}] {where}{visible_line(f.message)}")
            findings.add_option(Option(line, id=f"finding:{i}"))
        if not message.report.findings:
            findings.add_option(Option("no findings", disabled=True))

    @on(OptionList.OptionSelected, "#findings")
    def _finding_selected(self, event: OptionList.OptionSelected) -> None:
        if self.report is None or self.pages is None or event.option_id is None:
            return
        finding = self.report.findings[int(event.option_id.split(":")[1])]
        if finding.round is not None:
            page = self.pages.page_of_round(finding.round)
            if page is not None:
                self._go(page)

    @on(OptionList.OptionSelected, "#notes")
    def _note_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_id and event.option_id.startswith("note:"):
            self.app.open_note(event.option_id.split(":", 1)[1])

    # -- actions -------------------------------------------------------------------
    def action_raw_json(self) -> None:
        if self.pages is not None:
            self.app.push_screen(RawEventsScreen(self.pages.events(self.current)))

    def action_export_markdown(self) -> None:
        from transcripts.export import to_markdown
        from transcripts.reader import read_transcript

        transcript = read_transcript(self.path)
        started = transcript.started
        name = started.run_id if started else self.path.stem
        target = home_dir() / "exports" / f"{name}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(to_markdown(transcript.events), encoding="utf-8")
        self.exported = target
        self.notify(f"written to {target}", title="exported Markdown")

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
