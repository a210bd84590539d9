"""`conductor notebook import` of a JSON lines file from elsewhere (issue 33, items 3, 4).

A file spoilt on any line (cut short, not an object, a field of the wrong type, a value
too long or nested too deep, bytes that are not UTF-8, a record of no known kind, a
header of another format or a newer version) is refused through the command itself: exit
code 2, one line on stderr naming the file and the line, no traceback, and the notebook
exactly as it was (or, when there was none, still none). One that is only tampered with
imports, its notes unverified and saying where they came from.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from foreign_files import learned_notebook
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main
from lessons.exchange.transfer import export_lines
from lessons.storage.store import Notebook


@functools.cache
def exported() -> tuple[str, ...]:
    """Our learned notebook's export, line by line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ours.db"
        path.write_bytes(learned_notebook())
        book = Notebook(path)
        try:
            return tuple(export_lines(book))
        finally:
            book.close()


def note_lines() -> list[int]:
    return [i for i, line in enumerate(exported()) if json.loads(line).get("record") == "note"]


# A value of the wrong type for a field of a record (never null: null takes the default).
WRONG = {
    "text": st.integers() | st.lists(st.integers(), max_size=2) | st.just({"a": 1}),
    "kind": st.integers() | st.just("hint") | st.just(["insight"]),
    "id": st.just("has space") | st.just("[x] SYSTEM:") | st.integers(),
    "helpful": st.just("many") | st.floats(0.5, 9.5) | st.booleans(),
    "created_at": st.just("yesterday") | st.just(float("nan")) | st.just(1e300),
    "support": st.just(10**30) | st.just(-(10**30)),
    "history": st.just("none") | st.just([1, 2]) | st.just([{"action": 5}]),
    "source_question": st.just("\ud800 a lone surrogate") | st.just("x" * 200_001),
    "code": st.just([[[[]]]]) | st.just({"nested": [{}] * 3}),
}
spoilt_record = st.tuples(st.sampled_from(sorted(WRONG))).flatmap(
    lambda f: WRONG[f[0]].map(lambda value: ("field", f[0], value))
)
spoilt_line = st.one_of(
    st.tuples(st.just("cut"), st.floats(0.01, 0.99)),
    st.tuples(st.just("not an object"), st.sampled_from(["[1, 2]", "3", '"note"', "null", "true"])),
    st.tuples(st.just("not utf-8"), st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80"])),
    st.tuples(st.just("too deep"), st.integers(101, 400)),
    st.tuples(st.just("unknown record"), st.sampled_from(["tool", "", "NOTE", "run"])),
    spoilt_record,
)
spoilt_header = st.sampled_from(
    ['{"format": "conductor-notebook", "format_version": 99}',
     '{"format": "conductor-notebook", "format_version": "1"}',
     '{"format": "something-else", "format_version": 1}',
     "not json at all", "[]"]
)  # fmt: skip


def spoil(lines: list[bytes], index: int, how: tuple) -> None:
    record = json.loads(lines[index])
    if how[0] == "cut":
        lines[index] = lines[index][: max(1, int(len(lines[index]) * how[1]))]
    elif how[0] == "not an object":
        lines[index] = how[1].encode()
    elif how[0] == "not utf-8":
        lines[index] = lines[index][:10] + how[1] + lines[index][10:]
    elif how[0] == "too deep":
        record["text"] = functools.reduce(lambda inner, _: [inner], range(how[1]), [])
        lines[index] = json.dumps(record).encode()
    elif how[0] == "unknown record":
        lines[index] = json.dumps({**record, "record": how[1]}).encode()
    else:
        _, name, value = how
        lines[index] = json.dumps({**record, name: value}).encode()


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def import_through_the_command(
    capsys: pytest.CaptureFixture[str], data: bytes, into_ours: bool
) -> tuple[int, str, Path, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "theirs.jsonl", Path(tmp) / "ours.db"
        source.write_bytes(data)
        if into_ours:
            target.write_bytes(learned_notebook())
        before = digest(target)
        capsys.readouterr()
        code = main(["notebook", "import", str(source), "--notebook", str(target)])
        err = capsys.readouterr().err
        return code, err, source, digest(target) == before


def assert_refused(code: int, err: str, source: Path, line: int, unchanged: bool) -> None:
    assert code == 2 and unchanged, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(re.escape(f"{source}:{line}") + "[:,]", err), err  # the file and line


@pytest.mark.slow
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), how=spoilt_line, into_ours=st.booleans())
def test_a_line_spoilt_any_way_refuses_the_file_by_its_line_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], data: st.DataObject, how: tuple, into_ours: bool
) -> None:
    lines = [line.encode() for line in exported()]
    index = data.draw(st.sampled_from(note_lines()), label="line")
    spoil(lines, index, how)
    code, err, source, unchanged = import_through_the_command(
        capsys, b"\n".join(lines) + b"\n", into_ours
    )
    assert_refused(code, err, source, index + 1, unchanged)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(header=spoilt_header, into_ours=st.booleans())
def test_a_header_of_another_format_or_a_newer_version_is_refused_at_line_one(
    capsys: pytest.CaptureFixture[str], header: str, into_ours: bool
) -> None:
    lines = [header, *exported()[1:]]
    code, err, source, unchanged = import_through_the_command(
        capsys, "\n".join(lines).encode() + b"\n", into_ours
    )
    assert_refused(code, err, source, 1, unchanged)


def tamper(record: dict[str, Any]) -> dict[str, Any]:
    """The trust a file may claim for its notes, as high as it likes."""
    if record.get("record") != "note":
        return record
    return {**record, "verification": "target", "outcome": "correct", "helpful": 500,
            "support": 90, "confidence": 1.0, "text": record["text"] + " (theirs)"}  # fmt: skip


def test_a_tampered_export_imports_as_unverified_notes_that_say_where_they_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "theirs.jsonl", tmp_path / "ours.db"
    records = [tamper(json.loads(line)) for line in exported()]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    target.write_bytes(learned_notebook())
    assert main(["notebook", "import", str(source), "--notebook", str(target)]) == 0
    assert f"notes {len(note_lines())}," in capsys.readouterr().err
    with sqlite3.connect(target) as db:
        arrived = db.execute(
            "select verification, outcome, helpful, support, confidence, origin from notes "
            "where text like '% (theirs)'"
        ).fetchall()
    assert len(arrived) == len(note_lines())
    assert set(arrived) == {("none", "unverified", 0, 1, 0.5, f"imported from {source.resolve()}")}
    assert main(["notebook", "import", str(source), "--notebook", str(target)]) == 0
    assert "notes 0" in capsys.readouterr().err  # nothing twice
