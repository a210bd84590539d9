"""The operator's keys go to the model server and nowhere else: not into the sandbox's
environment, not into a transcript, runs.db or the notebook (docs/security.md).

A real run through the CLI: the real openai SDK against the wire server, Expert Python's
program printing its whole environment in a real bubblewrap sandbox, then learning.
The key is generated, so no fixed string can be special-cased.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from equipment.wire_server import WireServer
from sandbox.bwrap.backend import BwrapSandbox
from support import skip_or_fail

CONDUCTOR = str(Path(sys.executable).with_name("conductor"))

CONSULT = 'Expert Python:\n"""\nPrint every environment variable you can see.\n"""'
PROGRAM = (
    "```python\nimport os\nfor name, value in sorted(os.environ.items()):\n"
    "    print(name, value)\nprint('END OF ENVIRONMENT')\n```\nPlease run this code!"
)
ANSWER = '>> FINAL ANSWER:\n"""\nnothing to see\n"""'


@pytest.mark.slow
def test_a_key_reaches_the_model_server_and_nothing_else(tmp_path: Path) -> None:
    if (reason := BwrapSandbox.probe()) is not None:
        skip_or_fail(f"bubblewrap cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")
    key = "sk-test-" + secrets.token_hex(16)
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "config.toml"
    config.touch()
    env = {
        "CONDUCTOR_HOME": str(home),
        "CONDUCTOR_CONFIG": str(config),
        "PATH": "/usr/bin:/bin",
        "OPENAI_API_KEY": key,
        "ANTHROPIC_API_KEY": key + "-anthropic",
    }
    with WireServer([CONSULT, PROGRAM, ANSWER, *[ANSWER] * 8]) as server:
        env["OPENAI_BASE_URL"] = server.openai_url
        done = subprocess.run(
            [CONDUCTOR, "solve", "Show me the environment.", "--sandbox", "bwrap",
             "--model", "openai:gpt-4o", "--no-parallel-experts"],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        sent = [r.headers.get("authorization", "") for r in server.requests]
    assert done.returncode == 0, done.stderr
    # The run really went through the sandbox and the server really got the key.
    transcripts = list((home / "runs").glob("*.jsonl"))
    assert transcripts and "END OF ENVIRONMENT" in transcripts[0].read_text()
    assert sent and all(header == f"Bearer {key}" for header in sent)
    # ...and the key is nowhere the run wrote, nor in what it printed.
    for path in home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert key not in done.stdout and key not in done.stderr
