"""Read task files: one question per JSON line, or one per CSV row.

Columns (JSON keys): `input` (required), `target` (optional; items without one run
unscored), `id` (optional), anything else is kept as the item's metadata. Published
output files (`input`, `target`, `output`, `message_log`) read the same way, their
extra fields landing in metadata.

Ids are stable when none is given: `<file stem>-<10 hex of sha1(input)>`, with `-2`,
`-3`... for repeated inputs in file order. A hash rather than a line number so that
inserting or reordering lines does not rename items (a resumed batch keys results
by id).

A malformed line is a system failure the user must fix (`on_error="stop"`, raising
`TaskFileError` naming file and line) or a line to leave out with a warning
(`on_error="skip"`); either way the report names the file and line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from conductor_kernel.bounded import TooDeep, json_lines, loads_json
from conductor_kernel.errors import UserFacingError

log = logging.getLogger("conductor.taskfile")

OnError = Literal["skip", "stop"]
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
RESERVED = ("input", "target", "id")


class TaskFileError(UserFacingError):
    """A task file that cannot be read as asked."""


@dataclass(frozen=True)
class TaskItem:
    """One question of a task file."""

    id: str
    input: str
    target: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    line: int = 0
    named: bool = False  # its id was given in the task file (else derived from its input)

    @property
    def has_target(self) -> bool:
        return self.target is not None

    @property
    def label(self) -> str:
        """How a person finds the item: its line in the task file and its first words
        (`line 3: 2 5 8 11`) where its id is a hash, or the id the file gave it."""
        words = " ".join((self.id if self.named else self.input).split())
        head = words
        if len(words) > LABEL_CHARS:
            # Cut between words, the cut marked apart: no word is shown cut short.
            cut = words[: LABEL_CHARS - 2].rsplit(" ", 1)[0] or words[: LABEL_CHARS - 2]
            head = cut + " …"
        return f"line {self.line}: {head}" if self.line else head

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "target": self.target, **self.metadata}


# Characters of an item's input its label shows.
LABEL_CHARS = 40


@dataclass(frozen=True)
class Problem:
    """One line that could not be read, and why."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class TaskFile:
    path: Path
    items: list[TaskItem]
    problems: list[Problem] = field(default_factory=list)

    @property
    def scored_items(self) -> list[TaskItem]:
        return [item for item in self.items if item.has_target]


def _text(value: Any) -> str | None:
    """A cell as text: numbers become their literal, empty and null become None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return value if value.strip() else None
    return None


def _item_from_record(
    record: Mapping[str, Any], *, path: Path, line: int, ids: _IdMaker
) -> TaskItem | str:
    """A TaskItem, or the reason this record is not one."""
    if "input" not in record:
        keys = ", ".join(sorted(map(str, record))) or "none"
        return f"no `input` field (fields here: {keys})"
    raw_input = record["input"]
    if not isinstance(raw_input, str) or not raw_input.strip():
        return f"`input` must be non-empty text, got {type(raw_input).__name__} {raw_input!r:.40}"
    raw_target = record.get("target")
    if raw_target is not None and not isinstance(raw_target, str | int | float):
        return f"`target` must be text or a number, got {type(raw_target).__name__}"
    raw_id = record.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        return f"`id` must be text or an integer, got {type(raw_id).__name__}"
    given_id = _text(raw_id)
    item_id = ids.given(given_id) if given_id is not None else ids.derived(raw_input)
    if item_id is None:
        return f"duplicate id {given_id!r} (ids must be unique within a file)"
    metadata = {k: v for k, v in record.items() if k not in RESERVED}
    return TaskItem(
        id=item_id,
        input=raw_input,
        target=_text(raw_target),
        metadata=metadata,
        source=str(path),
        line=line,
        named=given_id is not None,
    )


class _IdMaker:
    """Hands out unique ids: given ones as they are, derived ones from the input."""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self.seen: set[str] = set()
        self.suffixes: dict[str, int] = {}  # the last suffix each derived base took
        self.probes = 0  # ids tried and found taken: linear in the items, never more

    def given(self, item_id: str) -> str | None:
        if item_id in self.seen:
            return None
        self.seen.add(item_id)
        return item_id

    def derived(self, text: str) -> str:
        base = f"{self.stem}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"
        # Each base counts on from its last suffix: n copies of one input cost n steps,
        # not n squared (a 100,000-item file of one question started in minutes).
        n = self.suffixes.get(base, 1)
        candidate = base if n == 1 else f"{base}-{n}"
        while candidate in self.seen:
            self.probes += 1
            n += 1
            candidate = f"{base}-{n}"
        self.suffixes[base] = n
        self.seen.add(candidate)
        return candidate


def json_error_text(exc: json.JSONDecodeError) -> str:
    """`exc` as words: json's own messages may end in "at" already."""
    joiner = " column" if exc.msg.endswith(" at") else " at column"
    return f"{exc.msg}{joiner} {exc.colno}"


