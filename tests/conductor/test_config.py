"""Settings are checked at load: every field, every source, with the source named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.config import load_settings
from conductor_kernel.errors import ConfigError
from conductor_kernel.limits.run_config import RunConfig


def config_file(text: str) -> Path:
    path = Path(os.environ["CONDUCTOR_CONFIG"])
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("toml", "line", "says"),
    [
        ('model = "demo"\n[run]\nmax_rounds = 2.7\n', 3, "fractional part"),
        ("[run]\n\nmax_rounds = 0\n", 3, "greater than or equal to 1"),
        ("[run]\npython_timeout_s = -1\n", 2, "greater than 0"),
        ("[run]\nmax_cost_usd = 'lots'\n", 2, "valid number"),
        ('sandbox = "dokker"\n', 1, "'auto', 'docker', 'bwrap' or 'subprocess'"),
        ("run.max_tokens = 0\n", 1, "greater than or equal to 1"),
        ('[run]\ncalls_and_answer = "both"\n', 2, "calls_first"),
    ],
)
def test_a_bad_value_in_the_file_names_the_file_line_and_range(
    toml: str, line: int, says: str
) -> None:
    path = config_file(toml)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert f"{path} line {line}" in message
    assert says in message and "allowed:" in message


def test_a_small_float_in_scientific_notation_is_a_cost() -> None:
    config_file("[run]\nmax_cost_usd = 1e-2\n")
    assert load_settings().run.max_cost_usd == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CONDUCTOR_RUN__MAX_ROUNDS", "2.7", "valid integer"),
        ("CONDUCTOR_RUN__MAX_ROUNDS", "many", "valid integer"),
        ("CONDUCTOR_MODEL_TIMEOUT_S", "-5", "greater than 0"),
        ("CONDUCTOR_RUN__PYTHON", "perhaps", "valid boolean"),
    ],
)
def test_a_bad_environment_variable_is_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"environment variable {variable}" in str(caught.value)
    assert says in str(caught.value)


def test_an_environment_variable_can_unset_a_field(monkeypatch: pytest.MonkeyPatch) -> None:
    config_file("model = 'demo'\n[run]\nmax_cost_usd = 0.5\nmax_rounds = 3\n")
    assert load_settings().run.max_cost_usd == 0.5
    monkeypatch.setenv("CONDUCTOR_RUN__MAX_COST_USD", "")
    monkeypatch.setenv("CONDUCTOR_RUN__MAX_ROUNDS", "none")
    settings = load_settings()
    assert settings.run.max_cost_usd is None  # the limit is lifted
    assert settings.run.max_rounds == RunConfig().max_rounds  # back to the default


def test_a_bad_flag_is_named_with_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "hi", "--max-rounds", "0"]) == 2
    err = capsys.readouterr().err
    assert "--max-rounds" in err and "from 1 to 1000" in err
    assert main(["solve", "hi", "--model-timeout", "-1"]) == 2
    assert "--model-timeout" in capsys.readouterr().err


def test_a_missing_conductor_config_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "config.toml"
    monkeypatch.setenv("CONDUCTOR_CONFIG", str(missing))
    with pytest.raises(ConfigError, match=str(missing)):
        load_settings()


def test_the_model_timeout_is_configurable_and_reaches_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import conductor.session
    from conductor.session import build_session

    config_file("model_timeout_s = 7.5\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # No server answers here; the check that one does is tests/conductor/cli/test_model_preflight.py.
    monkeypatch.setattr(conductor.session, "check_endpoints", lambda *models: None)
    settings = load_settings({"model": "openai:gpt-4.1", "run": {"python": False}})
    session = build_session(settings, index=False)
    assert session.meta_model.timeout == 7.5
    flagged = load_settings({"model_timeout_s": 3})
    assert flagged.model_timeout_s == 3.0


def test_timeout_advice_names_a_flag_that_exists() -> None:
    import re

    from conductor.cli import build_parser
    from experts.retry import Failure, explain_failure

    message = explain_failure(
        Failure("timeout"), 3, url="http://x", model="m", key_env=None, timeout_s=60
    )
    flags = re.findall(r"--[a-z-]+", message)
    assert flags
    solve = build_parser()._subparsers._group_actions[0].choices["solve"]  # type: ignore[union-attr]
    for flag in flags:
        assert flag in solve._option_string_actions, flag
