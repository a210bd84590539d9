"""One run, for audit: step through its rounds, see its findings, notes, raw events.

The transcript is opened lazily (record/pages.py) and only the shown round is drawn, so
a run of thousands of rounds opens at once; the header and the notes come from the
run's fold of its head events, the findings from the audit of its whole fold, computed
in a thread.
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
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from conductor.export.terminal import usage_line
from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import NotesWritten, Recall
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible, visible_line
from record.audit import AuditReport, audit_outline
from record.fold import outline, outline_file
from record.home import home_dir
from record.pages import TranscriptPages
from tui.screens.raw_events import RawEventsScreen
from tui.widgets.key_bar import KeyBar
from tui.widgets.round_list import RoundList
from tui.widgets.run_view import RunView

if TYPE_CHECKING:
    from tui.app import ConductorApp


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def header_text(pages: TranscriptPages) -> Text:
    """The run's id, task, method, model and question, then how it ended."""
    start, end = pages.run.started, pages.run.finished
    text = Text()
    if start is not None:
        text.append(visible(str(start.run_id)), "bold")
        text.append(
            f" · {visible(str(start.task or 'no task'))} · {visible(start.method_name)}"
            f" · {visible(str(start.model))}\n",
            "dim",
        )
        text.append(visible(" ".join(str(start.question).split())[:300]))
    else:
        text.append(f"{pages.path.name}: no run start recorded", "yellow")
    if end is not None:
        rounds = plural(_count(end.rounds), "round")
        text.append(f"\n{visible(str(end.status))} · {rounds} · {usage_line(end.usage)}", "bold")
        verdict = pages.run.correctness
        style = {"correct": "bold green", "wrong": "bold red"}.get(verdict.label, "dim")
        text.append(" · answer ", "bold")
        text.append(visible_line(verdict.describe()), style)
    else:
        text.append("\nno end recorded (still running, or interrupted hard)", "yellow")
    return text


def note_rows(recalls: list[Recall], written: list[NotesWritten]) -> list[tuple[str, str]]:
    """(note id, label) for each note the run was shown or wrote, each id once.

    A note can be shown to the run and then merged into by it (a similar question
    recalls the note its own answer then updates); it is one row saying both.
    """
    shown: dict[str, str] = {}
    wrote: list[str] = []
    for recall in recalls:
        for note in recall.notes if isinstance(recall.notes, list) else []:
            if not isinstance(note, dict):
                continue
            note_id = str(note.get("id") or "")
            key = str(note.get("key") or note_id or "(no id)")
            shown.setdefault(note_id, key)
    for event in written:
        for note_id in event.note_ids if isinstance(event.note_ids, list) else []:
            note_id = str(note_id or "")
            if note_id not in wrote:
                wrote.append(note_id)
    rows: list[tuple[str, str]] = []
    for note_id, key in shown.items():
        label = "shown, merged into" if note_id and note_id in wrote else "shown"
        rows.append((note_id, f"{label}: {visible(key)}"))
    for note_id in wrote:
        if note_id not in shown:
            rows.append((note_id, f"wrote: {visible(note_id) or '(no id)'}"))
    return rows


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
        Binding(
            "f",
            "findings",
            "Findings",
            id="run.findings",
            tooltip="Read every finding of the audit whole, at the screen's width.",
        ),
        Binding("escape", "back", "Back", id="run.back", tooltip="Back to the list of runs."),
    ]

    @dataclass
    class Audited(Message, bubble=False):
        report: AuditReport | None
        error: str | None = None

    app: ConductorApp

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.pages: TranscriptPages | None = None
        self.current = 0
        self.report: AuditReport | None = None
        self.exported: Path | None = None
        self._audit_started = False
        self.audit_finished = False

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
        yield KeyBar()

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
        self.query_one("#run-header", Static).update(header_text(self.pages))

    def _fill_notes(self) -> None:
        assert self.pages is not None
        notes = self.query_one("#notes", OptionList)
        rows = note_rows(self.pages.run.recalls, self.pages.run.notes_written)
        for note_id, label in rows:
            notes.add_option(
                Option(Text(label), id=f"note:{note_id}" if note_id else None, disabled=not note_id)
            )
        if not notes.option_count:
            notes.add_option(Option("none", disabled=True))
        elif rows and rows[0][0]:
            notes.highlighted = 0  # so Enter opens a note at once

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
        try:
            report = audit_outline(outline_file(self.path))
        except Exception as exc:  # a finding we cannot compute must not hide the run
            self.post_message(self.Audited(None, str(exc)))
            return
        self.post_message(self.Audited(report))

    def on_run_detail_screen_audited(self, message: Audited) -> None:
        self.audit_finished = True
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

    def action_findings(self) -> None:
        if self.report is None:
            self.notify("The audit is still running; try again in a moment.")
            return
        from tui.screens.findings import FindingsScreen

        verdict = self.pages.run.correctness if self.pages is not None else None
        self.app.push_screen(FindingsScreen(self.report, verdict))

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
        from conductor.export.markdown import to_markdown
        from record.reader import read_transcript

        try:
            transcript = read_transcript(self.path)
            started = transcript.started
            name = started.run_id if started else self.path.stem
            target = home_dir() / "exports" / f"{name}.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(to_markdown(outline(transcript.events)), encoding="utf-8")
        except (OSError, UserFacingError, ValueError, TypeError, AttributeError) as exc:
            # A damaged or foreign transcript: say so, keep the view.
            self.notify(f"cannot export {self.path.name}: {exc}", severity="error", title="export")
            return
        self.exported = target
        self.notify(f"written to {target}", title="exported Markdown")

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
