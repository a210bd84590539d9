"""Which heavy libraries a new sandbox preloads: those this process's cells import.

Every sandbox's runner imports the standard library's usual modules before its first
cell, and numpy and sympy too when cells want them: preloaded, a cell that uses sympy
starts in milliseconds instead of paying its import (about a second). But the
preload is paid by every fresh sandbox, whether or not a cell ever imports them, and
a batch starts one per item (and another for each item's after-run checks): on two
cores, 200 demo items whose programs use only `itertools` spent nearly all their
time importing sympy in sandboxes that never touched it.

So the host watches the code it sends (a static read of its import lines; nothing
from inside a sandbox is believed) and a new sandbox preloads a heavy library while a
recent cell of this process imported it, or while too few cells have run to say. A
wrong guess costs time, never isolation: a library not preloaded is imported by the
cell that wants it, as any other module is, and what a fresh sandbox holds is the
same either way (docs/sandbox.md).
"""

from __future__ import annotations

import re
import threading
from collections import deque

# The libraries worth a preload decision: the rest of the runner's list is cheap.
HEAVY = ("numpy", "sympy")
# Until this many cells have run in the process, every heavy library is preloaded (a
# user's first question gets the fast start it always had).
FIRST_CELLS = 4
# A heavy library stays preloaded while one of this many latest cells imported it.
RECENT_CELLS = 32

_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)|import[ \t]+([^\n#;]+))", re.M)


def imported_heavy(code: str) -> frozenset[str]:
    """The heavy libraries `code`'s import lines name (`import numpy as np`, `from
    sympy import ...`, `import os, sympy.abc`); a dynamic import is not seen."""
    found: set[str] = set()
    for match in _IMPORT_LINE.finditer(code):
        names = [match.group(1)] if match.group(1) else match.group(2).split(",")
        for name in names:
            top = name.strip().split(" ")[0].split(".")[0]
            if top in HEAVY:
                found.add(top)
    return frozenset(found)


class ImportDemand:
    """The imports of the latest cells, and from them what a new sandbox preloads."""

    def __init__(self, first_cells: int = FIRST_CELLS, recent_cells: int = RECENT_CELLS) -> None:
        self.first_cells = first_cells
        self._recent: deque[frozenset[str]] = deque(maxlen=recent_cells)
        self._seen = 0
        self._lock = threading.Lock()

    def note(self, code: str) -> None:
        """A cell is about to run `code`."""
        used = imported_heavy(code)
        with self._lock:
            self._recent.append(used)
            self._seen += 1

    def wanted(self) -> tuple[str, ...]:
        """The heavy libraries a sandbox started now should preload."""
        with self._lock:
            if self._seen < self.first_cells:
                return HEAVY
            used = set().union(*self._recent)
        return tuple(name for name in HEAVY if name in used)

    def reset(self) -> None:
        with self._lock:
            self._recent.clear()
            self._seen = 0


# One per process: every backend's sandboxes learn from every cell.
DEMAND = ImportDemand()


def preload_args() -> list[str]:
    """The runner's arguments naming the heavy libraries to preload now."""
    return ["--preload", ",".join(DEMAND.wanted())]
