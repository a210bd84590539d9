"""No output path passes a control character from a model or a sandbox through raw.

Each test feeds runs whose every untrusted field holds escape sequences (OSC 52,
clear-screen, cursor-up rewrite, OSC 8, 8-bit CSI, U+202E, NUL, tag characters...) and
markup (<script>, rich markup, Markdown links), and checks what reaches the reader:
the terminal printer on a real rich terminal Console, `conductor runs show` and
`runs diff` as a user's terminal sees them, the Markdown export, and the HTML pages.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

from hostile_runs import MARKUP, SEQUENCES, hostile_events, hostile_text
from hypothesis import HealthCheck, given, settings
from rich.console import Console

from conductor.export.diff import diff_renderables
from conductor.export.html.diff_page import diff_html
from conductor.export.html.run_page import run_html
from conductor.export.markdown import to_markdown
from conductor.export.terminal import RichPrinter
from conductor_kernel.text.display import UNSAFE, is_visible, visible, visible_line
from record.fold import outline
from record.writer import TranscriptWriter
from transcripts.run_diff import diff_runs

# What rich itself writes on a colour terminal: SGR style codes only.
RICH_SGR = re.compile(r"\x1b\[[0-9;]*m")
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def terminal_output(events, *, color: str | None) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=True, color_system=color, width=120, legacy_windows=False
    )
    printer = RichPrinter(console)
    for event in events:
        printer.handle(event)
    return buffer.getvalue()


def assert_inert_terminal(output: str) -> None:
    leftover = RICH_SGR.sub("", output)
    bad = UNSAFE.search(leftover)
    assert bad is None, (
        f"raw {bad.group()!r} reached the terminal near {leftover[max(0, bad.start() - 40) : bad.end() + 40]!r}"
    )


# -- display itself ---------------------------------------------------------------------


@given(hostile_text)
@PROPERTY
def test_visible_leaves_nothing_unsafe_and_is_stable(text: str) -> None:
    shown = visible(text)
    assert is_visible(shown)
    assert visible(shown) == shown
    assert "\n" not in visible_line(text) and is_visible(visible_line(text))


def test_each_known_sequence_is_shown_as_its_escape() -> None:
    assert visible("\x1b[2J") == "\\x1b[2J"
    assert visible("\x9b31m") == "\\x9b31m"
    assert visible("a\u202eb") == "a\\u202eb"
    assert visible("n\x00") == "n\\x00"
    assert visible("\U000e0041") == "\\U000e0041"
    assert visible("line\r\nnext\rover") == "line\nnext\\x0dover"
    assert visible("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


# -- the terminal -----------------------------------------------------------------------


@given(hostile_text)
@PROPERTY
def test_printer_on_a_terminal_emits_no_raw_control_character(text: str) -> None:
    events = hostile_events(text)
    # Without colours rich writes no escape of its own: the output must hold none at all.
    plain = terminal_output(events, color=None)
    assert UNSAFE.search(plain) is None
    assert_inert_terminal(terminal_output(events, color="truecolor"))


def test_printer_shows_each_sequence_as_text_and_makes_no_links() -> None:
    for piece in SEQUENCES + MARKUP:
        output = terminal_output(hostile_events(piece), color="truecolor")
        assert_inert_terminal(output)
        assert "\x1b]8;" not in output  # rich made no hyperlink of a Markdown link
    output = terminal_output(hostile_events("\x1b]52;c;cHduZWQ=\x07"), color=None)
    assert "\\x1b]52;c;cHduZWQ=\\x07" in output
    # rich markup in model text is shown, not applied
    output = terminal_output(hostile_events("[bold red]markup[/]"), color=None)
    assert "[bold red]markup[/]" in output


def _write(path, events) -> None:
    with TranscriptWriter(path) as writer:
        for event in events:
            writer.handle(event)


def test_runs_show_and_diff_as_a_terminal_sees_them(tmp_path) -> None:
    """The real CLI in a child process, told it writes to a colour terminal."""
    text = "".join(SEQUENCES + MARKUP)
    left, right = tmp_path / "left.jsonl", tmp_path / "right.jsonl"
    _write(left, hostile_events(text))
    _write(right, hostile_events(text[::-1]))
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "120", "TTY_COMPATIBLE": "1"}
    for argv in (["runs", "show", str(left)], ["runs", "diff", str(left), str(right)]):
        done = subprocess.run(
            [sys.executable, "-m", "conductor.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "\x1b[" in done.stdout, "rich did not think it wrote to a terminal"
        assert_inert_terminal(done.stdout)
        assert "\\x1b]52;" in done.stdout


@given(hostile_text, hostile_text)
@PROPERTY
def test_terminal_diff_emits_no_raw_control_character(left: str, right: str) -> None:
    diff = diff_runs(outline(hostile_events(left)), outline(hostile_events(right)))
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system=None, width=120)
    for renderable in diff_renderables(diff):
        console.print(renderable)
    assert UNSAFE.search(buffer.getvalue()) is None


# -- Markdown ---------------------------------------------------------------------------


@given(hostile_text)
@PROPERTY
def test_markdown_export_holds_no_raw_control_character(text: str) -> None:
    markdown = to_markdown(outline(hostile_events(text)))
    assert UNSAFE.search(markdown) is None


def test_markdown_fences_cannot_be_closed_from_inside() -> None:
    """Parsed by a CommonMark parser, model text never becomes a heading or a tag."""
    from markdown_it import MarkdownIt

    text = "```` ``` `````\n# not a heading\n<script>x</script>"
    tokens = MarkdownIt("commonmark").parse(to_markdown(outline(hostile_events(text))))
    headings = [t.content for t in tokens if t.type == "inline" and "not a heading" in t.content]
    fenced = [t for t in tokens if t.type == "fence" and "# not a heading" in t.content]
    assert fenced and all(t.content.rstrip("\n") == text for t in fenced)
    assert not any(t.type == "html_block" and "script" in t.content for t in tokens)
    # Inline uses (a heading's expert name) stay code spans on one line.
    assert all("\\n# not a heading" in h for h in headings)


# -- HTML -------------------------------------------------------------------------------


class Tags(HTMLParser):
    """Every element and attribute a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))


ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "footer", "h1", "h2",
    "div", "span", "b", "pre", "code", "details", "summary", "section", "button", "a",
    "table", "thead", "tbody", "tr", "th", "td", "del", "ins", "script", "input",
    "select", "option",
}  # fmt: skip


