"""Terminal reports that quote models: the audit's findings table and a batch's report
(drawn as Markdown on a terminal) show control characters visible and make no terminal
hyperlink (OSC 8) of a model's Markdown link."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from conductor_kernel.text.display import UNSAFE
from record.audit import AuditReport, Finding

HOSTILE = [
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1b[1A\x1b[2K\u2714 verified",
    "a\u202eb\x00\x9b31m",
    "[/x] [bold]b[/]",
]
OSC8 = "\x1b]8;"


def _terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Every Console made from now on writes to one buffer as if to a colour terminal."""
    out = io.StringIO()
    original = Console.__init__

    def init(self, *args, **kwargs) -> None:
        kwargs.update(file=out, force_terminal=True, width=200, color_system="truecolor")
        original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "__init__", init)
    return out


def _strip_sgr(text: str) -> str:
    """rich's own colour codes (ESC [ ... m) are ours; anything else is not."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.parametrize("text", HOSTILE)
def test_audit_findings_table_shows_model_text_visible(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conductor.cli.audit import _print
    from record.correctness import Correctness

    report = AuditReport(run_id=f"run-{text}", task=f"task-{text}")
    report.findings.append(
        Finding("hidden_context", f"Expert {text} was told 'the above'", round=1)
    )
    out = _terminal(monkeypatch)
    verdict = Correctness(False, scorer="exact", detail=f"expected {text}")
    _print([(report, verdict)], {f"task-{text}": {"runs": 1}}, details=True)
    shown = _strip_sgr(out.getvalue())
    assert not UNSAFE.search(shown.replace("\n", "")), repr(shown)


@pytest.mark.parametrize("text", [*HOSTILE, "[click](javascript:alert(1)) [x](https://e.x)"])
def test_batch_report_on_a_terminal_shows_model_text_visible_and_links_inert(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conductor.cli.batch_shared import print_report

    example = {"item_id": "i1", "line": 1, "kind": "error", "message": text}
    report = {
        "batch_id": "b",
        "task": "t",
        "task_file": "f.jsonl",
        "model": "m",
        "items": {"finished": 1, "total": 1, "remaining": 0, "unscored": 0},
        "accuracy": {"percent": None, "correct": 0, "scored": 0, "paper_rule_percent": None},
        "rounds": {"mean": 1, "median": 1, "max": 1},
        "tokens": {"input": 1, "output": 1, "cache_read": 0},
        "cost_usd": 0.0,
        "expert_calls": 0,
        "sandbox_runs": 0,
        "item_seconds": {"median": 1.0, "p90": 1.0},
        "failures": {"error": 1},
        "failure_examples": [example],
        "notebook": None,
    }
    out = _terminal(monkeypatch)
    print_report(report, as_json=False)
    shown = out.getvalue()
    assert OSC8 not in shown, repr(shown)
    assert not UNSAFE.search(_strip_sgr(shown).replace("\n", "")), repr(shown)
