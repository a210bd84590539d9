"""The command line as a user meets it: no key, bad names, broken config, JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.config import load_settings
from conductor_kernel.errors import ConfigError, UnknownModelError
from experts.registry import choose

REPO = Path(__file__).resolve().parents[3]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conductor.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.slow
def test_no_key_gives_the_demo_and_a_hint_never_a_traceback() -> None:
    result = cli("solve", "Use 4 5 6 10 to make 24", "--sandbox", "subprocess", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["status"] == "answered"
    # The demo's answer is really checked: it uses the four numbers and makes 24.
    from experts.demo import evaluate

    assert evaluate(data["answer"])[0] == 24
    assert "Traceback" not in result.stderr
    printed = cli("solve", "What is the capital of France?", "--sandbox", "subprocess")
    assert "offline demo model" in printed.stdout + printed.stderr
    assert "ANTHROPIC_API_KEY" in printed.stderr


def test_unknown_model_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnknownModelError) as err:
        choose("llama-nonsense")
    assert (
        "anthropic:" in str(err.value) and "openai:" in str(err.value) and "demo" in str(err.value)
    )
    assert main(["solve", "hi", "--model", "llama-nonsense"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_auto_model_follows_the_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose("auto").provider == "demo"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert choose("auto").provider == "openai"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert choose("auto").provider == "anthropic"


def test_config_precedence_flag_over_env_over_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Path(os.environ["CONDUCTOR_CONFIG"])
    config.write_text(
        'model = "demo"\nsandbox = "bwrap"\n[run]\nmax_rounds = 7\npython_timeout_s = 3.5\n'
    )
    settings = load_settings()
    assert (settings.model, settings.sandbox, settings.run.max_rounds) == ("demo", "bwrap", 7)
    monkeypatch.setenv("CONDUCTOR_RUN__MAX_ROUNDS", "9")
    monkeypatch.setenv("CONDUCTOR_SANDBOX", "docker")
    settings = load_settings()
    assert (settings.sandbox, settings.run.max_rounds, settings.run.python_timeout_s) == (
        "docker",
        9,
        3.5,
    )
    settings = load_settings({"sandbox": "subprocess", "run": {"max_rounds": 4}})
    assert (settings.sandbox, settings.run.max_rounds) == ("subprocess", 4)


def test_broken_config_says_where_and_what(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    config = Path(os.environ["CONDUCTOR_CONFIG"])
    config.write_text("model = [unclosed\n")
    with pytest.raises(ConfigError, match=str(config)):
        load_settings()
    config.write_text("modle = 'demo'\n")
    with pytest.raises(ConfigError, match="unknown setting 'modle'"):
        load_settings()
    config.write_text("")
    monkeypatch.setenv("CONDUCTOR_RUN__MAX_ROUNDS", "many")
    with pytest.raises(ConfigError, match=r"CONDUCTOR_RUN__MAX_ROUNDS: run\.max_rounds = 'many'"):
        load_settings()
    assert main(["solve", "hi"]) == 2
    assert "max_rounds" in capsys.readouterr().err


def test_runs_list_show_export_after_a_solve(tmp_path: Path, capsys) -> None:
    assert (
        main(["solve", "Sort these words: pear apple fig", "--sandbox", "subprocess", "--quiet"])
        == 0
    )
    assert capsys.readouterr().out.strip() == "apple fig pear"
    assert main(["runs", "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "answered"
    out = tmp_path / "run.md"
    assert main(["runs", "export", rows[0]["run_id"][:15], "--markdown", "-o", str(out)]) == 0
    assert "apple fig pear" in out.read_text()
    assert main(["runs", "export", "no-such-run"]) == 2
    assert "no run matches" in capsys.readouterr().err
