"""The tools' work: solve a question as a recorded run, recall, search notes, show a run.

Each returns plain data (JSON-ready) for the server to send. A run started here is
started through `conductor.session` like any other: recorded, learned from, and held to
the configured limits (a tool call cannot raise them).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conductor.config import load_settings
from conductor.config.offered import offered
from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import RunFinished
from conductor_kernel.text.counts import plural

if TYPE_CHECKING:
    from conductor.config.settings import Settings
    from conductor.mcp_server.slots import RunSlots
    from record.fold import RunOutline


def solve(
    question: str,
    *,
    method: str | None = None,
    model: str | None = None,
    settings: Settings | None = None,
    models: tuple[str, ...] | None = None,
    slots: RunSlots | None = None,
) -> dict[str, Any]:
    """One run under `settings` (the configured ones by default; its limits hold); its
    answer, id and a short account of what it did. `model` names one of `models` (the
    configured model alone by default), never a spec of the caller's own: a spec says
    where the operator's key is sent. With `slots`, a run past their number is refused."""
    from conductor.methods import check_method
    from conductor.session import build_session

    if not question.strip():
        raise UserFacingError("the question is empty")
    base = settings or load_settings()
    update: dict[str, Any] = {"model": offered(model or None, models or (base.model,))}
    if method:
        update["method"] = check_method(method)
    chosen = base.model_copy(update=update)
    held = slots.held() if slots is not None else contextlib.nullcontext()
    with held, build_session(chosen) as session:
        result = session.run(question, tags={"via": "mcp"})
    started, finished, answer, run = result.started, result.finished, result.answer, result.outline
    if finished is None or started is None or run is None:
        raise UserFacingError("the run ended without being recorded as finished")
    from record.ending import ending

    told = ending(run)
    return {
        "answer": answer if told.answered else None,
        "run_id": finished.run_id,
        "status": finished.status,
        "verdict": told.verdict or None,
        # Why there is no answer and what to do (None when there is one): the same
        # account of the run's end every way in gives (record/ending.py).
        "reason": None if told.answered else told.line(),
        "method": started.method,
        "model": started.model,
        "account": _account(finished, run),
    }


def _account(finished: RunFinished, run: RunOutline) -> str:
    experts = Counter(
        call.started.name
        for round_ in run.rounds
        for call in round_.calls
        if call.started is not None
    )
    consulted = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in experts.items())
    used = finished.usage
    return (
        f"{finished.status} after {plural(finished.rounds, 'round')}; "
        f"{plural(finished.expert_calls, 'expert call')} ({consulted or 'none'}), "
        f"{plural(finished.sandbox_runs, 'program')} run; "
        f"{used.input_tokens + used.output_tokens} tokens, ${used.cost_usd:.4f}; "
        f"{finished.duration_s:.1f} s"
    )


def recall(question: str, *, notebook: str | None = None) -> dict[str, Any]:
    """What the notebook would show a run of `question`, each note with its trust."""
    from conductor.scoring.notebook import open_notebook
    from lessons.read.candidates import trust
    from lessons.read.recall import recall as recall_notes

    book = open_notebook(_notebook(notebook))
    try:
        result = recall_notes(book, question)
        best = result.best_type
        return {
            "task_type": f"{best['name']} ({best['id']})" if best else None,
            "rendered": result.rendered.text,
            "notes": [
                {
                    "id": shown.note["id"],
                    "kind": shown.note["kind"],
                    "text": shown.note.get("text") or shown.note.get("key"),
                    "verification": shown.note.get("verification"),
                    "helpful": shown.note.get("helpful"),
                    "harmful": shown.note.get("harmful"),
                    "trust": round(trust(shown.note), 3),
                    "source_run": shown.note.get("source_run"),
                    "relevance": round(shown.relevance, 4),
                }
                for shown in result.shown
            ],
        }
    finally:
        book.close()


