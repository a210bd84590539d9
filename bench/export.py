"""How fast a long run's HTML page is written and opens in a real browser.

A synthetic 2,000-round transcript (bench/tui.py's: one expert a round, half of them
running code) is exported with `conductor runs export --html`'s function, then opened
in headless chromium (Playwright, the system browser) several times. Beside it, in the
same browser and run: the trivial baseline of the same run's Markdown export in one
<pre> (no structure, no collapsing) of comparable size, and an empty page.

    python bench/export.py [--rounds 2000] [--repeats 5] [--screenshots docs/]

Prints a table, then one JSON object on the last line. `--screenshots DIR` also writes
the documentation's pictures (a run page and a diff, 1280x800) into DIR.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def synthetic_transcript(path: Path, rounds: int) -> Path:
    spec = importlib.util.spec_from_file_location("bench_tui", REPO / "bench" / "tui.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.synthetic_transcript(path, rounds)


def open_times(context, path: Path, repeats: int) -> list[float]:
    """Milliseconds from navigation start until the page has loaded and painted once."""
    times = []
    for _ in range(repeats):
        page = context.new_page()
        started = time.perf_counter()
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
        times.append((time.perf_counter() - started) * 1000)
        page.close()
    return times


def screenshots(context, folder: Path, work: Path) -> list[str]:
    """The docs' pictures: a published-style run page with one expert open, and a diff."""
    sys.path.insert(0, str(REPO / "tests"))
    from export_runs import python_run, write

    from conductor.export.html.diff_page import write_diff_page
    from conductor.export.html.run_page import write_run_html

    left = python_run()
    right = python_run()
    for event in right:
        if event.kind == "expert_call_finished" and "Checker" in event.name:
            event.text = "34 - 10 = 24, and each of 4 5 6 10 is used once: correct."
    page_file = write_run_html(write(work / "left.jsonl", left), work / "run.html")
    diff_file = write_diff_page(
        work / "left.jsonl", write(work / "right.jsonl", right), work / "diff.html"
    )
    written = []
    page = context.new_page()
    page.goto(page_file.resolve().as_uri(), wait_until="load")
    page.locator("details.expert.python > summary").click()
    page.locator("details.expert.python").scroll_into_view_if_needed()
    page.evaluate("window.scrollTo(0, 0)")
    out = folder / "export-run.png"
    page.screenshot(path=str(out))
    written.append(str(out))
    page.goto(diff_file.resolve().as_uri(), wait_until="load")
    changed = page.locator("section.round[data-status=changed]").first
    page.evaluate("y => window.scrollTo(0, y - 330)", changed.bounding_box()["y"])
    out = folder / "export-diff.png"
    page.screenshot(path=str(out))
    written.append(str(out))
    page.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--screenshots", type=Path)
    args = parser.parse_args()
    chromium = os.environ.get("CONDUCTOR_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        print("no chromium here: apt-get install chromium (see .ci/setup.d/30-browser.sh)")
        print(json.dumps({"skipped": "no chromium"}))
        return
    from playwright.sync_api import sync_playwright

    from conductor.export.html.run_page import write_run_html
    from conductor.export.markdown import to_markdown
    from record.fold import outline
    from record.reader import read_transcript

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ.setdefault("CONDUCTOR_HOME", str(work / "home"))
        transcript = synthetic_transcript(work / "long.jsonl", args.rounds)
        started = time.perf_counter()
        page_file = write_run_html(transcript, work / "long.html")
        export_ms = (time.perf_counter() - started) * 1000
        baseline = work / "baseline.html"
        markdown = to_markdown(outline(read_transcript(transcript).events))
        baseline.write_text(
            f"<!doctype html><meta charset=utf-8><pre>{html.escape(markdown)}</pre>",
            encoding="utf-8",
        )
        empty = work / "empty.html"
        empty.write_text("<!doctype html><title>empty</title>", encoding="utf-8")
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(work / "profile"),
                executable_path=chromium,
                headless=True,
                args=FLAGS,
                viewport={"width": 1280, "height": 800},
            )
            rows = []
            for name, path in (
                ("run page", page_file),
                ("markdown in <pre>", baseline),
                ("empty page", empty),
            ):
                times = open_times(context, path, args.repeats)
                rows.append((name, path.stat().st_size, statistics.median(times), max(times)))
            shots = screenshots(context, args.screenshots, work) if args.screenshots else []
            context.close()
    print(
        f"{args.rounds}-round synthetic run; export took {export_ms:.0f} ms (2 shared cores, other load)"
    )
    print(f"{'page':<20} {'bytes':>12} {'open p50 ms':>12} {'open max ms':>12}")
    for name, size, p50, worst in rows:
        print(f"{name:<20} {size:>12,} {p50:>12.0f} {worst:>12.0f}")
    result = {
        "rounds": args.rounds,
        "repeats": args.repeats,
        "export_ms": round(export_ms, 1),
        "pages": {
            name: {"bytes": size, "open_p50_ms": round(p50, 1), "open_max_ms": round(worst, 1)}
            for name, size, p50, worst in rows
        },
        "ratio_run_page_to_pre_baseline": round(rows[0][2] / rows[1][2], 2),
        "screenshots": shots,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
