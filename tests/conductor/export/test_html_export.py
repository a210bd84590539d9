"""The HTML pages as files: what they hold, the CLI that writes them, the batch folder.

How they behave in a browser is in tests/conductor/export/browser/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from export_runs import published_run, python_run, write

from conductor.cli import main
from conductor.export.html.run_page import run_html
from record.fold import outline


def count(page: str, pattern: str) -> int:
    return len(re.findall(pattern, page))


def test_published_run_page_holds_every_round_and_call(shared_dir: Path, tmp_path: Path) -> None:
    events = published_run(shared_dir, "with-python/GameOf24.jsonl", 1)
    run = outline(events)
    path = write(tmp_path / "run.jsonl", events)
    out = tmp_path / "page.html"
    assert main(["runs", "export", str(path), "--html", "-o", str(out)]) == 0
    page = out.read_text()
    assert count(page, r'<section class="round"') == len(run.rounds)
    assert count(page, r'<details class="expert') == len(run.calls)
    # Collapsed by default: no expert and no prompt is open.
    assert not re.search(r"<details[^>]*\bopen\b", page)
    assert run.final is not None and run.final.answer in page
    # No score was recorded: the task's own rule gives it at export.
    assert re.search(r'id="score">correct: .*scored at export by the game24 rule', page)
    # Self-contained: no reference to anything outside the file.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page


def test_python_run_page_shows_highlighted_code_output_and_usage(tmp_path: Path) -> None:
    events = python_run()
    page = run_html(events, notes={})
    assert '<pre class="code">' in page and '<span class="n">expr</span>' in page
    assert "(4 + 5 * 6) - 10" in page and "exit 0" in page
    run = outline(events)
    assert len(run.calls[0].execs) == 1 and run.calls[0].execs[0].result.ok
    assert f"${run.usage.cost_usd:.4f}" in page and "sandbox run" in page


def learned_runs(book_path: Path) -> tuple[list, list]:
    """Two runs of one question on a real notebook: the first writes notes, the second
    is shown them."""
    from export_runs import GAME24_TURNS, game24_expert

    from conductor.session import Session
    from conductor.session.notebook_hooks import NotebookHooks
    from experts.scripted import ScriptedModel
    from sandbox.subprocess_backend import SubprocessSandbox

    runs = []
    for _ in range(2):
        sandbox = SubprocessSandbox()
        model = ScriptedModel(GAME24_TURNS, game24_expert)
        session = Session(meta_model=model, sandbox=sandbox)
        hooks = NotebookHooks.open(book_path)
        hooks.attach(session)
        try:
            runs.append(
                [
                    e
                    for e in session.solve("Use 4 5 6 10 to make 24", task="GameOf24", target="24")
                    if not e.transient
                ]
            )
        finally:
            sandbox.close()
            hooks.close()
    return runs[0], runs[1]


def test_notes_recalled_and_written_show_their_evidence(tmp_path: Path) -> None:
    first, second = learned_runs(tmp_path / "nb.db")
    written = outline(first).notes_written
    assert written and written[0].note_ids, "the first run wrote no note"
    page = run_html(first)
    assert "Notes written" in page
    for note_id in written[0].note_ids:
        assert note_id in page
    assert count(page, r'<details class="note-detail">') == len(written[0].note_ids)
    assert "evidence: verified by" in page
    recalled = outline(second).recalls
    assert recalled and recalled[0].notes, "the second run recalled nothing"
    page = run_html(second, notebook=tmp_path / "nb.db")
    assert "Notes recalled" in page
    assert count(page, r'<details class="note-detail">') >= len(recalled[0].notes)


@pytest.mark.slow
def test_batch_report_writes_an_index_linking_every_run(shared_dir: Path, tmp_path: Path) -> None:
    source = shared_dir / "transcripts" / "without-python" / "word_sorting.jsonl"
    argv = ["batch", str(source), "--replay", "--limit", "3", "--task", "word_sorting"]
    assert main(argv) == 0
    from conductor.batch.store import batches_dir

    (folder,) = [p for p in batches_dir().iterdir() if p.is_dir()]
    assert main(["batch-report", folder.name[:8], "--html", "-o", str(tmp_path / "out")]) == 0
    index = (tmp_path / "out" / "index.html").read_text()
    links = re.findall(r'href="(runs/[^"]+\.html)"', index)
    results = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert len(links) == len(results) == 3
    for link in links:
        page = (tmp_path / "out" / link).read_text()
        assert "Final answer" in page and "correct" in page
    assert count(index, r"<tr data-filter=") == 3


def test_batch_report_says_what_to_do_for_an_unknown_batch(capsys) -> None:
    assert main(["batch-report", "no-such-batch", "--html"]) == 2
    assert "give the batch id" in capsys.readouterr().err
