"""Two runs as one self-contained HTML page, aligned and with differences highlighted.

`write_diff_page` is the entry point for other tools (the notebook's ablation harness
writes one page per flipped item with it).
"""

from __future__ import annotations

import os
from pathlib import Path

from conductor.export.diff import score_line
from conductor.export.html.page import render
from conductor.export.terminal import usage_line
from record.fold import RunOutline, outline_file
from transcripts.run_diff import RunDiff, diff_runs


def _totals(run: RunOutline) -> list[str]:
    return [
        run.started.model if run.started else "",
        run.status,
        score_line(run),  # the verdict and why, as the terminal's diff says it
        str(len(run.rounds)),
        str(len(run.calls)),
        str(sum(len(c.execs) for c in run.calls)),
        usage_line(run.usage),
        f"{run.finished.duration_s:.1f} s" if run.finished else "-",
        " ".join(run.audit.badges) or "-",
    ]


LABELS = (
    "model",
    "status",
    "score",
    "rounds",
    "expert calls",
    "sandbox runs",
    "usage",
    "time",
    "findings",
)


def diff_html(diff: RunDiff, *, title: str | None = None, links: tuple[str, str] = ("", "")) -> str:
    """The page; `links` are where each run's own page is (relative or absolute)."""
    totals = list(zip(LABELS, _totals(diff.left), _totals(diff.right), strict=True))
    return render(
        "diff.html.j2",
        title=title or f"{diff.left.run_id} vs {diff.right.run_id}",
        diff=diff,
        totals=totals,
        links={"left": links[0] or "#", "right": links[1] or "#"},
    )


def write_diff_page(
    left: Path | str,
    right: Path | str,
    output: Path | str,
    *,
    title: str | None = None,
    run_pages: tuple[Path | str | None, Path | str | None] = (None, None),
) -> Path:
    """Diff two transcript files into `output` (one HTML file); returns its path.

    `run_pages`, when given, are the runs' own exported pages: the diff links to them
    by a path relative to `output`.
    """
    out = Path(output)
    links = tuple(os.path.relpath(page, out.parent) if page else "" for page in run_pages)
    diff = diff_runs(outline_file(left), outline_file(right))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(diff_html(diff, title=title, links=links), encoding="utf-8")  # type: ignore[arg-type]
    return out
