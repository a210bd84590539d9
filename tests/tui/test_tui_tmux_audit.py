"""An auditor's first minutes in a real terminal (tmux) at 80×24 (issue 24): import both
GameOf24 transcript files, open the Runs screen, filter to wrong runs with the `fake`
finding, open one and read every finding whole."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from tmux_driver import Terminal, cut_lines, has_traceback, tmux_missing

from support import REPO, skip_or_fail

pytestmark = [pytest.mark.serial, pytest.mark.slow]

CONDUCTOR = REPO / ".venv" / "bin" / "conductor"


def test_filter_to_wrong_runs_with_a_fabricated_reply_and_read_its_findings(
    tmp_path: Path, shared_dir: Path
) -> None:
    missing = tmux_missing()
    if missing:
        skip_or_fail(missing, "CONDUCTOR_REQUIRE_TMUX")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "CONDUCTOR_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    files = [
        shared_dir / "transcripts" / c / "GameOf24.jsonl" for c in ("with-python", "without-python")
    ]
    subprocess.run(
        [str(CONDUCTOR), "runs", "import", *map(str, files)],
        env=env, capture_output=True, timeout=600, check=True,
    )  # fmt: skip
    listed = subprocess.run(
        [str(CONDUCTOR), "runs", "list", "--wrong", "--finding", "fake", "--limit", "0", "--json"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    wanted = {json.loads(line)["run_id"] for line in listed.splitlines()}
    assert wanted, "the published GameOf24 runs hold wrong runs with a fabricated reply"

    term = Terminal(f"{CONDUCTOR} tui --screen runs", cwd=REPO, env=env, size=(80, 24))
    try:
        term.wait_for(r"\d+ runs", timeout=120)
        # From the table back through the filters to "correct?" and "finding".
        for _ in range(6):
            term.keys("BTab")
            time.sleep(0.2)
        term.keys("Enter")
        time.sleep(0.4)
        term.type("wrong")
        term.keys("Enter")
        time.sleep(0.6)
        term.keys("Tab")
        time.sleep(0.2)
        term.keys("Enter")
        time.sleep(0.4)
        term.type("fake")
        term.keys("Enter")
        screen = term.wait_for(rf"(?m)^\s*{len(wanted)} runs ·", timeout=60)
        rows = [line for line in screen.splitlines() if line.lstrip().startswith("✗")]
        assert rows and all("fake" in line or "…" in line for line in rows), screen
        assert not any(line.lstrip().startswith("✓") for line in screen.splitlines())
        # Open the first run (Ctrl+O opens the selected one) and read its findings.
        term.keys("C-o")
        detail = term.wait_for(r"Rounds", timeout=60)
        assert "answer wrong" in detail
        term.wait_for(r"\[unconf\]|\[fake\]|\[ctx\]", timeout=60)
        term.keys("f")
        findings = term.wait_for(r"findings · Esc closes", timeout=30)
        assert "[fake]" in findings or "fake" in findings
        assert not cut_lines(findings), findings
        assert not has_traceback(findings)
        count = int(re.search(r"(\d+) findings", findings).group(1))  # type: ignore[union-attr]
        numbered = set(re.findall(r"^\W*(\d+)\. \[", findings, re.M))
        # Scroll through every finding: each numbered one shows up whole.
        seen = set(numbered)
        for _ in range(count * 3):
            if len(seen) >= count:
                break
            term.keys("PageDown")
            time.sleep(0.3)
            page = term.screen()
            assert not cut_lines(page), page
            seen |= set(re.findall(r"^\W*(\d+)\. \[", page, re.M))
        assert seen == {str(n) for n in range(1, count + 1)}
        term.keys("Escape")
        term.keys("C-q")
    finally:
        term.close()
