"""Settings of the wrong type or shape, from a file, variables or both at once: refused
with the source named, never coerced into something else, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.config import load_settings
from conductor_kernel.errors import ConfigError

# A TOML value is typed: one of the wrong type is refused, not coerced.
WRONG_IN_FILE = [
    ("[run]\nmax_rounds = true", "run.max_rounds", "line 2"),  # would have been 1 round
    ("[run]\nmax_rounds = 3.5", "run.max_rounds", "line 2"),
    ("[run]\nmax_rounds = 3.0", "run.max_rounds", "line 2"),
    ('[run]\nmax_cost_usd = "1"', "run.max_cost_usd", "line 2"),
    ('[run]\npython = "yes"', "run.python", "line 2"),
    ("recall = 1", "recall", "line 1"),
    ('learn = "false"', "learn", "line 1"),  # would have been *true*
    ("model_timeout_s = true", "model_timeout_s", "line 1"),
    ("[run.max_rounds]\nx = 1", "run.max_rounds", "not a table"),
    ("[model]\nname = 'x'", "model", "not a table"),
]


@pytest.mark.parametrize(("body", "field", "where"), WRONG_IN_FILE)
def test_a_file_value_of_the_wrong_type_is_refused_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, field: str, where: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(body + "\n")
    monkeypatch.setenv("CONDUCTOR_CONFIG", str(config))
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert str(config) in message and field in message and where in message


def test_file_values_of_the_right_type_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("learn = false\n[run]\nmax_rounds = 4\nmax_cost_usd = 2\npython = false\n")
    monkeypatch.setenv("CONDUCTOR_CONFIG", str(config))
    settings = load_settings()
    assert settings.learn is False and settings.run.max_rounds == 4
    assert settings.run.max_cost_usd == 2.0 and settings.run.python is False


@pytest.mark.parametrize(
    "variables",
    [
        {"CONDUCTOR_RUN": "5", "CONDUCTOR_RUN__MAX_ROUNDS": "3"},
        {"CONDUCTOR_RUN__MAX_ROUNDS": "3", "CONDUCTOR_RUN__MAX_ROUNDS__X": "1"},
        {"CONDUCTOR_MODEL__X": "1"},
        {"CONDUCTOR_RUN__MAX_ROUNDS__X__Y": "1"},
    ],
)
def test_variables_that_clash_or_nest_too_deep_are_named(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "None" not in message and "(" not in message.split(":")[0]
    assert any(name in message for name in variables if "__" in name)
    # The variables still parse text as before.
    for name in variables:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CONDUCTOR_RUN__MAX_ROUNDS", "3")
    monkeypatch.setenv("CONDUCTOR_LEARN", "false")
    settings = load_settings()
    assert settings.run.max_rounds == 3 and settings.learn is False
