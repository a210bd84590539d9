"""Saving one setting into the user's config file (the TUI's model screen does): the
value reads back exactly, whatever its characters; every other line stays as written;
a file the change would break is put back as it was, with a message."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.config import load_settings
from conductor.config.saving import save_setting
from conductor_kernel.errors import ConfigError
from record.home import config_path

OTHERS = '# my settings\nsandbox = "auto"\nexpert_model = "demo"\n\n[run]\nmax_rounds = 7\n'
ANY_TIME = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@ANY_TIME
@given(value=st.text(max_size=40), before=st.sampled_from(["", OTHERS, 'model = "demo"\n']))
def test_a_saved_value_reads_back_and_the_rest_stays(value: str, before: str) -> None:
    config_path().write_text(before, encoding="utf-8")
    try:
        save_setting("model", value)
    except ConfigError as exc:
        assert "left as it was" in str(exc)
        assert config_path().read_text(encoding="utf-8") == before
        return
    text = config_path().read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert data["model"] == value
    assert load_settings().model == value
    for line in before.splitlines():
        if not line.startswith("model ="):
            assert line in text.splitlines()
    if before == OTHERS:
        assert data["run"]["max_rounds"] == 7 and data["expert_model"] == "demo"


def test_a_file_the_line_would_break_is_put_back() -> None:
    original = 'model = """\ndemo\n"""\n'  # a multi-line string: not edited line-wise
    config_path().write_text(original)
    with pytest.raises(ConfigError, match="left as it was"):
        save_setting("model", "openai:x")
    assert config_path().read_text() == original


def test_a_setting_in_a_table_is_not_taken_for_the_top_level_one() -> None:
    config_path().write_text('[run]\nmodel = "not this"\nmax_rounds = 3\n')
    with pytest.raises(ConfigError, match="left as it was"):  # [run] has no `model`
        save_setting("model", "demo")
    config_path().write_text("[run]\nmax_rounds = 3\n")
    save_setting("model", "demo")
    data = tomllib.loads(config_path().read_text())
    assert data["model"] == "demo" and data["run"] == {"max_rounds": 3}


def test_only_settings_can_be_saved() -> None:
    with pytest.raises(ConfigError, match="not a setting"):
        save_setting("colour", "blue")
