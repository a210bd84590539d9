"""A new user's first minutes, in a real terminal (tmux) at 100×30 and 80×24.

`make run` with a fresh CONDUCTOR_HOME: solve two similar puzzles (the second is shown
the first's notes and merges into them), audit both, open each note's source run, the
notebook, a batch, the palette and the help, then quit. It fails on any traceback, a
non-zero exit, or a screen line cut where a wrap was possible.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from tmux_driver import Terminal, cut_lines, has_traceback, network_env, tmux_missing

from support import REPO, skip_or_fail

pytestmark = pytest.mark.serial


class User:
    def __init__(self, term: Terminal) -> None:
        self.term = term

    def see(self, pattern: str, timeout: float = 60.0) -> str:
        screen = self.term.wait_for(pattern, timeout=timeout)
        self.check(screen)
        return screen

    def check(self, screen: str) -> None:
        assert not has_traceback(screen), screen
        assert not cut_lines(screen), "\n".join(cut_lines(screen)) + "\n---\n" + screen

    def press(self, *keys: str, settle: float = 0.6) -> str:
        self.term.keys(*keys)
        time.sleep(settle)
        screen = self.term.screen()
        self.check(screen)
        return screen

    def ask(self, question: str) -> str:
        self.term.type(question)
        self.term.keys("Enter")
        return self.see(r"answered ·|answered ", timeout=120)


@pytest.mark.parametrize("size", [(100, 30), (80, 24)], ids=["100x30", "80x24"])
def test_a_new_users_first_minutes(tmp_path: Path, size: tuple[int, int]) -> None:
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
    env.update(network_env())
    for name in ("CONDUCTOR_SANDBOX_CACHE", "DOCKER_HOST"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    batch_file = tmp_path / "word_sorting.jsonl"
    batch_file.write_text(
        '{"input": "Sort the following words alphabetically: List: pear apple fig", '
        '"target": "apple fig pear"}\n'
        '{"input": "Sort the following words alphabetically: List: b2 a1 it&t", '
        '"target": "a1 b2 it&t"}\n'
    )
    term = Terminal("make run", cwd=REPO, env=env, size=size)
    user = User(term)
    try:
        user.see(r"Ask a question", timeout=600)
        first = user.ask("Use 4 5 6 10 to make 24")
        assert "Demo model" in first or "demo" in first
        user.press("C-n")
        user.ask("Use 1 3 4 6 to make 24")
        user.see(r"notebook: \d+ notes? written")  # learned from, after recalling the first

        # Audit the second run (ctrl+o): its notes list what it was shown and what it wrote.
        user.press("C-o", settle=1.0)
        user.see(r"Rounds")
        user.see(r"shown")  # the note recalled from the first run is listed, not a crash

        # Each note's source run, from the Notebook screen.
        user.press("F3", settle=1.0)
        notes = user.see(r"\d+ notes ·")
        count = int(re.search(r"(\d+) notes ·", notes).group(1))
        for n in range(count):
            user.press("F3", settle=0.6)
            for _ in range(n):
                user.press("Down", settle=0.2)
            user.press("C-o", settle=1.0)
            user.see(r"Rounds")
            user.press("Escape", settle=0.4)

        # Audit both runs from the Runs screen, found by searching.
        user.press("F2", settle=0.6)
        for _ in range(4):
            user.press("Escape", settle=0.3)  # back to the list from any open run
        for words in ("4 5 6 10", "1 3 4 6"):
            user.press("C-l", "C-f", settle=0.4)
            term.type(words)
            user.press("Enter", settle=1.0)
            user.press("C-o", settle=1.0)
            user.see(r"Use " + words)
            user.see(r"no findings|\[")
            user.press("End", settle=0.4)
            user.press("Escape", settle=0.4)

        # A batch, watched on the Batch screen.
        user.press("F4", settle=0.6)
        import subprocess

        subprocess.run(
            [str(REPO / ".venv" / "bin" / "conductor"), "batch", str(batch_file),
             "--task", "word_sorting", "--model", "demo"],
            env={**os.environ, **env}, capture_output=True, timeout=300, check=True,
        )  # fmt: skip
        user.press("C-r", settle=1.5)
        user.see(r"2/2 done")

        user.press("C-p", settle=0.8)
        term.type("Help")
        user.see(r"List every key")  # the help's palette entry
        user.press("Escape")
        user.press("F1", settle=0.8)
        user.see(r"Everywhere")
        user.press("Escape")
        user.press("F5", settle=0.5)
        term.keys("C-q")
        # It quits by itself (how fast is bench/first_run.py's `quit_s`).
        assert term.wait_exit(120) == 0
    finally:
        log = "\n".join(term.log[-3:])
        term.close()
    assert "Traceback" not in log
