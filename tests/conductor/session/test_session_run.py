"""`Session.run` and the session's end: a caller that does not stream gets the run's
start, answer, end and fold from the session, and the session, not its callers, closes
its sandbox, however the run ended."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.session import Session
from conductor_kernel.interfaces import ExecResult, Message
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from record.fold import outline
from record.reader import read_transcript

CALL = 'Expert Checker:\n"""\nCheck it.\n"""'


def _final(answer: str) -> str:
    return f'>> FINAL ANSWER:\n"""\n{answer}\n"""'


class CountingSandbox:
    name = "counting"

    def __init__(self) -> None:
        self.closed = 0

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        raise AssertionError("no code runs in these runs")

    def close(self) -> None:
        self.closed += 1


def _session(runs: Path, turns: list[Any], **kw: Any) -> Session:
    model = ScriptedModel(turns, lambda name, instruction: "Looks right.")
    return Session(model, config=RunConfig(python=False), runs_path=runs, **kw)


answers = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=20)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=answers, calls=st.integers(0, 3))
def test_run_gives_the_start_answer_end_and_the_fold_of_what_was_recorded(
    answer: str, calls: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        session = _session(runs, [CALL] * calls + [_final(answer)], scoring=False)
        result = session.run("What is it?", target=answer)
        assert result is session.last
        assert result.started is not None and result.started.question == "What is it?"
        assert result.answer == answer
        assert result.finished is not None and result.finished.status == "answered"
        (path,) = runs.glob("*.jsonl")
        recorded = outline(read_transcript(path).events)
        assert result.outline is not None
        assert result.outline.run_id == recorded.run_id == result.finished.run_id
        assert len(result.outline.calls) == len(recorded.calls) == calls
        assert result.outline.answer == recorded.answer == answer


def test_the_fold_carries_the_verdict_as_the_transcript_does(tmp_path: Path) -> None:
    result = _session(tmp_path, [_final("42")]).run("What is 6 x 7?", target="42")
    (path,) = tmp_path.glob("*.jsonl")
    recorded = outline(read_transcript(path).events)
    assert result.outline is not None and result.outline.scored is not None
    assert result.outline.correctness == recorded.correctness
    assert result.outline.correctness.correct is True


def _fails(messages: list[Message]) -> str:
    raise ConnectionError("the server went away")


@pytest.mark.parametrize("ending", ["answered", "model fails", "consumer stops"])
def test_the_session_closes_its_sandbox_once_however_the_run_ends(
    tmp_path: Path, ending: str
) -> None:
    box = CountingSandbox()
    turns: Any = ScriptedModel(_fails) if ending == "model fails" else [CALL, _final("x")]
    session = _session(tmp_path, [] if ending == "model fails" else turns, sandbox=box)
    if ending == "model fails":
        session.meta_model = session.conductor.meta_model = turns  # type: ignore[union-attr]
    with pytest.raises(ConnectionError) if ending == "model fails" else _no_error(), session:
        if ending == "consumer stops":
            events = session.solve("q")
            next(events)
            events.close()
        else:
            session.run("q")
    assert box.closed == 1
    run = session.last.outline
    assert run is not None
    assert run.status == {"answered": "answered", "model fails": "error"}.get(ending, "interrupted")
    if ending == "consumer stops":
        assert session.last.finished is None  # cut off: the loop never said how it ended


class _no_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
