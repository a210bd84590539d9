"""Benchmark: text that arrives as keystrokes, in the TUI's text fields.

A terminal without bracketed paste, or a tool that types, sends one key event per
character. We post the events as the terminal driver does (all of a burst before the
first is handled) into a headless app holding one field, and time until the whole text
is in the field:

* `typed`: the TUI's field (`tui/widgets/typed_input.py`), at 4 KB and at 21 KB;
* baseline `textual Input`: Textual's own `Input`, the same keys, at 4 KB (it grows
  faster than linearly: 13 s at 8 KB on this machine, so 21 KB is not waited for);
* baseline `paste`: the same 21 KB as one bracketed paste.

Prints a table, then one JSON object (the figures) as its last line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.widgets.typing_timer import seconds_to_arrive

TEXT = ("make 24 from 4 7 8 8 using + - * / and each number once; " * 400)[: 21 * 1024]


async def measure() -> dict[str, float]:
    small = TEXT[:4096]
    return {
        "typed_4k_s": await seconds_to_arrive("typed", small),
        "textual_input_4k_s": await seconds_to_arrive("textual", small),
        "typed_21k_s": await seconds_to_arrive("typed", TEXT),
        "paste_21k_s": await seconds_to_arrive("typed", TEXT, paste=True),
    }


def main() -> None:
    figures = asyncio.run(measure())
    print(f"{'what':<34} {'seconds':>8}")
    rows = [
        ("typed, 4 KB (ours)", "typed_4k_s"),
        ("typed, 4 KB (baseline: Input)", "textual_input_4k_s"),
        ("typed, 21 KB (ours)", "typed_21k_s"),
        ("pasted, 21 KB (baseline: paste)", "paste_21k_s"),
    ]
    for label, key in rows:
        print(f"{label:<34} {figures[key]:>8.2f}")
    figures["speedup_4k"] = figures["textual_input_4k_s"] / max(figures["typed_4k_s"], 1e-9)
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