def notebook_search(query: str, *, k: int = 8, notebook: str | None = None) -> dict[str, Any]:
    """Notes relevant to `query` (any threshold), as `conductor notebook search` finds them."""
    from conductor.scoring.notebook import open_notebook
    from lessons.read.recall import RecallOptions
    from lessons.read.recall import recall as recall_notes

    if not 1 <= k <= 100:
        raise UserFacingError("k must be between 1 and 100")
    book = open_notebook(_notebook(notebook))
    try:
        result = recall_notes(book, query, options=RecallOptions(k=k, threshold=0.0))
        return {
            "types": [
                {"id": m.type_id, "name": m.name, "relevance": round(m.relevance(), 4)}
                for m in result.matches
            ],
            "notes": result.event_notes(),
        }
    finally:
        book.close()


def run_show(run: str) -> dict[str, Any]:
    """A recorded run as Markdown (question, every turn and call, the answer)."""
    from conductor.export.markdown import to_markdown
    from record.fold import outline
    from record.reader import read_transcript
    from transcripts.references import indexed_run

    record = indexed_run(run)
    if not record["path"]:
        raise UserFacingError(f"run {record['run_id']} has no transcript on this machine")
    transcript = read_transcript(Path(record["path"]))
    return {
        "run_id": record["run_id"],
        "status": record["status"],
        "markdown": to_markdown(outline(transcript.events)),
    }


# -- what the resources read (read-only views of the runs index and the notebook) ------

LISTED = 100  # entries a listing resource holds: the newest


def runs_listing(*, limit: int = LISTED) -> dict[str, Any]:
    """The newest recorded runs, one line of facts each (`run_show` has the whole run)."""
    from transcripts.index import RunIndex

    verdicts = {1: "right", 0: "wrong", None: "not scored"}
    return {
        "runs": [
            {
                "run_id": run["run_id"],
                "uri": f"conductor://runs/{run['run_id']}",
                "status": run["status"],
                "verdict": verdicts.get(run["correct"], "not scored"),
                "findings": (run["findings"] or "").split(),
                "task": run["task"],
                "method": run["method"],
                "model": run["model"],
                "started_at": run["started_at"],
                "question": _clipped(run["question"]),
            }
            for run in RunIndex().list_runs(limit=limit)
        ]
    }


def notes_listing(*, limit: int = LISTED, notebook: str | None = None) -> dict[str, Any]:
    """The notebook's newest active notes, each with its verification and trust."""
    from conductor.scoring.notebook import open_notebook
    from lessons.storage.queries import recent_notes

    book = open_notebook(_notebook(notebook), read_only=True)
    try:
        return {
            "notes": [
                {**_note_facts(note), "uri": f"conductor://notes/{note['id']}"}
                for note in recent_notes(book, limit=limit)
            ]
        }
    finally:
        book.close()


def note_show(ref: str, *, notebook: str | None = None) -> dict[str, Any]:
    """One note (id or unique id prefix) whole: its text, code, answer and where it came from."""
    from conductor.scoring.notebook import open_notebook
    from lessons.storage.queries import claimed_elsewhere, lookup_note

    book = open_notebook(_notebook(notebook), read_only=True)
    try:
        note = lookup_note(book, ref)
        claims = claimed_elsewhere(book, note["id"]) if note is not None else []
    finally:
        book.close()
    if note is None:
        raise UserFacingError(
            f"no note matches {ref!r}; the resource conductor://notes lists note ids"
        )
    return {
        **_note_facts(note),
        "code": note.get("code") or "",
        "answer": note.get("answer"),
        "source_question": note.get("source_question"),
        "claimed_elsewhere": claims,
    }


def _note_facts(note: Any) -> dict[str, Any]:
    from conductor_kernel.text.display import visible_line
    from lessons.read.candidates import trust

    return {
        "id": note["id"],
        "kind": note["kind"],
        "text": note.get("text") or note.get("key"),
        "verification": note.get("verification"),
        "trust": round(trust(note), 3),
        "source_run": note.get("source_run"),
        # Where it came from: learned here, or brought by another notebook (its claims
        # of trust are not this notebook's: note_show lists them apart).
        "origin": visible_line(note.get("origin") or "") or "learned in this notebook",
    }


def _clipped(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _notebook(path: str | None) -> str | None:
    return path or load_settings().notebook or None
