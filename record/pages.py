"""A transcript opened lazily, one page per round, for a view of a long run (the TUI's
run detail).

Opening scans the file once for where each line starts and what kind of event it holds
(read from the start of the line, without parsing the rest), so a 2,000-round run opens
in a fraction of a second; a page's events are parsed only when it is shown, by the one
decoder (`record.reader.parse_event`). The few events about the whole run (its start and
end, recalls, notes written) are parsed at open and folded (`outline`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conductor_kernel.errors import TranscriptError
from conductor_kernel.events import Event
from record.fold import RunOutline, outline
from record.reader import parse_event

_KIND_RE = re.compile(rb'"kind"\s*:\s*"([a-z_]+)"')
# How our writer starts every line; other writers fall back to the pattern above.
_PREFIX = b'{"v": 1, "kind": "'

_ROUND_RE = re.compile(rb'"round"\s*:\s*(\d+)')
# Events the header and the notes panel need, parsed at open time (there are few).
_HEAD_KINDS = {"run_started", "recall", "run_finished", "run_scored", "notes_written"}


@dataclass
class Page:
    """The lines of one round (page 0: what came before round 1)."""

    round: int
    start: int
    end: int = 0
    expert_calls: int = 0
    sandbox_runs: int = 0
    final_answer: bool = False
    notes_to_model: int = 0

    @property
    def label(self) -> str:
        if self.round == 0:
            return "start"
        parts = [f"round {self.round}"]
        if self.expert_calls:
            parts.append(f"{self.expert_calls} exp")
        if self.sandbox_runs:
            parts.append(f"{self.sandbox_runs} py")
        if self.notes_to_model:
            parts.append("nudge")
        if self.final_answer:
            parts.append("answer")
        return " · ".join(parts)


@dataclass
class TranscriptPages:
    path: Path
    pages: list[Page] = field(default_factory=list)
    head: list[Event] = field(default_factory=list)
    lines: int = 0
    # Set when a line could not be read: pages stop before it, as the reader does.
    problem: TranscriptError | None = None
    # The run as far as its head events tell it: start, end, recalls, notes written (no
    # rounds: those are read a page at a time).
    run: RunOutline = field(default_factory=RunOutline)

    @classmethod
    def open(cls, path: Path | str) -> TranscriptPages:
        transcript = cls(Path(path))
        transcript._scan()
        return transcript

    def _scan(self) -> None:
        page = Page(round=0, start=0)
        self.pages = [page]
        offset = 0
        with self.path.open("rb") as fh:
            for number, line in enumerate(fh, start=1):
                try:
                    kind = self._kind(line, number)
                    head = self._parse(line, number) if kind in _HEAD_KINDS else None
                except TranscriptError as exc:
                    self.problem = exc
                    break
                if kind == "meta_turn_started":
                    page.end = offset
                    m = _ROUND_RE.search(line, 0, 400)
                    page = Page(round=int(m.group(1)) if m else len(self.pages), start=offset)
                    self.pages.append(page)
                elif kind == "expert_call_started":
                    page.expert_calls += 1
                elif kind == "sandbox_exec":
                    page.sandbox_runs += 1
                elif kind == "final_answer":
                    page.final_answer = True
                elif kind == "observation":
                    page.notes_to_model += 1
                if head is not None:
                    self.head.append(head)
                offset += len(line)
                self.lines = number
        page.end = offset
        self.run = outline(self.head)

    def _kind(self, line: bytes, number: int) -> str:
        if line.startswith(_PREFIX):
            end = line.find(b'"', len(_PREFIX))
            if end != -1:
                return line[len(_PREFIX) : end].decode()
        m = _KIND_RE.search(line, 0, 200)
        if m:
            return m.group(1).decode()
        if not line.strip():
            return ""
        return str(self._parse(line, number).kind)

    def _parse(self, line: bytes, number: int) -> Event:
        try:
            return parse_event(line)
        except (ValueError, TypeError) as exc:
            raise TranscriptError(str(self.path), number, f"not a readable event ({exc})") from None

    def events(self, index: int) -> list[Event]:
        """The events of page `index`, parsed now."""
        page = self.pages[index]
        with self.path.open("rb") as fh:
            fh.seek(page.start)
            chunk = fh.read(page.end - page.start)
        events = []
        for line in chunk.split(b"\n"):  # "\n" alone ends a JSON line
            if line.strip():
                try:
                    events.append(parse_event(line))
                except (ValueError, TypeError):
                    break  # a cut-short last line: show what came before it
        return events

    def page_of_round(self, round_no: int) -> int | None:
        return next((i for i, p in enumerate(self.pages) if p.round == round_no), None)
