"""`conductor solve`'s conventions: an empty question is a usage error (exit 2, nothing
recorded); `--quiet` prints the answer alone, and when there is none, the reason on
stderr and nothing on stdout."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main

OFFLINE = ["--model", "demo", "--no-python", "--no-recall", "--no-learn"]
# Whitespace of every kind Python's str.strip removes, in any mix and length.
BLANK = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2003\u3000"), max_size=12)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(question=BLANK, from_stdin=st.booleans())
def test_an_empty_question_is_a_usage_error_and_records_nothing(
    question: str,
    from_stdin: bool,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if from_stdin:
        monkeypatch.setattr("sys.stdin", io.StringIO(question))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["solve", "-" if from_stdin else question, *OFFLINE])
    assert code == 2
    assert "question is empty" in err.getvalue()
    runs = isolated_home / "runs"
    assert not runs.exists() or not any(runs.iterdir())
    assert not (isolated_home / "runs.db").exists()


def test_quiet_without_an_answer_says_why_on_stderr(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["solve", "What is the capital of Peru?", "--quiet", *OFFLINE])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""  # no blank line standing for an answer
    assert "No answer (declined)" in err and "cannot answer this question" in err


def test_quiet_with_an_answer_prints_the_answer_alone(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["solve", "Sort the following words alphabetically: List: pear apple", "--quiet", *OFFLINE]
    )
    out, err = capsys.readouterr()
    assert code == 0 and out == "apple pear\n"
    assert "no answer" not in err
