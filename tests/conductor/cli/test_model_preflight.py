"""Model problems are diagnosed before anything is spent: a server that cannot be reached
is named with what to do before a sandbox starts or a run is recorded, and with no model
named the message never sends the user to `--model`, which would only fail again."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from conductor.cli import main


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    opened: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        raise AssertionError("a sandbox was started before the model was checked")

    monkeypatch.setattr("sandbox.registry.open_sandbox", refuse)
    return opened


@pytest.mark.parametrize("model", [None, "openai:some-model"])
@pytest.mark.parametrize("command", ["solve", "batch"])
def test_a_closed_port_is_named_before_anything_starts(
    model: str | None,
    command: str,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_sandbox: list[Any],
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    flags = ["--no-recall", "--no-learn", *(["--model", model] if model else [])]
    if command == "solve":
        argv = ["solve", "What is 6*7?", *flags]
    else:
        tasks = tmp_path / "t.jsonl"
        tasks.write_text('{"input": "What is 6*7?", "target": "42"}\n')
        argv = ["batch", str(tasks), "--scorer", "exact", "--description", "Answer.", *flags]
    code = main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert f"nothing is listening at {url}" in err and "start the model server" in err
    assert "--model openai:NAME" not in err
    assert no_sandbox == []
    runs = isolated_home / "runs"
    assert not runs.exists() or not any(runs.iterdir())
