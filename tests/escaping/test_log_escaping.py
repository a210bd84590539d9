"""Log lines quote models, sandboxes and file names: on stderr and in a batch's log file
their control characters are shown as escapes."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from conductor_kernel.text.display import UNSAFE, VisibleFormatter

HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m\u202e\x00"


def test_the_formatter_shows_every_control_character_of_a_record() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "a %s b", (HOSTILE,), None)
    line = VisibleFormatter("%(levelname)s %(message)s").format(record)
    assert not UNSAFE.search(line)
    assert "\\x1b]52;c;cHduZWQ=\\x07" in line


def test_a_warning_that_quotes_a_file_name_reaches_stderr_visible(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    # A transcript runs.db cannot index (a round count no SQLite integer holds): reindex
    # logs its name and why, and goes on.
    bad = home / "runs" / f"{HOSTILE.replace(chr(0), '')}.jsonl"
    bad.write_text(
        '{"v": 1, "kind": "run_started", "id": "a", "run_id": "r", "ts": 1, "question": "q",'
        ' "tags": {"x": ' + '{"y": 1}' + "}}\n"
        '{"v": 1, "kind": "run_finished", "id": "b", "run_id": "r", "ts": 2,'
        ' "status": "answered", "rounds": 99999999999999999999999}\n'
    )
    env = {**os.environ, "CONDUCTOR_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "conductor.cli", "runs", "reindex"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "not indexed" in done.stderr
    assert not UNSAFE.search(done.stderr), done.stderr
    assert "\\x1b]52;c;cHduZWQ=\\x07" in done.stderr
