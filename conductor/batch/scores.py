"""Scoring a batch's results as a published file is scored (conductor/scoring/files.py):
each item's latest final answer, with the batch's own task spec, the item from its task
file and the run's last meta turn (for the paper's rule); an item that ended in a
system error is not graded and counts as unscored. A comparison gets a tally per method.
"""

from __future__ import annotations

import json
from pathlib import Path

from conductor.scoring import score
from conductor.scoring.files import FileScore, last_meta_turn
from conductor.tasks.files import TaskItem, read_task_file
from conductor.tasks.specs import TaskSpec
from conductor_kernel.errors import UserFacingError
from conductor_kernel.interfaces import Sandbox


def batch_results(path: str | Path) -> Path | None:
    """The results.jsonl a reference names, when it names a batch: its folder, that
    file, its id or a unique prefix of it (conductor/batch/references.py)."""
    from conductor.batch.references import find_batch
    from conductor.batch.store import RESULTS_FILE

    folder = find_batch(path)
    if folder is None or not (folder / RESULTS_FILE).is_file():
        return None  # no batch, or one with no run recorded yet
    return folder / RESULTS_FILE


def batch_spec(results: Path) -> TaskSpec:
    """The task spec the batch ran with (its batch.json)."""
    from conductor.batch.store import MANIFEST_FILE

    manifest = results.parent / MANIFEST_FILE
    try:
        identity = json.loads(manifest.read_text(encoding="utf-8")).get("identity") or {}
        return TaskSpec.from_dict(identity["spec"], where=str(manifest))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise UserFacingError(
            f"{manifest}: cannot read the batch's task spec; pass --task NAME"
        ) from None


def score_batch(
    results: Path, spec: TaskSpec, *, sandbox: Sandbox | None = None
) -> list[FileScore]:
    """A batch's latest record per item, scored as a published file's lines are: one
    tally, or one per method for a comparison (its records name their method)."""
    from conductor.batch.store import ResultsLog

    items: dict[str, TaskItem] = {}
    try:
        identity = json.loads((results.parent / "batch.json").read_text(encoding="utf-8"))
        task_file = identity["identity"]["task_file"]
        items = {i.id: i for i in read_task_file(task_file, on_error="skip").items}
    except (OSError, ValueError, KeyError, TypeError, UserFacingError):
        pass  # the task file moved: the record's target alone (enough for most scorers)
    tallies: dict[str, FileScore] = {}
    log = ResultsLog(results)
    for record in log.read().values():
        method = str(record.get("method") or "")
        tally = tallies.get(method)
        if tally is None:
            tally = tallies[method] = FileScore(
                file=str(results), task=spec.name, scorer=spec.scorer, method=method
            )
        if not record.get("final") or record.get("status") == "error":
            tally.unscored += 1  # not run to its end, or failed by the system: no grade
            continue
        # A comparison's record is one (item, method) pair: the task item is its own id.
        item_id = str(record.get("task_item_id") or record.get("item_id"))
        item = items.get(item_id) or TaskItem(
            item_id, "", record.get("target"), line=int(record.get("line") or 0)
        )
        answer = record.get("answer")
        output = last_meta_turn(results.parent / str(record.get("transcript") or ""))
        result = score(spec, answer, item, output=output, sandbox=sandbox)
        disagrees = result.correct != bool(result.paper_correct)
        tally.count(item, answer, result, disagrees=disagrees)
    from conductor.methods import METHODS

    order = {m: n for n, m in enumerate(METHODS)}
    found = sorted(tallies.values(), key=lambda t: order.get(t.method, len(order)))
    found = found or [FileScore(str(results), spec.name, spec.scorer)]
    found[0].skipped_lines = len(log.problems)
    return found
