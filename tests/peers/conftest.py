"""Fixtures for tests against real model servers (see servers.py and docs/models.md).

The servers start once per test session on free 127.0.0.1 ports. A test that needs one
skips when it is not installed, and fails instead under CONDUCTOR_REQUIRE_PEERS=1 (CI
sets it in .ci/setup.d/20-model-peers.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import (
    ENV,
    REQUIRE,
    LlamaServer,
    Peer,
    find_litellm,
    find_llama_server,
    start_litellm,
    start_llama_server,
)

from record.reader import Transcript, read_transcript

# Short outputs keep SmolLM2 (about 40 tokens/s here) fast. The tests written for the
# text protocol pin it (these servers take tools, so `auto` would carry it as tool
# calls, after a probe the server counts); test_tool_carrier_llama.py asks for tools.
SHORT = {
    "CONDUCTOR_RUN__META_MAX_TOKENS": "48",
    "CONDUCTOR_RUN__EXPERT_MAX_TOKENS": "24",
    "CONDUCTOR_RUN__PROTOCOL": "text",
}


def _skip_or_fail(reason: str) -> None:
    if ENV[REQUIRE] == "1":
        pytest.fail(f"{reason} (required because {REQUIRE}=1; see .ci/setup.d/20-model-peers.sh)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def peers_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("peers")


@pytest.fixture(scope="session")
def llama(peers_dir: Path) -> Iterator[LlamaServer]:
    """llama.cpp's llama-server with SmolLM2-135M-Instruct (2 slots)."""
    found = find_llama_server()
    if found is None:
        _skip_or_fail("llama-server or the SmolLM2 GGUF is not installed")
    assert found is not None
    server = start_llama_server(*found, peers_dir)
    yield server
    server.stop()


@pytest.fixture
def own_llama(peers_dir: Path) -> Iterator[LlamaServer]:
    """A llama-server of this test's own (to kill mid-stream)."""
    found = find_llama_server()
    if found is None:
        _skip_or_fail("llama-server or the SmolLM2 GGUF is not installed")
    assert found is not None
    server = start_llama_server(*found, peers_dir, slots=1)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def litellm(peers_dir: Path, llama: LlamaServer) -> Iterator[Peer]:
    """LiteLLM's proxy: the mock models, and `smollm2` routed to llama-server."""
    binary = find_litellm()
    if binary is None:
        _skip_or_fail("LiteLLM's proxy is not installed")
    assert binary is not None
    proxy = start_litellm(binary, peers_dir, llama.openai_url)
    yield proxy
    proxy.stop()


def spec(provider: str, model: str, peer: Peer) -> str:
    """A model spec naming its own server (the @URL form)."""
    url = peer.openai_url if provider == "openai" else peer.root
    return f"{provider}:{model}@{url}"


def run_cli(
    *args: str, key: str = "unused", env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`conductor ARGS` in a subprocess with this test's home, short outputs and the key."""
    full = dict(os.environ, **SHORT, **(env or {}))
    full["OPENAI_API_KEY"] = full["ANTHROPIC_API_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "conductor.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        check=False,
    )


def solve_json(*args: str, **kw: Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = run_cli("solve", *args, "--json", "--no-recall", "--no-learn", **kw)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON result; stderr:\n{proc.stderr[-3000:]}"
    return proc, json.loads(lines[-1])


def transcript_of(run_id: str) -> Transcript:
    home = Path(os.environ["CONDUCTOR_HOME"])
    return read_transcript(home / "runs" / f"{run_id}.jsonl")


def kinds(transcript: Transcript, kind: str) -> list[Any]:
    return [e for e in transcript.events if e.kind == kind]
