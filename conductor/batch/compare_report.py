"""A comparison's report: each method's figures, and each against meta-prompting.

Computed from results.jsonl alone (the latest record of every pair), so a report written
after a resume covers the whole comparison. Per method: the batch report's figures
(`report.summarize`: accuracy, rounds, tokens, cost, seconds per item, failures) plus
the accuracy's 95% Wilson interval and the model calls per item. Against meta-prompting
with Python, on the items both finished and scored: the paired difference with its 95%
interval, the flips (right→wrong: meta-prompting right, the method wrong; wrong→right:
the other way), and the exact McNemar test on them.

A method none of whose answers was graded (every run declined, failed or hit a limit)
measured nothing about the method: it gets no interval, no difference and no test, and
says why instead (`not_measured`, with the plain batch's diagnosis when there is one).
"""

from __future__ import annotations

from typing import Any

from conductor.batch.ablation import paired_change
from conductor.batch.compare import Comparison, pair_id
from conductor.batch.records import ItemRecord, is_scored
from conductor.batch.report import diagnose, summarize
from conductor.methods import label
from conductor_kernel.stats import mcnemar_exact, wilson_interval
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible_line

REPORT_VERSION = 1
NOTEBOOK_OFF = "off for every method: the comparison measures the methods"
NOTEBOOK_ON = "on for every method, as configured (--with-notebook)"


def correct(record: ItemRecord | None) -> bool | None:
    """Right or wrong for a finished, scored record; None otherwise."""
    if record is None or not record.get("final") or not is_scored(record):
        return None
    return bool((record.get("score") or {}).get("correct"))


def paired_with(reference: list[bool | None], method: list[bool | None]) -> dict[str, Any]:
    """The method against the reference on the items both have a verdict for."""
    both = [
        (r, m) for r, m in zip(reference, method, strict=True) if r is not None and m is not None
    ]
    ref = [r for r, _ in both]
    ours = [m for _, m in both]
    n = len(both)
    change = paired_change(ours, ref) if n else None
    wrong_to_right = sum(1 for r, m in both if m and not r)
    right_to_wrong = sum(1 for r, m in both if r and not m)
    return {
        "items": n,
        "method_correct": sum(ours),
        "reference_correct": sum(ref),
        "difference_points": round(100 * change["change"], 2) if change else None,
        "ci95_points": [round(100 * x, 2) for x in change["ci95"]] if change else None,
        "right_to_wrong": right_to_wrong,
        "wrong_to_right": wrong_to_right,
        "both_right": sum(1 for r, m in both if r and m),
        "both_wrong": sum(1 for r, m in both if not r and not m),
        "mcnemar_p": mcnemar_exact(wrong_to_right, right_to_wrong),
    }


def method_figures(records: list[ItemRecord], total: int, *, model: str = "") -> dict[str, Any]:
    """The batch report's figures for one method's records, with the Wilson interval
    and the model calls per item; `not_measured` says why there is no interval."""
    figures = summarize(records, total=total, header={})
    for key in ("format_version", "notebook", "session", "failure_examples"):
        figures.pop(key, None)
    figures["diagnosis"] = diagnose([r for r in records if r.get("final")], model=model)
    figures["not_measured"] = not_measured(figures)
    acc = figures["accuracy"]
    low, high = wilson_interval(acc["correct"], acc["scored"])
    measured = acc["scored"] and figures["not_measured"] is None
    acc["wilson95"] = [round(100 * low, 2), round(100 * high, 2)] if measured else None
    finished = figures["items"]["finished"]
    calls = figures["tokens"]["model_calls"]
    figures["model_calls_per_item"] = round(calls / finished, 3) if finished else None
    return figures


