"""Derived ids cost work linear in the items: a file of one question repeated 100,000
times starts fast. Counted in set lookups (never wall-clock), and the ids are the ones
the old scheme gave (a resumed batch keys its results by them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.tasks import files
from conductor.tasks.files import read_task_file


class CountingSet(set[str]):
    lookups = 0

    def __contains__(self, item: object) -> bool:
        CountingSet.lookups += 1
        return super().__contains__(item)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[CountingSet]:
    made = files._IdMaker.__init__

    def init(self: files._IdMaker, stem: str) -> None:
        made(self, stem)
        self.seen = CountingSet()

    monkeypatch.setattr(files._IdMaker, "__init__", init)
    CountingSet.lookups = 0
    return CountingSet


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _lookups(tmp_path: Path, counted: type[CountingSet], n: int) -> int:
    counted.lookups = 0
    rows = [{"input": "the same question"} for _ in range(n)]
    items = read_task_file(_write(tmp_path / "same.jsonl", rows)).items
    assert len({item.id for item in items}) == n
    return counted.lookups


def test_repeated_inputs_cost_lookups_linear_in_the_items(
    tmp_path: Path, counted: type[CountingSet]
) -> None:
    small, large = _lookups(tmp_path, counted, 1_000), _lookups(tmp_path, counted, 10_000)
    assert large <= 12 * small  # ten times the items: about ten times the work, not 100


def _old_ids(stem: str, rows: list[dict[str, str]]) -> list[str | None]:
    """The ids as the quadratic scheme gave them, duplicates of a given id None."""
    seen: set[str] = set()
    out: list[str | None] = []
    for row in rows:
        if "id" in row:
            out.append(None if row["id"] in seen else row["id"])
            seen.add(row["id"])
            continue
        base = f"{stem}-{hashlib.sha1(row['input'].encode()).hexdigest()[:10]}"
        candidate, n = base, 1
        while candidate in seen:
            n += 1
            candidate = f"{base}-{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


QUESTIONS = st.sampled_from(["a", "b", "c"])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_ids_are_the_ones_the_old_scheme_gave(data: st.DataObject) -> None:
    import tempfile

    stem = "t"
    derived = {q: f"{stem}-{hashlib.sha1(q.encode()).hexdigest()[:10]}" for q in "abc"}
    # Given ids that collide with derived ones (`t-<hash>-2`), in any order.
    given_ids = st.sampled_from([f"{base}-{n}" for base in derived.values() for n in (2, 3)])
    row = st.one_of(
        st.builds(lambda q: {"input": q}, QUESTIONS),
        st.builds(lambda q, i: {"input": q, "id": i}, QUESTIONS, given_ids),
    )
    rows = data.draw(st.lists(row, min_size=1, max_size=12))
    expected = _old_ids(stem, rows)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder) / f"{stem}.jsonl", rows)
        read = read_task_file(path, on_error="skip", warn=lambda problem: None)
    assert [item.id for item in read.items] == [i for i in expected if i is not None]
