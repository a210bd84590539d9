"""Small wording helpers shared by the CLI and the TUI (a count's plural is
conductor_kernel/text/counts.py)."""

from __future__ import annotations

from conductor_kernel.interfaces import Usage
from conductor_kernel.text.counts import plural


def tool_tests_line(tools: dict[str, list[int]], status: str) -> str:
    """What learning measured of a run's tools: `tool n1a2b: passed 4 of 4 tests`, and
    the testing's own status when it stopped early or was skipped."""
    parts = []
    for note, (passes, tests) in tools.items():
        measured = f"passed {passes} of {plural(tests, 'test')}" if tests else "not tested yet"
        parts.append(f"tool {note}: {measured}")
    if status and not status.startswith("tested"):
        parts.append(f"testing {status}")
    elif "; stopped" in status:
        parts.append("testing " + status.split("; ", 1)[1])
    return "; ".join(parts)


# How a run's answer was checked, as NotesWritten.verification names it, in words.
VERIFICATION_WORDS = {
    "target": "checked against the known answer",
    "checker": "checked by the task's scorer",
    "tool": "reproduced by a tested tool",
    "independent": "reproduced independently",
    "sandbox-check": "checked by a program in the sandbox",
    "none": "not verified",
    "": "not verified",
}


def verification_words(level: str | None) -> str:
    """`not verified` rather than `none`; an unknown level is shown as it is."""
    return VERIFICATION_WORDS.get(level or "", level or "")


def learning_cost_line(usage: Usage, budget: dict[str, int], reflection: str = "") -> str:
    """What learning's own model calls cost, beside what they were allowed:
    `learning: 1 model call, 812 tokens, $0.0004 (allowed 5 calls, 6,200 tokens)`;
    "" when learning had no model to call and no bound."""
    calls = usage.calls
    tokens = usage.total_tokens + usage.estimated_tokens
    if not (calls or budget):
        if reflection.startswith("skipped: nothing to learn"):
            return "learning: no model calls (" + reflection.removeprefix("skipped: ") + ")"
        return ""
    estimated = " estimated" if usage.estimated_calls else ""
    line = (
        f"learning: {plural(calls, 'model call')}, {tokens:,} tokens{estimated}, "
        f"${usage.cost_usd:.4f}"
    )
    if budget:
        line += (
            f" (allowed {plural(_count(budget.get('calls')), 'call')}, "
            f"{_count(budget.get('tokens')):,} tokens)"
        )
    return line


def _count(value: object) -> int:
    """A count read from a transcript, 0 when it is not one (a hand-edited file)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# Observations whose message was said to Expert Python, not to the meta model (a
# program sent back: conductor_kernel/run/expert_call.py).
TOLD_TO_EXPERT = frozenset({"program_fails_check"})


def observation_line(reason: str, message: str) -> str:
    """An observation as the terminal and the TUI show it: who was told, why, and what."""
    whom = "Expert Python" if reason in TOLD_TO_EXPERT else "the meta model"
    return f"note to {whom} ({reason}): {message}"
