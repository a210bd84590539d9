"""Small wording helpers shared by the CLI and the TUI: counts with the right plural."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 round`, `2 rounds`, `0 rounds`; `many` for irregular plurals (`1 query`, ...)."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


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
