"""The exported pages in a real headless browser: Debian's chromium driven by Playwright.

Each test opens a page from a file with a fresh profile, records every network
request, console message, page error and dialog, and checks what a reader sees.
Skips without chromium or Playwright; fails instead under CONDUCTOR_REQUIRE_BROWSER=1
(.ci/setup.d/30-browser.sh installs chromium and sets it).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from export_runs import (
    published_record,
    published_run,
    python_run,
    replay,
    with_reply_changed,
    write,
)
from hostile_runs import MARKUP, SEQUENCES, hostile_events

from conductor.cli import main
from conductor.export.html.diff_page import write_diff_page
from conductor.export.html.run_page import write_run_html
from record.fold import outline
from support import REPO

pytestmark = pytest.mark.slow

# Read before the autouse fixture clears CONDUCTOR_* variables.
CHROMIUM = os.environ.get("CONDUCTOR_CHROMIUM") or shutil.which("chromium") or ""
REQUIRED = os.environ.get("CONDUCTOR_REQUIRE_BROWSER") == "1"
FLAGS = [
    "--headless",
    "--no-sandbox",  # as root in CI
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}


def no_browser(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (required because CONDUCTOR_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@dataclass
class Opened:
    page: object
    url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    @property
    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if url.split("#")[0] != self.url]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator:
    """`open(path)` -> Opened, in a fresh chromium profile under tmp_path."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        no_browser("no chromium (apt-get install chromium)")
    if importlib.util.find_spec("playwright") is None:
        no_browser("Playwright for Python is not installed (pip install playwright)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport=VIEWPORT,
            offline=True,
        )

        context.set_default_timeout(10_000)

        def open_page(path: Path) -> Opened:
            page = context.new_page()
            opened = Opened(page, path.resolve().as_uri())
            page.on("request", lambda r: opened.requests.append(r.url))
            page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
            page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
            page.on(
                "console",
                lambda m: m.type == "error" and opened.console_errors.append(m.text),
            )
            page.goto(opened.url, wait_until="load")
            return opened

        try:
            yield open_page
        finally:
            context.close()


