"""The methods' names, in Table 1's column order: the `method` setting's allowed values.

A leaf that imports nothing of ours, so the settings' declaration (conductor/config/)
can name the methods without importing them: the methods package builds every method
and imports the kernel's run machinery, 40 to 70 ms of each command that reads its
settings (`notebook search` among them).
"""

from __future__ import annotations

from typing import Literal

MethodName = Literal[
    "standard",
    "zero-shot-cot",
    "expert-static",
    "expert-dynamic",
    "multipersona",
    "meta-no-python",
    "meta",
]
