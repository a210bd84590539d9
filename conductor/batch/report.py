"""What a batch's results add up to: the record shape, running totals, the final report.

The report is computed from results.jsonl alone (every session's records, the latest
per item), so a report written after a resume covers the whole batch, not just the
last session. It is written as report.json (one object, `format_version`ed) and as
report.md, the same figures for people.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from conductor.batch.records import (
    ERROR_CAUSES,
    FAILURE_KINDS,
    ItemRecord,
    failure_kind,
    is_scored,
)
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible_line

log = logging.getLogger("conductor.batch")

REPORT_VERSION = 1
MAX_EXAMPLES = 10


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "p90": None, "max": None}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {
        "mean": round(statistics.fmean(ordered), 3),
        "median": round(statistics.median(ordered), 3),
        "p90": round(p90, 3),
        "max": round(ordered[-1], 3),
    }


def _percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def peak_rss_mb() -> float:
    """This process's peak resident memory (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def summarize(
    records: Iterable[ItemRecord],
    *,
    total: int,
    header: dict[str, Any],
    session: dict[str, Any] | None = None,
    notebook: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report object. `records` are the latest per item in scope; `total` is how
    many items are in scope (finished or not)."""
    latest = list(records)
    final = [r for r in latest if r.get("final")]
    scored = [r for r in final if is_scored(r)]
    correct = sum(bool((r.get("score") or {}).get("correct")) for r in scored)
    paper = [r for r in scored if (r.get("score") or {}).get("paper_correct") is not None]
    paper_correct = sum(bool((r.get("score") or {}).get("paper_correct")) for r in paper)
    kinds = Counter(k for r in latest if (k := failure_kind(r)) is not None)
    usage: defaultdict[str, float] = defaultdict(float)  # token counts and cost_usd
    for r in final:
        for key, value in (r.get("usage") or {}).items():
            if isinstance(value, int | float):
                usage[key] += value
    # Learning's own calls, part of each item's usage and reported beside the runs'.
    learning: defaultdict[str, float] = defaultdict(float)
    for r in final:
        for key, value in (r.get("learning_usage") or {}).items():
            if isinstance(value, int | float):
                learning[key] += value
    causes = Counter(error_cause(r) for r in final if r.get("status") == "error")
    reasons = {
        kind: next((str(r.get("reason") or "") for r in final if r.get("status") == kind), None)
        for kind in ("declined", "no_answer")
    }
    answers = sum(r.get("status") == "answered" for r in scored)
    examples = [
        {
            "item_id": r.get("item_id"),
            "line": r.get("line"),
            "kind": failure_kind(r),
            "message": _failure_message(r),
        }
        for r in latest
        if failure_kind(r) in ("error", "scorer", "interrupted")
    ][:MAX_EXAMPLES]
    return {
        "format_version": REPORT_VERSION,
        **header,
        "items": {
            "total": total,
            "finished": len(final),
            "remaining": total - len(final),
            "scored": len(scored),
            # No target for a scorer that needs one: neither a grade nor a failure.
            "unscored": sum(
                not is_scored(r) and failure_kind(r) not in ("error", "scorer") for r in final
            ),
        },
        "accuracy": {
            "correct": correct,
            "scored": len(scored),
            "percent": _percent(correct, len(scored)),
            "paper_rule_correct": paper_correct if paper else None,
            "paper_rule_percent": _percent(paper_correct, len(paper)),
            # Scored items whose run gave an answer (the rest are declined, no answer
            # or limit, graded wrong): none at all means nothing of the model was graded.
            "answers_scored": answers,
        },
        "rounds": _spread([float(r.get("rounds", 0)) for r in final]),
        "tokens": {
            "input": int(usage["input_tokens"]),
            "output": int(usage["output_tokens"]),
            "cache_read": int(usage["cache_read_tokens"]),
            "total": int(usage["input_tokens"] + usage["output_tokens"]),
            "model_calls": int(usage["calls"]),
        },
        "cost_usd": round(float(usage["cost_usd"]), 6),
        "runs_cost_usd": round(float(usage["cost_usd"] - learning["cost_usd"]), 6),
        "learning": {
            "model_calls": int(learning["calls"]),
            "tokens": int(
                learning["input_tokens"] + learning["output_tokens"] + learning["estimated_tokens"]
            ),
            "cost_usd": round(float(learning["cost_usd"]), 6),
        },
        "expert_calls": sum(int(r.get("expert_calls", 0)) for r in final),
        "sandbox_runs": sum(int(r.get("sandbox_runs", 0)) for r in final),
        "item_seconds": _spread([float(r.get("duration_s", 0.0)) for r in final]),
        "failures": {kind: kinds.get(kind, 0) for kind in FAILURE_KINDS},
        "errors_by_cause": {cause: n for cause, n in causes.most_common()},
        "first_reasons": {kind: reason for kind, reason in reasons.items() if reason is not None},
        "failure_examples": examples,
        "diagnosis": diagnose(final, model=str(header.get("model") or "")),
        "notebook": notebook,
        "session": session,
    }


def error_cause(record: ItemRecord) -> str:
    """The cause of an `error` item (older records name none: the runner's)."""
    cause = str((record.get("error") or {}).get("cause") or "runner")
    return cause if cause in ERROR_CAUSES else "runner"


def _failing_way(record: ItemRecord) -> str | None:
    """How an item failed, finely enough that "most failed the same way" means one fix."""
    kind = failure_kind(record)
    if kind == "error":
        return f"error:{error_cause(record)}"
    return kind


_FIXES = {
    "error:sandbox": "check the sandbox (`conductor sandbox doctor`), and on a busy machine "
    "lower --concurrency; then re-run with --retry-errors",
    "error:model": "check that the model server answers (its URL, key and model name), "
    "then re-run with --retry-errors",
    "error:storage": "free the data directory (another program holding runs.db, a full "
    "disk), then re-run with --retry-errors",
    "error:config": "fix the configuration the message names, then re-run the command",
    "error:runner": "see batch.log for the failure, then re-run with --retry-errors",
    "limit": "raise the limit the runs hit (--max-rounds, --max-tokens, --max-cost)",
    "no_answer": "check that the model follows the answer format (a `>> FINAL ANSWER:` "
    "block); a small model or a wrong chat template often does not",
    "declined": "use a model that can do this task (--model)",
}


def diagnose(final: list[ItemRecord], *, model: str) -> str | None:
    """One sentence when most finished items failed the same way: how, and the fix."""
    ways = Counter(w for r in final if (w := _failing_way(r)) not in (None, "interrupted"))
    if not ways:
        return None
    way, count = ways.most_common(1)[0]
    if 2 * count <= len(final):
        return None
    first = next(r for r in final if _failing_way(r) == way)
    share = f"{count} of {len(final)} finished items"
    fix = _FIXES.get(way, "")
    if way.startswith("error:"):
        what = f"ended in a {way[6:]} error ({_failure_message(first)})"
    elif way == "declined":
        what = f"were declined by the model `{model}` ({first.get('reason') or 'no reason'})"
        if model == "demo":
            from experts.demo import DEMO_NOTICE

            fix = DEMO_NOTICE.strip("()").rstrip(".")
    elif way == "no_answer":
        what = f"ended without an answer ({first.get('reason') or 'no reason given'})"
    elif way == "limit":
        what = "hit a limit before answering"
    else:
        what = f"failed in the scorer ({_failure_message(first)})"
        fix = "check the task's scorer and targets"
    return visible_line(f"{share} {what}: {fix}.")


def _failure_message(record: ItemRecord) -> str:
    if not record.get("final"):
        return "interrupted; runs again on resume"
    if record.get("error"):
        error = record["error"] or {}
        return f"{error.get('kind')}: {error.get('message')}"
    return str((record.get("score") or {}).get("error", ""))


def render_markdown(report: dict[str, Any]) -> str:
    """The report for people: key figures, failures, the notebook before and after."""
    items, acc = report["items"], report["accuracy"]
    tokens, rounds = report["tokens"], report["rounds"]
    pct = "n/a" if acc["percent"] is None else f"{acc['percent']:.1f}%"
    lines = [
        f"# Batch {report.get('batch_id', '')}",
        "",
        f"Task **{report.get('task', '')}** from `{report.get('task_file', '')}`, "
        f"model `{report.get('model', '')}`.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| items finished | {items['finished']} of {items['total']} "
        f"({items['remaining']} remaining) |",
        f"| accuracy | {pct} ({acc['correct']} of {acc['scored']} scored; "
        f"{items['unscored']} unscored) |",
    ]
    if acc["paper_rule_percent"] is not None:
        lines.append(f"| accuracy by the paper's rule | {acc['paper_rule_percent']:.1f}% |")
    lines += [
        f"| rounds (mean / median / max) | {_num(rounds['mean'])} / {_num(rounds['median'])} "
        f"/ {_num(rounds['max'])} |",
        f"| tokens (input / output) | {tokens['input']:,} / {tokens['output']:,} "
        f"({tokens['cache_read']:,} input read from cache) |",
        f"| cost | ${report['cost_usd']:.4f}{_cost_split(report)} |",
        f"| expert calls / sandbox runs | {report['expert_calls']} / {report['sandbox_runs']} |",
        f"| seconds per item (median / p90) | {_num(report['item_seconds']['median'])} / "
        f"{_num(report['item_seconds']['p90'])} |",
        "",
        "## Failures",
        "",
        *([f"**{report['diagnosis']}**", ""] if report.get("diagnosis") else []),
        "| kind | items |",
        "| --- | --- |",
        *(f"| {kind} | {count} |" for kind, count in report["failures"].items()),
    ]
    causes = report.get("errors_by_cause") or {}
    if causes:
        listed = ", ".join(f"{cause} {n}" for cause, n in causes.items())
        lines += [
            "",
            f"Errors by cause (not in accuracy; --retry-errors runs them again): {listed}.",
        ]
    for kind, reason in (report.get("first_reasons") or {}).items():
        label = kind.replace("_", " ")
        lines += ["", f"First {label} reason: {visible_line(str(reason))}"]
    if report["failure_examples"]:
        lines += ["", "Examples:", ""]
        # Item ids come from the task file and messages may quote a model or a server.
        lines += [
            f"- `{visible_line(str(e['item_id']))}` (line {e['line']}, {e['kind']}): "
            f"{visible_line(str(e['message']))}"
            for e in report["failure_examples"]
        ]
    lines += ["", "## Notebook", ""]
    notebook = report.get("notebook")
    if not notebook:
        lines.append("Not used by this batch.")
    else:
        lines.append(f"`{notebook.get('path', '')}`")
        lines.append("")
        for when in ("before", "after"):
            state = notebook.get(when)
            text = "unknown (its figures could not be read; see the log)"
            if isinstance(state, dict):
                text = _notebook_words(state)
            lines.append(f"- {when}: {text}")
    session = report.get("session") or {}
    if session:
        lines += [
            "",
            "## This session",
            "",
            f"Ran {plural(session.get('ran', 0), 'item')} ({session.get('finished', 0)} finished) in "
            f"{session.get('wall_s', 0):.1f} s at "
            f"concurrency {session.get('concurrency')}; peak memory "
            f"{session.get('peak_rss_mb')} MB."
            + (f" Stopped: {session['stopped']}." if session.get("stopped") else ""),
        ]
    return "\n".join(lines) + "\n"


def _cost_split(report: dict[str, Any]) -> str:
    """The runs' cost beside learning's, when learning made model calls."""
    learning = report.get("learning") or {}
    if not learning.get("model_calls") and not learning.get("tokens"):
        return ""
    return (
        f" (runs ${report.get('runs_cost_usd', 0.0):.4f}; learning "
        f"${learning.get('cost_usd', 0.0):.4f} in {learning.get('model_calls', 0)} model "
        f"calls, {learning.get('tokens', 0):,} tokens)"
    )


def _notebook_words(state: dict[str, Any]) -> str:
    """A notebook's figures in words: `178 notes (code 41, tool 36), 0 retired, ...`."""
    kinds = state.get("by_kind") or {}
    notes = f"{state.get('notes', 0)} notes"
    if isinstance(kinds, dict) and kinds:
        notes += " (" + ", ".join(f"{k} {v}" for k, v in kinds.items()) + ")"
    parts = [notes]
    for key, word in (("retired", "retired"), ("task_types", "task types"),
                      ("runs_learned", "runs learned"), ("recalls", "recalls")):  # fmt: skip
        if key in state:
            parts.append(f"{state[key]} {word}")
    return ", ".join(parts)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def write_report(
    folder: Path,
    report: dict[str, Any],
    *,
    render: Callable[[dict[str, Any]], str] | None = None,
) -> tuple[Path, Path]:
    """report.json and report.md (`render`, default `render_markdown`) in the batch
    folder, each replaced atomically."""
    paths = (folder / "report.json", folder / "report.md")
    markdown = (render or render_markdown)(report)
    texts = (json.dumps(report, indent=2, ensure_ascii=False) + "\n", markdown)
    for path, text in zip(paths, texts, strict=True):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return paths


# The notebook's figures a report shows; the rest (paths, sizes) would only be noise.
_REPORTED = ("notes", "retired", "task_types", "runs_learned", "recalls", "by_kind")


def notebook_state(path: str) -> dict[str, Any] | None:
    """The notebook's figures (notes, task types, runs learned...), or None when they
    cannot be read; never fails the batch."""
    from lessons.storage.stats import notebook_stats

    try:
        state = notebook_stats(path)
    except Exception:  # a report must not fail over the notebook's figures
        log.exception("could not read the notebook's state from %s", path)
        return None
    return {key: state[key] for key in _REPORTED if key in state}
