"""Run ids from someone else's file, shown on a terminal: one made from a published
file's name (`runs import`), one a foreign transcript sets (`runs export`). Each is
shown with its control characters visible and its markup as typed, and a page named by
a run id lands in the folder asked for (tests/lessons/test_nb_cli_id_escaping.py: the
same for a notebook's ids)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from published_builder import sorting_record, write_file
from rich.console import Console

from conductor.cli import main
from conductor_kernel.text.display import UNSAFE, visible_line

# What a hostile name is made of: terminal controls, C1, bidi and invisible characters,
# rich markup, and plain letters; never `/` or NUL, which no file name holds.
HOSTILE_CHARS = "\x1b\x07\x9b\x08\r\u202e\u200b[]/=;:0aZ "
names = (
    st.text(HOSTILE_CHARS.replace("/", ""), min_size=1, max_size=16)
    .filter(lambda text: UNSAFE.search(text) is not None)
    .map(lambda text: f"t{text}")
)
TERMINAL_WIDTH = 400  # wide enough that no cell wraps an id


def _terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Every Console made from now on writes to one buffer as if to a colour terminal."""
    out = io.StringIO()
    original = Console.__init__

    def init(self: Console, *args: object, **kwargs: object) -> None:
        kwargs.update(file=out, force_terminal=True, width=TERMINAL_WIDTH, color_system="truecolor")
        original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "__init__", init)
    return out


def _shown(out: io.StringIO, capsys: pytest.CaptureFixture[str]) -> str:
    """All a command wrote, rich's own colour codes (ESC [ ... m) taken out."""
    printed = capsys.readouterr()
    text = out.getvalue() + printed.out + printed.err
    out.seek(0)
    out.truncate()
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.slow
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_runs_import_shows_a_run_id_made_from_a_hostile_file_name_escaped(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_file(tmp_path / f"{name}.jsonl", sorting_record())
    with pytest.MonkeyPatch.context() as patch:  # one example's patch, undone after it
        out = _terminal(patch)
        assert main(["runs", "import", str(source)]) == 0
    shown = _shown(out, capsys)
    assert not UNSAFE.search(shown.replace("\n", "")), repr(shown)
    # The id itself, as `visible_line` writes it, markup and all: what to type next.
    assert visible_line(f"published-{name}-0001") in shown, repr(shown)


def test_runs_export_names_its_page_safely_and_says_so_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_file(tmp_path / "word_sorting.jsonl", sorting_record())
    assert main(["runs", "import", str(source), "--json"]) == 0
    (imported,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [run_id] = imported["run_ids"]
    from record.home import runs_dir

    foreign = tmp_path / "foreign.jsonl"
    hostile = "../../up\x1b]0;t\x07[b]"
    lines = (runs_dir() / f"{run_id}.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:
        if "run_id" in event:
            event["run_id"] = hostile
    foreign.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    here = tmp_path / "a" / "b" / "here"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    out = _terminal(monkeypatch)
    assert main(["runs", "export", str(foreign), "--html"]) == 0
    shown = _shown(out, capsys)
    assert not UNSAFE.search(shown.replace("\n", "")), repr(shown)
    (page,) = list(here.iterdir())  # here, not two folders up
    assert page.suffix == ".html" and f"wrote {page.name}" in shown
    assert list(tmp_path.glob("*.html")) == [] and list((tmp_path / "a").glob("*.html")) == []