def distinct_bytes(png: bytes) -> int:
    """How many different byte values the PNG's pixel data holds (1-3 for a blank)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, data = 8, b""
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    return len(set(zlib.decompress(data)))


def assert_quiet(opened: Opened) -> None:
    assert opened.foreign_requests == [], "the page fetched something"
    assert opened.dialogs == [] and opened.page_errors == [] and opened.console_errors == []


def test_published_transcript_renders_expands_and_shows_the_answer(
    browser, shared_dir: Path, tmp_path: Path
) -> None:
    events = published_run(shared_dir, "with-python/GameOf24.jsonl", 1)
    run = outline(events)
    page_file = write_run_html(write(tmp_path / "run.jsonl", events), tmp_path / "run.html")
    opened = browser(page_file)
    page = opened.page
    assert page.locator("section.round").count() == len(run.rounds)
    first = page.locator("details.expert").first
    instruction = first.locator("pre.instruction")
    assert first.get_attribute("open") is None and not instruction.is_visible()
    first.locator("> summary").click()
    assert first.get_attribute("open") is not None and instruction.is_visible()
    assert instruction.inner_text().strip() == run.calls[0].instruction.strip()
    # The final answer, as the reader sees it, and in a picture that is not blank.
    answer = page.locator("#final-answer")
    answer.scroll_into_view_if_needed()
    assert answer.is_visible() and answer.inner_text().strip() == run.final.answer.strip()
    assert distinct_bytes(answer.screenshot()) > 8
    assert distinct_bytes(page.screenshot(full_page=False)) > 8
    assert_quiet(opened)


def test_run_with_expert_python_shows_code_and_output(browser, tmp_path: Path) -> None:
    events = python_run()
    page_file = write_run_html(write(tmp_path / "py.jsonl", events), tmp_path / "py.html")
    opened = browser(page_file)
    page = opened.page
    python = page.locator("details.expert.python")
    assert python.count() == 1
    python.locator("> summary").click()
    code = python.locator(".sandbox pre.code")
    assert code.is_visible() and "assert eval(expr) == 24" in code.inner_text()
    assert code.locator("span").count() > 5  # highlighted
    assert python.locator("pre.stdout").inner_text().strip() == "(4 + 5 * 6) - 10"
    assert "exit 0" in python.locator(".sandbox .status").inner_text()
    # The page's own button opens every expert (its script runs under the page's CSP).
    page.locator("#expand-all").click()
    assert page.locator("details.expert[open]").count() == page.locator("details.expert").count()
    assert_quiet(opened)


def test_hostile_model_output_breaks_nothing_and_runs_nothing(browser, tmp_path: Path) -> None:
    text = "".join(MARKUP + SEQUENCES) + "<script>window.__pwned = 1</script>"
    text += '<img src=x onerror="window.__pwned = 2"><iframe src="javascript:alert(5)">'
    page_file = write_run_html(
        write(tmp_path / "bad.jsonl", hostile_events(text)), tmp_path / "bad.html"
    )
    opened = browser(page_file)
    page = opened.page
    page.locator("#expand-all").click()
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.scripts.length") == 1
    assert (
        page.evaluate(
            "document.images.length + document.querySelectorAll('iframe, textarea').length"
        )
        == 0
    )
    assert page.evaluate("document.querySelectorAll('a[href^=\"javascript\"]').length") == 0
    # The structure held: one round, one expert, the answer and the footer in place.
    assert page.locator("section.round").count() == 1
    assert page.locator("details.expert").count() == 1
    assert page.locator("footer").count() == 1
    assert "</textarea><script>alert(4)</script>" in page.locator("#final-answer").inner_text()
    assert "\\x1b]52;c;cHduZWQ=\\x07" in page.locator("#question").inner_text()
    assert_quiet(opened)


def test_diff_of_two_replays_shows_exactly_the_changed_reply(
    browser, shared_dir: Path, tmp_path: Path
) -> None:
    record = published_record(shared_dir, "without-python/geometric_shapes.jsonl", 1)
    changed, call, _ = with_reply_changed(record, 1, "The path draws a kite.\n(D) kite")
    left = write(tmp_path / "left.jsonl", replay(record))
    right = write(tmp_path / "right.jsonl", replay(changed))
    page_file = write_diff_page(left, right, tmp_path / "diff.html")
    opened = browser(page_file)
    page = opened.page
    assert page.locator("section.round[data-status=changed]").count() == 1
    assert page.locator("section.round[data-status=same]").count() == len(record.turns) - 1
    changed_calls = page.locator("div.pair[data-status=changed]")
    assert changed_calls.count() == 1
    assert changed_calls.get_attribute("data-expert") == call.expert
    fields = changed_calls.locator(".diff-field")
    assert fields.count() == 1 and fields.get_attribute("data-field") == "reply"
    added = " ".join(fields.locator("ins").all_inner_texts())
    assert "kite" in added
    assert page.locator("div.pair[data-status=same]").count() == len(record.calls) - 1
    assert "1 difference in" in page.locator("#summary").inner_text()
    assert_quiet(opened)


def test_batch_index_filters_and_links_to_each_run(
    browser, shared_dir: Path, tmp_path: Path
) -> None:
    from conductor.batch.store import batches_dir

    source = shared_dir / "transcripts" / "without-python" / "word_sorting.jsonl"
    assert main(["batch", str(source), "--replay", "--limit", "3", "--task", "word_sorting"]) == 0
    (folder,) = list(batches_dir().iterdir())
    assert main(["batch-report", str(folder), "--html"]) == 0
    opened = browser(folder / "html" / "index.html")
    page = opened.page
    rows = page.locator("#items tbody tr")
    assert rows.count() == 3 and "3 of 3 items" in page.locator("#filter-count").inner_text()
    first_id = rows.first.locator("td").first.inner_text().strip()
    page.locator("#filter-text").fill(first_id)
    assert page.locator("#items tbody tr:not(.hidden)").count() == 1
    page.locator("#filter-text").fill("")
    page.locator("#filter-status").select_option("error")
    assert page.locator("#items tbody tr:not(.hidden)").count() == 0
    page.locator("#filter-status").select_option("")
    with page.expect_navigation():
        rows.first.locator("a").click()
    assert page.url.endswith(".html") and "/runs/" in page.url
    assert page.locator("#final-answer").is_visible()
    assert opened.dialogs == [] and opened.page_errors == [] and opened.console_errors == []
    assert all(url.startswith(folder.resolve().as_uri()) for url in opened.requests)


def test_a_2000_round_run_opens_whole(browser, tmp_path: Path) -> None:
    """Every round is in the page (the load time is bench/export.py's to measure)."""
    spec = importlib.util.spec_from_file_location("bench_tui", REPO / "bench" / "tui.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    transcript = module.synthetic_transcript(tmp_path / "long.jsonl", 2000)
    opened = browser(write_run_html(transcript, tmp_path / "long.html"))
    page = opened.page
    assert page.locator("section.round").count() == 2000
    page.locator("a[href='#final']").click()
    assert page.locator("#final-answer").is_visible()
    assert_quiet(opened)


def test_the_request_recorder_sees_a_fetch(browser, tmp_path: Path) -> None:
    """The control for every 'no request' above: a page that does fetch is caught."""
    control = tmp_path / "control.html"
    control.write_text(
        '<!doctype html><img src="http://example.invalid/pixel.png">'
        '<link rel="stylesheet" href="https://example.invalid/a.css">'
    )
    opened = browser(control)
    opened.page.wait_for_timeout(300)
    assert any("example.invalid" in url for url in opened.foreign_requests)