def _jsonl_records(path: Path, text: str) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
    lines = json_lines(text)  # "\n" alone ends a line: U+2028 may sit inside a string
    cut = not text.endswith("\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = loads_json(raw)
        except TooDeep as exc:
            yield number, str(exc)
            continue
        except json.JSONDecodeError as exc:
            last = "; the file ends mid-line (cut short?)" if cut and number == len(lines) else ""
            yield number, f"not valid JSON ({json_error_text(exc)}){last}"
            continue
        if not isinstance(record, dict):
            yield number, f"expected a JSON object, got {type(record).__name__}"
            continue
        yield number, record


def _csv_records(
    path: Path, text: str, delimiter: str
) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
    # A quoted field may hold U+2028 or U+0085: only the csv module splits rows.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    header = [h.strip() for h in header]
    if "input" not in header:
        yield 1, f"the header row has no `input` column (columns: {', '.join(header) or 'none'})"
        return
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, f"not valid CSV ({exc})"
            return
        line, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield line, f"{len(row)} fields where the header has {len(header)}"
            continue
        yield line, dict(zip(header, row, strict=True))


def read_task_file(
    path: str | Path,
    *,
    on_error: OnError = "stop",
    warn: Callable[[Problem], None] | None = None,
) -> TaskFile:
    """Every item of a JSONL or CSV task file.

    With `on_error="stop"` the first malformed line raises `TaskFileError`; with
    "skip" it is left out, reported through `warn` (default: a logged warning) and
    kept in `TaskFile.problems`.
    """
    path = Path(path)
    if on_error not in ("skip", "stop"):
        raise ValueError(f"on_error must be 'skip' or 'stop', not {on_error!r}")
    suffix = path.suffix.lower()
    if suffix not in JSONL_SUFFIXES and suffix not in CSV_SUFFIXES:
        known = ", ".join([*JSONL_SUFFIXES, *CSV_SUFFIXES])
        raise TaskFileError(f"{path}: unknown task file type {suffix!r}; use one of {known}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TaskFileError(f"{path}: no such task file; check the path") from None
    except IsADirectoryError:
        raise TaskFileError(f"{path}: a folder, not a task file; give one of its files") from None
    except UnicodeDecodeError as exc:
        raise TaskFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8"
        ) from None
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read it ({exc.strerror})") from None

    records = (
        _jsonl_records(path, text)
        if suffix in JSONL_SUFFIXES
        else _csv_records(path, text, CSV_SUFFIXES[suffix])
    )
    ids = _IdMaker(path.stem)
    result = TaskFile(path=path, items=[])
    for line, record in records:
        outcome = (
            record
            if isinstance(record, str)
            else _item_from_record(record, path=path, line=line, ids=ids)
        )
        if isinstance(outcome, TaskItem):
            result.items.append(outcome)
            continue
        problem = Problem(str(path), line, outcome)
        if on_error == "stop":
            raise TaskFileError(
                f"{problem}. Fix that line, or skip bad lines with a warning (--on-bad-line skip)."
            )
        result.problems.append(problem)
        (warn or _log_problem)(problem)
    if not result.items:
        why = f" ({len(result.problems)} malformed lines skipped)" if result.problems else ""
        raise TaskFileError(f"{path}: no items found{why}; each line needs an `input`")
    return result


def _log_problem(problem: Problem) -> None:
    log.warning("skipped %s", problem)
