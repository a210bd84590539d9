"""A comparison for a terminal: one line per method within 80 columns, and each
method's accuracy so far for the progress line.

The wide table (tokens, cost, rounds, time, the difference's interval and the flips)
is report.md's and the HTML page's; here a method that measured nothing says why in a
sentence below the table instead of showing figures.
"""

from __future__ import annotations

import textwrap
import threading
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from conductor.batch.records import ItemRecord, is_scored
from conductor.methods import label
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible_line

WIDTH = 80
GAP = "  "
COLUMNS = ("method", "accuracy", "95% CI", "Δ vs M+Py", "p", "done")


def _cells(report: dict[str, Any], method: str) -> tuple[str, ...]:
    figures = report["by_method"][method]
    acc = figures["accuracy"]
    done = f"{figures['items']['finished']}/{figures['items']['total']}"
    if figures.get("not_measured"):
        return (label(method), "not measured", "", "", "", done)
    percent = "-" if acc["percent"] is None else f"{acc['percent']:.1f}%"
    ci = acc.get("wilson95")
    interval = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
    pair = report["paired"].get(method)
    if method == report.get("reference"):
        versus, p = "reference", ""
    elif pair is None or pair.get("not_measured") or not pair.get("items"):
        versus, p = "-", ""
    else:
        versus = f"{pair['difference_points']:+.1f}"
        value = pair["mcnemar_p"]
        p = f"{value:.2g}" if value >= 0.001 else "<.001"
    return (
        label(method),
        f"{percent} ({acc['correct']}/{acc['scored']})",
        interval,
        versus,
        p,
        done,
    )


def terminal_text(report: dict[str, Any], *, width: int = WIDTH) -> str:
    """The comparison in at most `width` columns (a sentence may wrap, a row never)."""
    rows = [COLUMNS, *(_cells(report, m) for m in report["methods"])]
    sizes = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    keep = list(range(len(COLUMNS)))
    # Too wide (many items, a long method name): the interval goes first, then p.
    for drop in (2, 4):
        if sum(sizes[i] for i in keep) + len(GAP) * (len(keep) - 1) <= width:
            break
        keep.remove(drop)
    lines = [
        GAP.join(
            (row[i].ljust(sizes[i]) if i == 0 else row[i].rjust(sizes[i])) for i in keep
        ).rstrip()[:width]
        for row in rows
    ]
    items = report["items"]

    def para(text: str) -> list[str]:
        return textwrap.wrap(visible_line(text), width=width, subsequent_indent="  ")

    head = (
        f"Comparison {report.get('batch_id', '')}: {report.get('task', '')}, model "
        f"{report.get('model', '')}; {plural(items['total'], 'item')} x {plural(len(report['methods']), 'method')}, "
        f"{items['pairs_finished']}/{items['pairs']} runs finished."
    )
    out = [*para(head), "", *lines]
    # Methods that measured nothing for the same reason say it once (the demo model
    # declines every baseline the same way).
    reasons: dict[str, list[str]] = {}
    for method in report["methods"]:
        why = report["by_method"][method].get("not_measured")
        if why:
            reasons.setdefault(str(why), []).append(label(method))
    for why, names in reasons.items():
        out += ["", *para(f"Not measured, {', '.join(names)}: {why}")]
    failed = [
        f"{label(m)}: " + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in kinds.items() if n)
        for m in report["methods"]
        if not report["by_method"][m].get("not_measured")
        and any((kinds := report["by_method"][m]["failures"]).values())
    ]
    if failed:
        out += ["", *para("Failures: " + "; ".join(failed) + ".")]
    if report.get("reference") is None:
        out += ["", *para("Meta + Python is not among the methods: no Δ (add meta to --methods).")]
    folder = report.get("folder", "")
    out += [
        "",
        *para(
            "Δ is in points against Meta + Python on the items both graded; p is the exact "
            f"McNemar test. Intervals of Δ, flips, tokens, cost and time: {folder}/report.md, "
            f"or `conductor batch-report {report.get('batch_id', '')} --html`."
        ),
    ]
    return "\n".join(out) + "\n"


class MethodTally:
    """Accuracy so far per method, from the records as they arrive (latest per pair)."""

    def __init__(self, methods: list[str]) -> None:
        self.methods = list(methods)
        self._latest: dict[str, ItemRecord] = {}
        # Records arrive from every worker thread of the batch at once.
        self._lock = threading.Lock()

    def seed(self, records: Iterable[ItemRecord]) -> None:
        """The records of earlier sessions, before this one's arrive."""
        for record in records:
            self.add(record)

    def add(self, record: ItemRecord) -> None:
        with self._lock:
            self._latest[str(record.get("item_id"))] = record

    def counts(self) -> dict[str, tuple[int, int, int]]:
        """(correct, scored, answers scored) per method, as the report counts them."""
        tally: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        with self._lock:
            latest = list(self._latest.values())
        for record in latest:
            if not record.get("final") or not is_scored(record):
                continue
            counts = tally[str(record.get("method") or "")]
            counts[0] += bool((record.get("score") or {}).get("correct"))
            counts[1] += 1
            counts[2] += record.get("status") == "answered"
        return {m: (tally[m][0], tally[m][1], tally[m][2]) for m in self.methods}

    def text(self) -> str:
        """`Standard -, 0-CoT 50%, …`: a method with no graded answer yet shows `-`
        (its declines graded wrong would read as an accuracy of the method)."""
        parts = []
        for method, (right, scored, answers) in self.counts().items():
            share = f"{100 * right / scored:.0f}%" if answers else "-"
            parts.append(f"{label(method)} {share}")
        return "accuracy so far: " + ", ".join(parts)
