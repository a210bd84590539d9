"""A transcript opened lazily, one page per round, for the audit view.

Opening scans the file once for where each line starts and what kind of event it holds
(read from the start of the line, without parsing the rest), so a 2,000-round run opens
in a fraction of a second; a page's events are parsed only when it is shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from conductor_kernel.errors import TranscriptError
from conductor_kernel.events import Event, NotesWritten, Recall, RunFinished, RunStarted
from conductor_kernel.interfaces import ExecResult, Usage

_KIND_RE = re.compile(rb'"kind"\s*:\s*"([a-z_]+)"')
# How our writer starts every line; other writers fall back to the pattern above.
_PREFIX = b'{"v": 1, "kind": "'

_ROUND_RE = re.compile(rb'"round"\s*:\s*(\d+)')
# Events the header and the notes panel need, parsed at open time (there are few).
_HEAD_KINDS = {"run_started", "recall", "run_finished", "notes_written"}


# A field's declared type (as written in conductor_kernel/events.py) -> what to show instead of
# a value of the wrong type, so a hand-edited or foreign file cannot crash a view.
_FALLBACK: dict[str, Any] = {"str": "", "int": 0, "float": 0.0, "bool": False}


def _fix(value: Any, declared: str) -> Any:
    optional = declared.endswith("| None")
    base = declared.removesuffix("| None").strip()
    if value is None and optional:
        return None
    if base in _FALLBACK:
        kind = type(_FALLBACK[base])
        if base == "float" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, kind) and (base == "bool" or not isinstance(value, bool)):
            return value
        if base == "str" and value is not None:
            return str(value)
        return None if optional else _FALLBACK[base]
    if base.startswith("list"):
        return value if isinstance(value, list) else []
    if base.startswith("dict"):
        return value if isinstance(value, dict) else {}
    if base in ("Usage", "ExecResult"):
        made = {"Usage": Usage, "ExecResult": ExecResult}[base]
        return _fix_fields(value if isinstance(value, made) else made())
    return value


def _fix_fields(obj: Any) -> Any:
    for f in fields(obj):
        setattr(obj, f.name, _fix(getattr(obj, f.name), str(f.type)))
    return obj


def parse_event(line: bytes | str) -> Event:
    """One transcript line as an event whose fields all have their declared types."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise TypeError(f"a JSON {type(data).__name__}, not an object")
    try:
        event = Event.from_dict(data)
    except (TypeError, ValueError, AttributeError, KeyError):
        # A field of the wrong shape inside Usage or ExecResult: keep the event's kind.
        plain = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        event = Event.from_dict(plain)
    return _fix_fields(event)


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
        for line in chunk.splitlines():
            if line.strip():
                try:
                    events.append(parse_event(line))
                except (ValueError, TypeError):
                    break  # a cut-short last line: show what came before it
        return events

    @property
    def started(self) -> RunStarted | None:
        return next((e for e in self.head if isinstance(e, RunStarted)), None)

    @property
    def finished(self) -> RunFinished | None:
        return next((e for e in reversed(self.head) if isinstance(e, RunFinished)), None)

    @property
    def recalls(self) -> list[Recall]:
        return [e for e in self.head if isinstance(e, Recall)]

    @property
    def notes_written(self) -> list[NotesWritten]:
        return [e for e in self.head if isinstance(e, NotesWritten)]

    def page_of_round(self, round_no: int) -> int | None:
        return next((i for i, p in enumerate(self.pages) if p.round == round_no), None)
