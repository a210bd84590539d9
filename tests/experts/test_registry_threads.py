"""A batch's threads open their models at once: the SDKs' first imports must not meet
a half-initialised module (seen on a loaded machine: "partially initialized module
'httpx' has no attribute 'Timeout'", an item ended as an error). Each fresh interpreter
here opens OpenAI and Anthropic models from eight threads at the same moment."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import threading
from experts.registry import get_model

start = threading.Barrier(8)
failures = []

def open_one(i):
    start.wait()
    try:
        spec = "openai:m@http://127.0.0.1:9/v1" if i % 2 else "anthropic:claude-x"
        get_model(spec)
    except Exception as exc:
        failures.append(repr(exc))

threads = [threading.Thread(target=open_one, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("FAILURES", failures)
"""


@pytest.mark.slow  # fresh interpreters importing both SDKs: seconds each
def test_models_opened_by_many_threads_at_once_all_open() -> None:
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            capture_output=True,
            text=True,
            timeout=120,
            env={"ANTHROPIC_API_KEY": "unused", "OPENAI_API_KEY": "unused", "PATH": ""},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "FAILURES []" in done.stdout, done.stdout + done.stderr[-2000:]
