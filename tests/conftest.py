"""Shared fixtures: an isolated CONDUCTOR_HOME, shared data, a real Docker engine, and a
wire server answering batch items.

Tests needing ../shared/data or Docker skip when those are absent, and fail instead
under CONDUCTOR_REQUIRE_SHARED=1 / CONDUCTOR_REQUIRE_DOCKER=1 (as CI sets them); the
same holds for Ray (CONDUCTOR_REQUIRE_RAY), tmux, the browser and the model peers.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from support import docker_reason, meta_prompting_dir, skip_or_fail

if TYPE_CHECKING:  # imported where used: this conftest also runs alone (test_skip_summary)
    from equipment.wire_server import WireServer


# Hypothesis's timing checks (a per-example deadline, "input generation is slow") measure
# the machine's load, not the code: on a shared 2-core machine they fail at random. Its
# count-based checks (too much filtering, too large inputs) stay on. A test's own
# @settings inherits this profile for what it does not set.
settings.register_profile("conductor", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("conductor")


@pytest.fixture(autouse=True)
def stop_signal_handlers_restored() -> Iterator[None]:
    """A test that leaves a handler for Ctrl-C, SIGTERM or SIGHUP behind (a command it
    ran in-process, a library it started) must not change how later tests are stopped."""
    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {number: signal.getsignal(number) for number in numbers}
    yield
    for number, handler in saved.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)


@pytest.fixture(autouse=True)
def tool_probes_forgotten() -> Iterator[None]:
    """Each test's servers are asked afresh whether they take tools: a wire server on a
    port an earlier test's server had must not inherit its answer (experts/tool_wire.py)."""
    from experts.tool_wire import forget_probes

    forget_probes()
    yield


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own data and config dirs and no provider keys."""
    home = tmp_path / "conductor-home"
    monkeypatch.setenv("CONDUCTOR_HOME", str(home))
    config = tmp_path / "config.toml"
    config.touch()  # CONDUCTOR_CONFIG naming a missing file is an error
    monkeypatch.setenv("CONDUCTOR_CONFIG", str(config))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    for key in list(os.environ):
        # What the test run requires (CONDUCTOR_REQUIRE_*) stays: a missing peer fails.
        if (
            key.startswith("CONDUCTOR_")
            and not key.startswith("CONDUCTOR_REQUIRE_")
            and key
            not in (
                "CONDUCTOR_HOME",
                "CONDUCTOR_CONFIG",
                "CONDUCTOR_SHARED_DIR",
                "CONDUCTOR_SANDBOX_CACHE",
            )
        ):
            monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def shared_dir() -> Path:
    """../shared/data/meta-prompting, or skip (fail under CONDUCTOR_REQUIRE_SHARED=1)."""
    path = meta_prompting_dir()
    if not (path / "transcripts").is_dir():
        skip_or_fail(f"shared data not found at {path}", "CONDUCTOR_REQUIRE_SHARED")
    return path


@pytest.fixture(scope="session")
def require_docker() -> None:
    reason = docker_reason()
    if reason:
        skip_or_fail(reason, "CONDUCTOR_REQUIRE_DOCKER")


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[WireServer]:
    """A wire server the CLI's `openai:` models talk to (via OPENAI_BASE_URL); it answers
    batch items as `batch_support.consult_then_answer` (tests/conductor/batch/)."""
    from batch_support import consult_then_answer

    from equipment.wire_server import WireServer

    with WireServer(responder=consult_then_answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One summary at the end: how many tests were skipped, grouped by why."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.section(f"{len(skipped)} skipped, and why")
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{count:5d}  {reason}")
    text = " ".join(reasons).lower()
    advice = []
    if any(word in text for word in ("docker", "bubblewrap", "bwrap", "sandbox")):
        advice.append(
            "start a Docker engine or install bubblewrap (`make run` sets one up where it can)"
        )
    if "shared data" in text:
        advice.append("keep ../shared/data next to the repository")
    if advice:
        terminalreporter.write_line("To run them: " + ", and ".join(advice) + ".")
