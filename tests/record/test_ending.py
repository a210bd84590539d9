"""The one account of a run's end (record/ending.py) over the table of endings, each run
made through the real loop by a scripted model: the status each ends with, the headline
and a reason that holds what the run knew (never blank, never generic)."""

from __future__ import annotations

import pytest

from conductor.config import load_settings
from equipment.run_endings import CASES, EndingCase, recorded_ending, session_for
from record.ending import cause_of, ending
from record.fold import outline


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_ending_is_told_from_the_fold(case: EndingCase) -> None:
    settings = load_settings({"recall": False, "learn": False, "method": "meta"})
    session = session_for(case)(settings)
    events = list(session.solve(case.question))
    told = ending(outline(events))
    assert told.status == case.status
    assert told.headline == case.headline
    assert case.said in told.line(), told.line()
    assert told.answered == (case.status == "answered")
    # The transcript on disk tells the same account as the events as they came.
    assert recorded_ending(told.run_id) == told


@pytest.mark.parametrize(
    ("where", "cause"),
    [
        ("model", "model"),
        ("ModelError", "model"),
        ("SandboxUnavailable", "sandbox"),
        ("DatabaseError", "storage"),
        ("KeyError", "KeyError"),
        ("", "unknown"),
    ],
)
def test_an_errors_cause_is_its_part_of_the_system(where: str, cause: str) -> None:
    assert cause_of(where) == cause