def not_measured(figures: dict[str, Any]) -> str | None:
    """Why a method's figures measure nothing of it (None when some answer was graded):
    a run that declined or failed is graded wrong, which says nothing of the method."""
    finished = figures["items"]["finished"]
    if figures["accuracy"]["answers_scored"]:
        return None
    if not finished:
        return "none of its runs has finished yet"
    if figures.get("diagnosis"):
        return str(figures["diagnosis"])
    kinds = ", ".join(
        f"{kind.replace('_', ' ')} {n}" for kind, n in figures["failures"].items() if n
    )
    return (
        f"none of its {finished} finished runs gave an answer that could be graded"
        + (f" ({kinds})" if kinds else "")
        + "."
    )


def unmeasured_pair(reference: str, method: str, figures: dict[str, Any]) -> dict[str, Any]:
    """The paired entry of a method that cannot be compared with the reference."""
    who = reference if figures[reference]["not_measured"] else method
    return {
        "items": 0,
        "difference_points": None,
        "ci95_points": None,
        "mcnemar_p": None,
        "not_measured": f"{label(who)} has no graded answer, so there is nothing to compare",
    }


def comparison_report(
    comparison: Comparison,
    latest: dict[str, ItemRecord],
    *,
    header: dict[str, Any],
    notebook: dict[str, Any] | None = None,
    session: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report object (report.json of a comparison folder)."""
    items = comparison.items
    by_method: dict[str, list[ItemRecord | None]] = {
        m: [latest.get(pair_id(i.id, m)) for i in items] for m in comparison.methods
    }
    model = str(header.get("model") or "")
    figures = {
        m: method_figures([r for r in recs if r is not None], len(items), model=model)
        for m, recs in by_method.items()
    }
    reference = comparison.reference
    paired: dict[str, Any] = {}
    if reference is not None:
        ref = [correct(r) for r in by_method[reference]]
        for m, recs in by_method.items():
            if m == reference:
                continue
            if figures[reference]["not_measured"] or figures[m]["not_measured"]:
                paired[m] = unmeasured_pair(reference, m, figures)
            else:
                paired[m] = paired_with(ref, [correct(r) for r in recs])
    finished_by_all = sum(
        1 for n in range(len(items)) if all(correct(by_method[m][n]) is not None for m in by_method)
    )
    return {
        "format_version": REPORT_VERSION,
        "kind": "comparison",
        **header,
        "methods": comparison.methods,
        "reference": reference,
        "items": {
            "total": len(items),
            "pairs": len(items) * len(comparison.methods),
            "pairs_finished": sum(f["items"]["finished"] for f in figures.values()),
            "scored_by_every_method": finished_by_all,
        },
        "notebook": notebook or {"recall": False, "learn": False, "policy": NOTEBOOK_OFF},
        "by_method": figures,
        "paired": paired,
        "diagnosis": comparison_diagnosis(figures),
        "session": session,
    }


def comparison_diagnosis(figures: dict[str, Any]) -> str | None:
    """One sentence when some method measured nothing: which, and the first one's why."""
    empty = [m for m, f in figures.items() if f["not_measured"]]
    if not empty:
        return None
    names = ", ".join(label(m) for m in empty)
    first = figures[empty[0]]["not_measured"]
    if len(empty) == len(figures):
        return visible_line(f"No method has a graded answer: {first}")
    return visible_line(f"{names}: no graded answer, so no figures for them; {first}")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else "<0.001"


def comparison_rows(report: dict[str, Any]) -> list[dict[str, str]]:
    """One row of cells per method, for every renderer (Markdown, HTML, terminal)."""
    rows = []
    for m in report["methods"]:
        f = report["by_method"][m]
        acc = f["accuracy"]
        ci = acc.get("wilson95")
        pair = report["paired"].get(m)
        tokens = f["tokens"]
        finished = f["items"]["finished"]
        accuracy = f"{_pct(acc['percent'])} ({acc['correct']}/{acc['scored']})"
        if f.get("not_measured"):
            accuracy = "not measured"
        if ci:
            accuracy += f" [{ci[0]:.1f}, {ci[1]:.1f}]"
        if pair and pair.get("not_measured"):
            versus, flips, p = "not measured", "-", "-"
        elif pair and pair["items"]:
            low, high = pair["ci95_points"]
            versus = (
                f"{pair['difference_points']:+.1f} [{low:+.1f}, {high:+.1f}] on {pair['items']}"
            )
            flips = f"{pair['right_to_wrong']} / {pair['wrong_to_right']}"
            p = _p(pair["mcnemar_p"])
        elif m == report.get("reference"):
            versus, flips, p = "reference", "", ""
        else:
            versus, flips, p = "-", "-", "-"
        rows.append(
            {
                "method": label(m),
                "accuracy % (95% CI)": accuracy,
                "Δ vs Meta + Python (95% CI)": versus,
                "McNemar p": p,
                "right→wrong / wrong→right": flips,
                "tokens in / out per item": (
                    f"{tokens['input'] / finished:,.0f} / {tokens['output'] / finished:,.0f}"
                    if finished
                    else "-"
                ),
                "cost": f"${f['cost_usd']:.4f}",
                "rounds": _num(f["rounds"]["mean"]),
                "s / item": _num(f["item_seconds"]["mean"]),
                "model calls / item": _num(f["model_calls_per_item"], 2),
                "finished": f"{finished}/{f['items']['total']}",
            }
        )
    return rows


def render_comparison(report: dict[str, Any]) -> str:
    """The comparison for people, as Markdown (report.md, and the terminal)."""
    rows = comparison_rows(report)
    columns = list(rows[0]) if rows else []
    notebook = report.get("notebook") or {}
    lines = [
        f"# Comparison {report.get('batch_id', '')}",
        "",
        f"Task **{visible_line(str(report.get('task', '')))}** from "
        f"`{visible_line(str(report.get('task_file', '')))}`, model "
        f"`{visible_line(str(report.get('model', '')))}`: {report['items']['total']} items "
        f"under {plural(len(report['methods']), 'method')}, the same items in the same order "
        f"({report['items']['pairs_finished']} of {report['items']['pairs']} runs finished; "
        f"{report['items']['scored_by_every_method']} items scored under every method).",
        "",
        f"Recall and learning: {notebook.get('policy', NOTEBOOK_OFF)}.",
        "",
    ]
    if columns:
        lines += [
            "| " + " | ".join(columns) + " |",
            "| --- |" + " ---: |" * (len(columns) - 1),
        ]
        lines += ["| " + " | ".join(row[c] for c in columns) + " |" for row in rows]
    if report.get("reference") is None:
        lines += [
            "",
            "Meta-prompting with Python is not among the methods, so no method is paired "
            "against it (add `meta` to --methods: only its runs are added).",
        ]
    lines += [
        "",
        "Accuracy is correct over scored items, with its 95% Wilson interval. Δ is the "
        "method's accuracy minus meta-prompting's (with Python) on the items both were "
        "scored on, in points, with a 95% interval from the paired differences; "
        "right→wrong counts items meta-prompting got right and the method wrong, "
        "wrong→right the reverse, and McNemar p is the exact two-sided test on those flips. "
        "Tokens, rounds, seconds and model calls are means over the method's finished items.",
    ]
    empty = [m for m in report["methods"] if report["by_method"][m].get("not_measured")]
    if empty:
        lines += ["", "## Not measured", ""]
        lines += [f"- {label(m)}: {report['by_method'][m]['not_measured']}" for m in empty]
    failures = {
        m: {k: v for k, v in report["by_method"][m]["failures"].items() if v}
        for m in report["methods"]
    }
    if any(failures.values()):
        lines += ["", "## Failures", ""]
        for m, kinds in failures.items():
            if kinds:
                text = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
                lines.append(f"- {label(m)}: {text}")
    session = report.get("session") or {}
    if session:
        lines += [
            "",
            "## This session",
            "",
            f"Ran {plural(session.get('ran', 0), 'run')} ({session.get('finished', 0)} finished) in "
            f"{session.get('wall_s', 0):.1f} s at concurrency {session.get('concurrency')}."
            + (f" Stopped: {session['stopped']}." if session.get("stopped") else ""),
        ]
    return "\n".join(lines) + "\n"
