"""The notebook as the application opens it: judging with the application's scorers.

Every notebook the application learns into or recalls from is opened here, so it judges
a run as `conductor score` does. A leaf of its own, outside `conductor.session`: the
notebook's readers (`conductor notebook search`, the MCP tools) would otherwise import
the whole session to open a file.
"""

from __future__ import annotations

from pathlib import Path

from lessons.storage.store import Notebook


def open_notebook(path: Path | str | None = None, *, read_only: bool = False) -> Notebook:
    """The notebook at `path` (the default one when None), judging with this
    application's task scorers; `read_only` for a reader that writes nothing."""
    from conductor.scoring.task_scoring import BuiltinTaskScoring

    return Notebook(path, scoring=BuiltinTaskScoring(), read_only=read_only)
