"""One fold of events into a run (record/fold.py), read by every reader of a run.

Each reader (the audit, the HTML page, the Markdown export, the TUI, the replay's
comparison, the notebook) imports `record.fold`; the second fold, the second decoder and
the second published-record reader are gone; and no module outside record/ looks at the
events a run is grouped by (meta turns, expert calls, sandbox runs) to group them itself,
except the views that tell one event at a time apart (a live run's, the Markdown
export's). The scan is shown catching
the kinds of walk it looks for.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from support import REPO

# Reader -> the modules through which it reads a run.
READERS = {
    "audit": ["record/audit.py"],
    "HTML": ["conductor/export/html/run_page.py"],
    "Markdown": ["conductor/export/markdown.py"],
    "TUI": ["tui/screens/run_detail.py", "tui/widgets/run_rows.py", "record/pages.py"],
    "replay": ["conductor/replay/compare.py"],
    "notebook": [
        "lessons/write/prepare.py",
        "lessons/write/distill.py",
        "lessons/write/verify.py",
        "lessons/write/agreement.py",
    ],
}
GONE = [
    "lessons/write/runview.py",  # the notebook's own fold
    "lessons/published.py",  # the second published-record reader and conversion
    "tui/pages.py",  # the TUI's own decoder and field repair
    "conductor_kernel/task_scoring.py",  # the scoring port with its global
]
# The events a run is grouped by, as classes and as the `kind` a transcript line names.
GROUPED_BY = {
    "MetaTurnStarted": "meta_turn_started",
    "MetaTurnFinished": "meta_turn_finished",
    "ExpertCallStarted": "expert_call_started",
    "ExpertCallFinished": "expert_call_finished",
    "SandboxExec": "sandbox_exec",
}
PRODUCT = ("conductor", "experts", "sandbox", "transcripts", "lessons", "tui")
# Modules that tell one event at a time apart (a live view drawing a streamed run, the
# Markdown export writing each event where the fold put it), never a list of them.
ONE_AT_A_TIME = {
    "conductor/export/terminal.py": "the terminal printer, an event sink",
    "conductor/export/markdown.py": "writes each event in the order the fold gives",
    "conductor/batch/runner.py": "keeps the last meta turn of the run it watches",
    "tui/renderers.py": "the renderers of the Solve view and of one round's page",
    "tui/widgets/status_bar.py": "the live run's status line",
    "conductor/serve/wire.py": "a served run's progress, streamed as each event comes",
    "conductor/cli/solve.py": "keeps the last meta turn, for the reason --quiet gives",
}


def imports_fold(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (
            node.module == "record.fold"
            or (node.module == "record" and any(a.name == "fold" for a in node.names))
        ):
            return True
        if isinstance(node, ast.Import) and any(a.name == "record.fold" for a in node.names):
            return True
    return False


def _named(node: ast.AST | None) -> set[str]:
    """The grouping events an expression names (`X`, `module.X`, tuples and unions)."""
    if node is None:
        return set()
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if (isinstance(n, ast.Name) and n.id in GROUPED_BY)
        or (isinstance(n, ast.Attribute) and n.attr in GROUPED_BY)
    }


def grouping_events(source: str) -> set[str]:
    """The grouping events a module tells events apart by: isinstance, a match pattern,
    a table keyed by the class, or a comparison with the `kind` a line names."""
    found: set[str] = set()
    kinds = {kind: name for name, kind in GROUPED_BY.items()}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
            found |= _named(node.args[1] if len(node.args) > 1 else None)
        elif isinstance(node, ast.MatchClass):
            found |= _named(node.cls)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                found |= _named(key)
        elif isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in kinds:
                    found.add(kinds[side.value])
    return found


def product_modules() -> list[Path]:
    return sorted(p for name in PRODUCT for p in (REPO / name).rglob("*.py"))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_of_a_run_reads_the_fold(reader: str) -> None:
    for module in READERS[reader]:
        source = (REPO / module).read_text(encoding="utf-8")
        assert imports_fold(source), f"{module} ({reader}) does not read record.fold"


def test_the_second_fold_decoder_and_reader_are_gone() -> None:
    assert [path for path in GONE if (REPO / path).exists()] == []
    names = {p.stem for p in product_modules()}
    assert not names & {"runview", "task_scoring_port"}


def test_no_module_outside_the_record_groups_events_itself() -> None:
    walkers = {
        str(path.relative_to(REPO)): sorted(found)
        for path in product_modules()
        if (found := grouping_events(path.read_text(encoding="utf-8")))
    }
    assert sorted(set(walkers) - set(ONE_AT_A_TIME)) == [], walkers
    assert all((REPO / module).is_file() for module in ONE_AT_A_TIME)


WALKS = [
    # the notebook's old fold, as it was
    """
    from conductor_kernel.events import ExpertCallStarted, SandboxExec
    def view(events):
        return [e for e in events if isinstance(e, (ExpertCallStarted, SandboxExec))]
    """,
    # through the module, in a match statement
    """
    from conductor_kernel import events as ev
    def rounds(events):
        out = []
        for e in events:
            match e:
                case ev.MetaTurnStarted():
                    out.append([])
        return out
    """,
    # over decoded lines, by kind
    """
    def rounds(lines):
        return sum(1 for line in lines if line.get("kind") == "meta_turn_started")
    """,
]


@pytest.mark.parametrize("walk", WALKS)
def test_the_scan_catches_a_planted_walk(walk: str) -> None:
    assert grouping_events(textwrap.dedent(walk))


def test_the_fold_check_catches_a_reader_without_it() -> None:
    assert imports_fold("from record import fold\n") and imports_fold("import record.fold\n")
    assert not imports_fold("from record.reader import read_transcript\n")
