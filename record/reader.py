"""Reading transcripts back: every good event, and where the first bad line was.

`parse_event` is the one decoder of a transcript line, for every reader (this module,
the lazy pages of record/pages.py): an event whose fields all have their declared
types, so a hand-edited or foreign file cannot crash a view, an export or the audit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from conductor_kernel.bounded import TooDeep, loads_json
from conductor_kernel.errors import TranscriptError, UserFacingError
from conductor_kernel.events import Event, RunFinished, RunStarted
from conductor_kernel.interfaces import ExecResult, Usage

# A field's declared type (as written in conductor_kernel/events.py) -> what to show instead of
# a value of the wrong type.
_FALLBACK: dict[str, Any] = {"str": "", "int": 0, "float": 0.0, "bool": False}
_NESTED: dict[str, type] = {"Usage": Usage, "ExecResult": ExecResult}


_PLANS: dict[type, tuple[tuple[str, str, bool], ...]] = {}


def _declared(cls: type) -> tuple[tuple[str, str, bool], ...]:
    """(name, base type, optional) of each field of a dataclass, read once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        found = []
        for f in fields(cls):
            declared = str(f.type)
            optional = declared.endswith("| None")
            found.append((f.name, declared.removesuffix("| None").strip(), optional))
        plan = _PLANS[cls] = tuple(found)
    return plan


def _fix(value: Any, base: str, optional: bool) -> Any:
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
    if base in _NESTED:
        made = _NESTED[base]
        return _fix_fields(value if isinstance(value, made) else made())
    return value


def _fix_fields(obj: Any) -> Any:
    for name, base, optional in _declared(type(obj)):
        value = getattr(obj, name)
        fixed = _fix(value, base, optional)
        if fixed is not value:
            setattr(obj, name, fixed)
    return obj


def parse_event(line: bytes | str) -> Event:
    """One transcript line as an event whose fields all have their declared types.

    Raises ValueError (not JSON, or nested too deeply) or TypeError (not a JSON object)."""
    data = loads_json(line)
    if not isinstance(data, dict):
        raise TypeError(f"a JSON {type(data).__name__}, not an object")
    return event_from(data)


def event_from(data: dict[str, Any]) -> Event:
    """A decoded line as an event whose fields all have their declared types."""
    try:
        event = Event.from_dict(data)
    except (TypeError, ValueError, AttributeError, KeyError):
        # A field of the wrong shape inside Usage or ExecResult: keep the event's kind.
        plain = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        event = Event.from_dict(plain)
    fixed: Event = _fix_fields(event)
    return fixed


@dataclass
class Transcript:
    path: Path
    events: list[Event] = field(default_factory=list)
    # Set when a line could not be read: the first such line and why.
    problem: TranscriptError | None = None

    @property
    def started(self) -> RunStarted | None:
        return next((e for e in self.events if isinstance(e, RunStarted)), None)

    @property
    def finished(self) -> RunFinished | None:
        return next((e for e in reversed(self.events) if isinstance(e, RunFinished)), None)

    @property
    def complete(self) -> bool:
        return self.finished is not None and self.problem is None


def _parse(path: Path, number: int, line: str) -> Event:
    try:
        data = loads_json(line)
    except TooDeep as exc:
        raise TranscriptError(str(path), number, f"not an event: {exc.args[0]}") from None
    except json.JSONDecodeError as exc:
        cut = (
            ""
            if line.endswith("\n")
            else " (the line is cut short: the run was probably killed while writing)"
        )
        raise TranscriptError(str(path), number, f"not valid JSON: {exc.msg}{cut}") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise TranscriptError(str(path), number, "not an event (no 'kind' field)")
    try:
        return event_from(data)
    except (TypeError, ValueError) as exc:
        raise TranscriptError(
            str(path), number, f"malformed {data.get('kind')} event: {exc}"
        ) from None


def _open(path: Path) -> IO[str]:
    """The transcript for reading, or a `UserFacingError` saying why it cannot be read
    (a run still in runs.db whose file was deleted or moved, a folder, no permission)."""
    try:
        return path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise UserFacingError(
            f"{path}: the transcript is gone (deleted or moved); runs.db still lists the run "
            "but its events were only in that file. Put it back, or give the file's new "
            "path instead of the run id."
        ) from None
    except OSError as exc:
        raise UserFacingError(
            f"{path}: cannot read the transcript ({exc.strerror or exc}); check that it is "
            "a readable file."
        ) from None


def iter_events(path: Path | str) -> Iterator[Event]:
    """Events of a transcript in order; raises `TranscriptError` at the first bad line."""
    path = Path(path)
    with _open(path) as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield _parse(path, number, line)


def read_transcript(path: Path | str, *, strict: bool = False) -> Transcript:
    """The whole transcript. With `strict=False` a bad line is skipped and the first one
    is reported in `problem`: a line cut by a killed process is followed by the ending
    the next start appends (transcripts/index.py), and nothing after it is lost.
    """
    path = Path(path)
    transcript = Transcript(path)
    with _open(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                transcript.events.append(_parse(path, number, line))
            except TranscriptError as exc:
                if strict:
                    raise
                if transcript.problem is None:
                    transcript.problem = exc
    return transcript
