"""Drive a real terminal program in tmux as a user would: type, press keys, read the screen.

Each `Terminal` runs one command in its own tmux server (`-L` socket), so tests never
touch a user's sessions. The command's exit status is written to a file when it ends.
`cut_lines` finds screen lines with a word cut short by an ellipsis.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path


class Terminal:
    def __init__(self, command: str, *, cwd: Path, env: dict[str, str], size: tuple[int, int]):
        self.socket = f"conductor-test-{uuid.uuid4().hex[:8]}"
        self.status_file = cwd / f".exit-{self.socket}"
        self.log: list[str] = []  # every screen read, for failure messages and checks
        wrapped = f"{command}; echo $? > {shlex.quote(str(self.status_file))}; sleep 600"
        env_args = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(
            [
                "tmux",
                "-L",
                self.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                str(size[0]),
                "-y",
                str(size[1]),
                "-c",
                str(cwd),
                "env",
                "-i",  # only what the test gives: no variables leak in from pytest
                *env_args,
                "bash",
                "-c",
                wrapped,
            ],
            check=True,
        )

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def screen(self) -> str:
        text = self._tmux("capture-pane", "-p")
        self.log.append(text)
        return text

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-l", text)

    def wait_for(self, pattern: str, timeout: float = 60.0) -> str:
        """The screen once `pattern` (a regex) shows on it; fails with the last screen."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if re.search(pattern, text):
                return text
            if self.exit_status() is not None or time.monotonic() > deadline:
                raise AssertionError(f"never saw {pattern!r}; the screen was:\n{text}")
            time.sleep(0.3)

    def exit_status(self) -> int | None:
        if not self.status_file.exists():
            return None
        text = self.status_file.read_text().strip()
        return int(text) if text else None

    def wait_exit(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while self.exit_status() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"did not exit; the screen was:\n{self.screen()}")
            time.sleep(0.2)
        status = self.exit_status()
        assert status is not None
        return status

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        self.status_file.unlink(missing_ok=True)


# How this machine reaches the package index: certificates, proxies, pip's and uv's own
# settings. A user's shell has them, so a "fresh" terminal in a test keeps them.
_NETWORK_SETTING = re.compile(
    r"^(SSL_CERT_\w+|\w+_CA_BUNDLE|\w*CA_CERTS\w*|PIP_\w+|UV_\w+|(?i:https?_proxy|no_proxy|all_proxy))$"
)


def network_env() -> dict[str, str]:
    """The caller's settings for reaching the package index, to pass to a clean env."""
    return {name: value for name, value in os.environ.items() if _NETWORK_SETTING.match(name)}


def tmux_missing() -> str | None:
    return None if shutil.which("tmux") else "tmux is not installed"


# Progress words and placeholders end in an ellipsis on purpose; a word cut short has a
# letter right before it ("Noteb…"), and a deliberate summary a space (" …").
_PROGRESS = re.compile(
    r"(running|auditing|starting the sandbox|recalling notes|Search for commands)…"
)
_CUT = re.compile(r"\w…")


# A run's line in the Runs table starts with its verdict mark: it is one line on purpose
# (the run's own screen has every field whole), so its cells are cut, not wrapped.
_RUN_ROW = re.compile(r"^\s*[✓✗·] ")


def cut_lines(screen: str) -> list[str]:
    """Lines with a word cut short by an ellipsis where a wrap was possible."""
    return [
        line
        for line in screen.splitlines()
        if not _RUN_ROW.match(line) and _CUT.search(_PROGRESS.sub("", line))
    ]


def has_traceback(screen: str) -> bool:
    return "Traceback" in screen or "most recent call last" in screen
