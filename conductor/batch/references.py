"""Which batch a reference names: the one answer for every command that takes one.

A reference is a batch's folder, its `results.jsonl`, its batch id, or a prefix of the
id that only one batch under the home's `batches/` has (`runs export --inspect`,
`batch-report`, `score` and the HTML export all take the same forms). A reference that
names no batch is left to the caller (it may be a run); one that several batches share
is an error that lists them.
"""

from __future__ import annotations

from pathlib import Path

from conductor.batch.store import MANIFEST_FILE, RESULTS_FILE, batches_dir
from conductor_kernel.errors import UserFacingError

CANDIDATES_SHOWN = 5


def find_batch(ref: str | Path) -> Path | None:
    """The batch folder `ref` names, or None when it names none; several batches
    sharing the prefix is an error naming them."""
    path = Path(ref)
    if path.name == RESULTS_FILE and (path.parent / MANIFEST_FILE).is_file():
        return path.parent
    if (path / RESULTS_FILE).exists() or (path / MANIFEST_FILE).exists():
        return path
    text = str(ref)
    if not text or "/" in text or text.startswith(".") or path.exists():
        return None  # a path that is no batch (a file to read), never a prefix to glob
    root = batches_dir()
    if not root.is_dir():
        return None
    matches = sorted(p for p in root.glob(f"{_glob_safe(text)}*") if _is_batch(p))
    exact = [p for p in matches if p.name == text]
    if exact or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        return None
    known = ", ".join(p.name for p in matches[:CANDIDATES_SHOWN])
    more = f" and {len(matches) - CANDIDATES_SHOWN} more" if len(matches) > CANDIDATES_SHOWN else ""
    raise UserFacingError(
        f"{len(matches)} batches start with {text!r} ({known}{more}); give more of the "
        "batch id, or its folder."
    )


def require_batch(ref: str | Path) -> Path:
    """The batch folder `ref` names; an error that says what to give when it names none."""
    found = find_batch(ref)
    if found is None:
        raise UserFacingError(
            f"no batch matches {str(ref)!r} under {batches_dir()}; give the batch id "
            "printed by `conductor batch` (or a prefix of it), or its folder."
        )
    return found


def _is_batch(path: Path) -> bool:
    return path.is_dir() and ((path / RESULTS_FILE).exists() or (path / MANIFEST_FILE).exists())


def _glob_safe(text: str) -> str:
    """`text` with glob's special characters matched literally."""
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)
