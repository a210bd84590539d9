"""The notebook judges with the scorers it is given; given none, it scores no answer (a
task it is told is as good as one it does not know) and never reaches for the
application."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from nb_support import SCORING, run_events, verify_events

from lessons.values import NO_SCORING

GAME = "4 5 6 10"


def test_given_no_scorers_a_task_is_judged_as_an_unknown_one() -> None:
    for answer in ("(4 + 5 * 6) - 10", "4 * 6"):  # right, and wrong by arithmetic
        known = verify_events(run_events("g", GAME, answer, task="GameOf24"))
        assert known.level == "checker"
        alone = verify_events(run_events("g", GAME, answer, task="GameOf24"), scoring=NO_SCORING)
        unknown = verify_events(run_events("g", GAME, answer, task="no-such-task"))
        assert alone == unknown and alone.level == "none"


def test_the_notebook_alone_imports_no_part_of_the_application(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from lessons.read.recall import recall
        from lessons.storage.store import Notebook
        from lessons.write.learn import learn_from_run
        from record.published import example_events
        book = Notebook({str(tmp_path / "nb.db")!r})
        written = learn_from_run(book, example_events("g", {GAME!r}, "4 * 6", "GameOf24"))
        recall(book, {GAME!r})
        app = sorted(m for m in sys.modules if m == "conductor" or m.startswith("conductor."))
        print(written.verification, written.outcome, app)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # The target is there, but with no scorer nothing compares an answer with it.
    assert done.stdout.split() == ["none", "unverified", "[]"]


def test_the_scorers_given_are_the_ones_asked(tmp_path: Path) -> None:
    asked: list[str] = []

    class Recording(type(SCORING)):  # type: ignore[misc]
        def judge_for(self, task: str):  # type: ignore[no-untyped-def]
            asked.append(task)
            return super().judge_for(task)

    checked = verify_events(run_events("g", GAME, "4 * 6", task="GameOf24"), scoring=Recording())
    assert asked == ["GameOf24"] and (checked.level, checked.outcome) == ("checker", "wrong")
