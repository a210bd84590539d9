"""One run as a self-contained HTML page (`conductor runs export RUN --html`).

It shows what the TUI's run detail shows: the question, every round with the message
the meta model was sent (collapsed), each expert call collapsed to one line and
expanding to its instruction, the exact prompt it saw, its reply and its sandbox runs
(highlighted code, stdout, stderr, exit, limits hit), the notes recalled and written
with their evidence, audit findings as badges, usage and cost per call and in total,
and the final answer with its score where known.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conductor.export.html.page import render
from conductor_kernel.events import Event
from record.audit import audited
from record.fold import RunOutline, outline, outline_file

log = logging.getLogger("conductor")


def note_rows(run: RunOutline, notebook: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """The notebook's rows for the notes this run recalled or wrote, where it can be read.

    The transcript holds only ids and scores; the text and the evidence (how a note was
    verified, its outcome, helpful/harmful counts) live in the notebook. A page without
    them is still whole, so a missing or unreadable notebook only leaves them out.
    """
    ids = {str(n.get("id")) for r in run.recalls for n in r.notes if n.get("id")}
    ids |= {i for w in run.notes_written for i in w.note_ids}
    paths = [Path(notebook)] if notebook else [Path(w.notebook) for w in run.notes_written]
    if not paths:
        from lessons.storage.store import default_path

        paths = [default_path()]
    if not ids:
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            if not path.is_file():  # a recorded path may be odd (NUL, too long)
                continue
            from lessons.storage.store import Notebook

            with Notebook(path) as book:
                for note_id in ids - rows.keys():
                    row = book.find_note(note_id)
                    if row is not None:
                        rows[note_id] = dict(row)
        except Exception as exc:  # the page is whole without the notebook's details
            log.warning("could not read notes from %s: %s", path, exc)
    return rows


def known_score(run: RunOutline) -> dict[str, Any] | None:
    """The run's verdict as the page shows it (`conductor.scoring.runs.verdict_of`, the
    field every reader shows); None when it was not scored."""
    from conductor.scoring.runs import verdict_of

    verdict = verdict_of(run)
    if verdict.correct is None:
        return None
    data = verdict.to_dict()
    if run.score is None:  # scored just now: a published run imported before scoring
        data["detail"] = f"{verdict.detail} (scored at export by the {verdict.scorer} rule)"
    return data


def run_html(
    run: RunOutline | Iterable[Event],
    *,
    score: dict[str, Any] | None = None,
    notebook: Path | str | None = None,
    notes: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The page for one run. `score` overrides the run's own (a batch knows it)."""
    if not isinstance(run, RunOutline):
        run = outline(list(run))
    audited(run)
    if notes is None:
        notes = note_rows(run, notebook)
    started_at = ""
    if run.started is not None and run.started.ts:
        started_at = dt.datetime.fromtimestamp(run.started.ts).strftime("%Y-%m-%d %H:%M:%S")
    return render(
        "run.html.j2",
        title=f"Run {run.run_id}",
        run=run,
        score=score if score is not None else known_score(run),
        notes=notes,
        started_at=started_at,
        sandbox_runs=sum(len(c.execs) for c in run.calls),
    )


def write_run_html(
    transcript: Path | str,
    output: Path | str,
    *,
    score: dict[str, Any] | None = None,
    notebook: Path | str | None = None,
) -> Path:
    """Export one transcript file to `output`; returns the path written."""
    page = run_html(outline_file(transcript), score=score, notebook=notebook)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
