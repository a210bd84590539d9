"""The one decoder of a transcript line gives every field its declared type, whatever a
hand-edited or foreign file holds there, and keeps every value that already has it."""

from __future__ import annotations

import json
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor_kernel.events import event_kinds
from conductor_kernel.interfaces import ExecResult, Usage
from record.pages import TranscriptPages
from record.reader import parse_event, read_transcript

KINDS = sorted(event_kinds().items())
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def has_declared_type(value: Any, declared: Any) -> bool:
    """Whether `value` fits its field's annotation (read from the class, not the reader)."""
    origin = typing.get_origin(declared)
    args = typing.get_args(declared)
    if origin in (typing.Union, type(int | None)):
        return any(has_declared_type(value, a) for a in args)
    if declared is type(None):
        return value is None
    if declared is Any:
        return True
    if origin is not None:
        return isinstance(value, origin)
    if declared is float:
        return isinstance(value, float)
    if declared is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if declared in (Usage, ExecResult):
        return isinstance(value, declared) and all_fields_typed(value)
    return isinstance(value, declared)


def all_fields_typed(obj: Any) -> bool:
    hints = typing.get_type_hints(type(obj))
    return all(has_declared_type(getattr(obj, f.name), hints[f.name]) for f in fields(obj))


@PROPERTY
@given(st.sampled_from(KINDS), st.data())
def test_every_field_gets_its_declared_type(kind: tuple[str, type], data: st.DataObject) -> None:
    name, cls = kind
    names = [f.name for f in fields(cls) if f.name not in ("v",)]
    line = {"v": 1, "kind": name}
    for field_name in data.draw(st.lists(st.sampled_from(names), max_size=4, unique=True)):
        line[field_name] = data.draw(JSON)
    event = parse_event(json.dumps(line))
    assert type(event) is cls
    assert all_fields_typed(event)


@PROPERTY
@given(st.sampled_from([k for k in KINDS if k[0] != "unknown"]))  # that one keeps its line
def test_a_well_formed_event_is_read_back_unchanged(kind: tuple[str, type]) -> None:
    _name, cls = kind
    event = cls(run_id="r1")
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, str) and f.name not in ("id", "run_id"):
            setattr(event, f.name, f"text of {f.name}")
        elif isinstance(value, int) and not isinstance(value, bool):
            setattr(event, f.name, 7)
        elif is_dataclass(value):
            for inner in fields(value):
                old = getattr(value, inner.name)
                if isinstance(old, int) and not isinstance(old, bool):
                    setattr(value, inner.name, 3)
    assert parse_event(json.dumps(event.to_dict())) == event


def test_every_reader_decodes_alike(tmp_path: Path) -> None:
    """The whole-file reader and the lazy pages read a wrong-typed line the same way."""
    lines = [
        {"v": 1, "kind": "run_started", "run_id": "r", "question": 42, "tags": []},
        {"v": 1, "kind": "meta_turn_started", "run_id": "r", "round": "2"},
        {"v": 1, "kind": "sandbox_exec", "run_id": "r", "result": {"exit_code": "0"}},
        {"v": 1, "kind": "run_finished", "run_id": "r", "rounds": None, "usage": []},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text(
        "".join(
            json.dumps({**line, "id": f"e{i}", "ts": 1.0}) + "\n" for i, line in enumerate(lines)
        )
    )
    whole = read_transcript(path, strict=True).events
    pages = TranscriptPages.open(path)
    lazy = [e for i in range(len(pages.pages)) for e in pages.events(i)]
    assert whole == lazy and all(all_fields_typed(e) for e in whole)
    assert whole[0].question == "42" and whole[-1].rounds == 0
    assert pages.run.started == whole[0] and pages.run.finished == whole[-1]


@pytest.mark.parametrize("line", ["[1, 2]", '"text"', "{not json"])
def test_a_line_that_is_no_event_is_reported_with_its_number(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"v": 1, "kind": "run_started", "run_id": "r"}) + "\n" + line + "\n")
    transcript = read_transcript(path)
    assert len(transcript.events) == 1
    assert transcript.problem is not None and transcript.problem.line == 2
