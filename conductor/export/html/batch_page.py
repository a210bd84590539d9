"""A batch as a folder of self-contained pages (`conductor batch-report BATCH --html`).

`index.html` lists every item (status, score, rounds, tokens, cost, time, answer),
filterable by text and status, each linking to its run's own page in `runs/`. The
pages link to one another by relative paths, so the folder can be zipped and sent.
A comparison of methods (`conductor batch --methods`) gets its side-by-side table on
top, from its report.json, and a method column in the list.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conductor.batch.compare_report import comparison_rows
from conductor.batch.records import ItemRecord
from conductor.batch.store import (
    MANIFEST_FILE,
    RESULTS_FILE,
    ResultsLog,
    safe_name,
)
from conductor.export.html.page import render
from conductor.export.html.run_page import write_run_html
from conductor.methods import label
from conductor_kernel.errors import UserFacingError

STATUSES = ("answered", "no_answer", "limit", "error", "interrupted")


def _row(record: ItemRecord, link: str) -> dict[str, Any]:
    usage = record.get("usage") or {}
    score = record.get("score") or {}
    correct = score.get("correct") if score.get("scored", True) and "error" not in score else None
    status = str(record.get("status") or "") if record.get("final") else "interrupted"
    answer, target = record.get("answer") or "", record.get("target") or ""
    verdict = "" if correct is None else ("correct" if correct else "wrong")
    return {
        "item_id": str(record.get("task_item_id") or record.get("item_id", "")),
        "label": str(record.get("label") or ""),
        "method": label(str(record["method"])) if record.get("method") else "",
        "status": status,
        "status_key": status,
        "score": correct,
        "rounds": int(record.get("rounds") or 0),
        "tokens": int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)),
        "cost": float(usage.get("cost_usd", 0.0)),
        "seconds": float(record.get("duration_s") or 0.0),
        "answer": answer,
        "target": target,
        "link": link,
        "search": " ".join(
            (
                str(record.get("item_id", "")),
                str(record.get("label") or ""),
                status,
                verdict,
                answer,
                target,
            )
        ),
    }


def write_batch_html(batch: Path | str, output: Path | str | None = None) -> Path:
    """Write `index.html` and one page per run under `output` (default: `BATCH/html`);
    returns the index's path."""
    folder = Path(batch)
    out = Path(output) if output else folder / "html"
    records = ResultsLog(folder / RESULTS_FILE).read()
    if not records:
        raise UserFacingError(
            f"{folder} has no finished items yet ({RESULTS_FILE} is empty or missing)."
        )
    manifest: dict[str, Any] = {}
    if (folder / MANIFEST_FILE).exists():
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    identity = manifest.get("identity", manifest)
    rows = []
    for record in sorted(records.values(), key=lambda r: int(r.get("line") or 0)):
        link = ""
        transcript = record.get("transcript")
        if transcript and (folder / transcript).exists() and record.get("run_id"):
            # A file name from the run id, never a path (the id is data read back).
            page = Path("runs") / f"{safe_name(str(record['run_id']), 120)}.html"
            write_run_html(folder / transcript, out / page, score=record.get("score"))
            link = page.as_posix()
        rows.append(_row(record, link))
    statuses = Counter(r["status"] for r in rows)
    comparison = _comparison(folder)
    counts = {
        "answered": statuses.get("answered", 0),
        "scored": sum(r["score"] is not None for r in rows),
        "correct": sum(bool(r["score"]) for r in rows),
        "by_status": dict(statuses.most_common()),
        "tokens": sum(r["tokens"] for r in rows),
        "cost": sum(r["cost"] for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
    }
    index = out / "index.html"
    out.mkdir(parents=True, exist_ok=True)
    index.write_text(
        render(
            "batch.html.j2",
            title=f"Batch {folder.name}",
            header={
                "task": (identity.get("spec") or {}).get("name") or identity.get("task", ""),
                "model": identity.get("model", ""),
            },
            rows=rows,
            comparison=comparison,
            with_method=any(r["method"] for r in rows),
            counts=counts,
            statuses=[*STATUSES, *sorted(set(statuses) - set(STATUSES))],
        ),
        encoding="utf-8",
    )
    return index


def _comparison(folder: Path) -> dict[str, Any] | None:
    """A comparison's side-by-side table from its report.json (None for a plain batch)."""
    try:
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or report.get("kind") != "comparison":
        return None
    rows = comparison_rows(report)
    return {
        "columns": list(rows[0]) if rows else [],
        "rows": rows,
        "policy": (report.get("notebook") or {}).get("policy", ""),
        "counts": report.get("items") or {},
        "not_measured": [
            (label(str(m)), str(f.get("not_measured")))
            for m, f in (report.get("by_method") or {}).items()
            if isinstance(f, dict) and f.get("not_measured")
        ],
    }
