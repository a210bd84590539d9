"""A stop signal that repeats while the command exits does not kill it by default action.

A hung-up terminal can deliver SIGHUP more than once; the second one may come after the
command has handled the first and is returning its exit code (129). With the default
action back in place it would die by the signal instead (seen in CI: -1, not 129).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def run(script: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=REPO, capture_output=True, timeout=60
    )
    return done.returncode


def test_a_repeat_after_the_first_stop_signal_is_ignored_while_exiting() -> None:
    code = run(
        """
        import os, signal, sys
        from conductor import interrupts
        with interrupts.installed(), interrupts.graceful(lambda name: True):
            os.kill(os.getpid(), signal.SIGHUP)  # the first: handled, the run stops gently
        os.kill(os.getpid(), signal.SIGHUP)  # the repeat, on the way out
        sys.exit(7)
        """
    )
    assert code == 7


def test_without_a_stop_signal_the_default_action_comes_back() -> None:
    code = run(
        """
        import os, signal, sys
        from conductor import interrupts
        with interrupts.installed():
            pass
        os.kill(os.getpid(), signal.SIGHUP)
        sys.exit(7)
        """
    )
    assert code == -1  # killed by SIGHUP, as any program that did not handle it