def assert_inert_html(page: str) -> None:
    assert UNSAFE.search(page) is None
    parser = Tags()
    parser.feed(page)
    tags = parser.tags
    assert {t for t, _ in tags} <= ALLOWED_TAGS, {t for t, _ in tags} - ALLOWED_TAGS
    scripts = [a for t, a in tags if t == "script"]
    assert len(scripts) == 1 and scripts[0].get("nonce")
    for tag, attrs in tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        href = attrs.get("href") or ""
        assert not href.lower().lstrip().startswith("javascript"), href
        assert tag != "img"


@given(hostile_text)
@PROPERTY
def test_run_page_holds_only_its_own_markup(text: str) -> None:
    assert_inert_html(run_html(hostile_events(text), notes={}))


@given(hostile_text, hostile_text)
@PROPERTY
def test_diff_page_holds_only_its_own_markup(left: str, right: str) -> None:
    diff = diff_runs(outline(hostile_events(left)), outline(hostile_events(right)))
    assert_inert_html(diff_html(diff))


def test_run_page_shows_hostile_text_as_text() -> None:
    page = run_html(hostile_events("".join(MARKUP + SEQUENCES)), notes={})
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "&lt;/textarea&gt;" in page
    assert "\\x1b]52;c;cHduZWQ=\\x07" in page
    assert "{{ 7*7 }}" in page  # shown, not evaluated by the template engine
    assert "default-src 'none'" in page  # the policy itself, written by us


@given(hostile_text)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_batch_index_holds_only_its_own_markup(tmp_path_factory, text: str) -> None:
    import json

    from conductor.export.html.batch_page import write_batch_html

    folder = tmp_path_factory.mktemp("batch")
    _write(folder / "runs" / "r.jsonl", hostile_events(text))
    record = {
        "item_id": text[:30],
        "line": 1,
        "final": True,
        "run_id": "hostile-run",
        "transcript": "runs/r.jsonl",
        "status": "answered",
        "answer": text,
        "target": text,
        "score": {"correct": False, "detail": text, "scored": True},
        "usage": {"input_tokens": 1, "output_tokens": 2, "cost_usd": 0.0},
        "rounds": 1,
        "duration_s": 0.1,
    }
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    index = write_batch_html(folder)
    assert_inert_html(index.read_text())
    assert_inert_html((index.parent / "runs" / "hostile-run.html").read_text())
