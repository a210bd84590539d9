"""Evidence from other runs, and which notes a run actually used.

MoT's agreement, made strict: an answer is verified without a target when another run
on the same question, one that was not shown this answer through the notebook, arrived
at the same answer, judged the way the task's scorer compares answers. Multiple choice
and yes/no answers are excluded: with a handful of options two runs agree by chance
too often for agreement to mean much.
"""

from __future__ import annotations

import re
import sqlite3
import time

from conductor_kernel.interfaces import TaskJudge, TaskScoring
from lessons.forms.judging import scorer_verdict
from lessons.forms.problems import question_hash, same_question
from lessons.storage.store import Notebook, record_note_history
from lessons.write.verify import normalise, small_answer_space
from record.fold import RunOutline

_NOTE_ID = re.compile(r"\bn[0-9a-f]{7,11}\b")


def answers_agree(
    scoring: TaskScoring, judge: TaskJudge | None, question: str, a: str, b: str
) -> bool:
    """Two answers the same, as the task's scorer would compare them."""
    if not a.strip() or not b.strip():
        return False
    if judge is not None and judge.scorer == "numeric":
        # A sentence is no target for the numeric scorer: compare the numbers claimed.
        given = judge.task_input(question)
        claim = scoring.claimed_number(a, given)
        return claim is not None and claim == scoring.claimed_number(b, given)
    if judge is not None and judge.needs_target:
        return bool(scorer_verdict(scoring, judge, question, a, b))
    return normalise(a).replace(" ", "") == normalise(b).replace(" ", "")


def shown_its_own_answer(book: Notebook, run: RunOutline) -> bool:
    """Whether the run was shown a note made from its own question (not independent)."""
    if run.recall is None:
        return False
    for item in run.recall.notes:
        row = book.read_one("select source_question from notes where id = ?", (item.get("id"),))
        if row is not None and same_question(row["source_question"], run.question):
            return True
    return False


def agreeing_runs(book: Notebook, run: RunOutline) -> list[str]:
    """Earlier runs on the same question that independently gave the same answer, as
    the notebook's scorers compare answers."""
    answer = run.answer
    if answer is None or small_answer_space(answer) or shown_its_own_answer(book, run):
        return []
    judge = book.scoring.judge_for(run.task)
    rows = book.read(
        "select run_id, answer from distilled_runs where question_hash = ? and run_id != ? "
        "and answer is not null and outcome != 'wrong'",
        (question_hash(run.question), run.run_id),
    )
    return [
        row["run_id"]
        for row in rows
        if answers_agree(book.scoring, judge, run.question, answer, row["answer"])
    ]


def upgrade_runs(conn: sqlite3.Connection, run_ids: list[str], by_run: str) -> None:
    """Earlier unverified runs that a later run agreed with become verified, notes too."""
    now = time.time()
    for run_id in run_ids:
        changed = conn.execute(
            "update distilled_runs set verification = 'independent', outcome = 'verified' "
            "where run_id = ? and outcome = 'unverified'",
            (run_id,),
        ).rowcount
        if not changed:
            continue
        for (note_id,) in conn.execute(
            "select id from notes where source_run = ? and outcome = 'unverified'", (run_id,)
        ).fetchall():
            conn.execute(
                "update notes set verification = 'independent', outcome = 'verified', "
                "updated_at = ? where id = ?",
                (now, note_id),
            )
            record_note_history(
                conn, note_id, "verified", run_id=by_run, detail={"by": "agreement of runs"}
            )


def cited_notes(run: RunOutline) -> set[str]:
    """The shown notes the meta model named (by id) in any of its turns."""
    if run.recall is None:
        return set()
    shown = {str(item.get("id", "")) for item in run.recall.notes}
    said: set[str] = set()
    for r in run.rounds:
        if r.finished is not None:
            said |= set(_NOTE_ID.findall(r.finished.text))
    return {note for note in shown if any(note.startswith(s) for s in said)}
