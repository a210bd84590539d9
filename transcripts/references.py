"""Which run a user's reference names: a run id, a unique prefix of one, or a
transcript's path. The one answer for `runs show|export|diff`, `runs audit RUN` and the
MCP server's `run_show` (which takes ids only: a client must not name files here).
Batches are named through conductor/batch/references.py.
"""

from __future__ import annotations

from pathlib import Path

from conductor_kernel.errors import UserFacingError
from record.home import runs_dir
from transcripts.index import RunIndex
from transcripts.runs_schema import RunRecord

NO_RUN = "`conductor runs list` shows run ids"


def indexed_run(ref: str) -> RunRecord:
    """The run runs.db holds under this id or unique prefix of one."""
    row = RunIndex().get(ref)
    if row is None:
        raise UserFacingError(f"no run matches {ref!r} (or the prefix is ambiguous); {NO_RUN}.")
    return row


def transcript_of(ref: str, *, files: bool = True) -> Path:
    """The transcript `ref` names: a `.jsonl` file that exists (where `files`), an
    indexed run's, or one in the runs folder that runs.db could not index (its first line
    cut or damaged: still the run's record, and its reader says what is wrong)."""
    path = Path(ref)
    if files and path.suffix == ".jsonl" and path.is_file():
        return path
    row = RunIndex().get(ref)
    if row is not None and row["path"]:
        return Path(row["path"])
    unindexed = runs_dir() / f"{ref}.jsonl"
    if "/" not in ref and "\\" not in ref and unindexed.is_file():
        return unindexed
    what = "a run id or a transcript file" if files else "a run id"
    raise UserFacingError(
        f"no run matches {ref!r} (or the prefix is ambiguous); give {what} ({NO_RUN})."
    )


def paired_run(ref: str) -> str:
    """The id of the run paired with `ref` on its question: the newest other run of the
    same task that asked it (`runs diff RUN`)."""
    index = RunIndex()
    row = index.get(ref)
    if row is None:
        raise UserFacingError(
            f"no indexed run matches {ref!r}; give both runs to compare a transcript file."
        )
    pairs = index.counterparts(row["run_id"])
    if not pairs:
        raise UserFacingError(
            f"no other run of {row['task'] or 'this task'} asked the same question as "
            f"{row['run_id']}; give the second run to compare."
        )
    return str(pairs[0]["run_id"])
