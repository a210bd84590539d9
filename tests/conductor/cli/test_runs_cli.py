"""`conductor runs search` and `runs list`: any text searches, nothing is cut."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main
from conductor.cli.runs import _table
from conductor_kernel.events import RunFinished, RunStarted
from record.fts import quote_words
from support import REPO
from transcripts.index import RunIndex

LONG_Q = "Sort the following words alphabetically: List: " + " ".join(f"word{i}" for i in range(30))
ANSWER = " ".join(f"word{i}" for i in sorted(range(30), key=str))


@pytest.fixture
def runs() -> RunIndex:
    index = RunIndex()
    for run_id, question, answer in (
        ("20250101-000000-aaaaaa", "Janet's ducks lay 16 eggs: to-make a:b (x", "18"),
        ("20250101-000001-bbbbbb", LONG_Q, ANSWER),
    ):
        index.handle(RunStarted(run_id=run_id, question=question))
        index.handle(RunFinished(run_id=run_id, status="answered", final_answer=answer, rounds=3))
    return index


@pytest.mark.parametrize(
    "text", ["Janet's ducks", "to-make", "a:b", 'foo"bar', "NOT", "(x", "AND OR", "*", "x^"]
)
def test_search_takes_ordinary_text(runs: RunIndex, text: str, capsys) -> None:
    assert main(["runs", "search", text, "--json"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_search_finds_the_words_as_written(runs: RunIndex) -> None:
    found = runs.search(quote_words("Janet's ducks"))
    assert [r["run_id"] for r in found] == ["20250101-000000-aaaaaa"]
    assert runs.search(quote_words("to-make")) and runs.search(quote_words("(x"))


def test_raw_syntax_only_with_the_flag(runs: RunIndex, capsys) -> None:
    assert main(["runs", "search", "--raw", "ducks OR word3", "--json"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    assert main(["runs", "search", "--raw", "(x", "--json"]) == 2
    assert "not valid" in capsys.readouterr().err


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(min_size=1, max_size=40))
def test_any_text_is_a_valid_query(runs: RunIndex, text: str) -> None:
    query = quote_words(text)
    if query:
        runs.search(query)  # raises sqlite3.OperationalError on a syntax error


def test_list_at_80_columns_is_one_line_a_run_with_whole_ids(runs: RunIndex) -> None:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    _table(runs.list(limit=10), False, console)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # the header and one line a run; `runs show` has them whole
    for run_id in ("20250101-000001-bbbbbb", "20250101-000000-aaaaaa"):
        assert any(line.startswith(f"· {run_id}") for line in lines)
    assert any("Janet's" in line for line in lines)


def test_list_piped_is_plain_lines_with_everything(runs: RunIndex) -> None:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("conductor")), "runs", "list"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    ).stdout
    lines = out.splitlines()
    assert lines[0].split("\t")[0] == "run"
    row = next(line for line in lines if line.startswith("20250101-000001-bbbbbb"))
    assert LONG_Q in row and ANSWER in row and "…" not in out
