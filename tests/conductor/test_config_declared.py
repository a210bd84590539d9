"""Each setting is declared once, and what a user sees of it is made from that declaration:
its flag on every command that starts runs, its check from a flag, a variable or the file,
the message that refuses a bad value, and the README's table."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from conductor.cli import build_parser
from conductor.config.declaration import Declaration
from conductor.config.fields import SettingField, setting_fields
from conductor.config.flags import GENERATED, settings_from_args
from conductor.config.sources import UNSET_WORDS
from conductor.config.table import settings_table
from conductor_kernel.errors import ConfigError
from conductor_kernel.limits.run_config import setting

FIELDS = setting_fields(Declaration)
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# -- the declarations are whole ------------------------------------------------------------
def declaration_problems(model: type[BaseModel]) -> list[str]:
    """What a declaration lacks for its flag, its check and its message to be made from it."""
    problems: list[str] = []
    flags: dict[str, str] = {}
    for field in setting_fields(model):
        if not field.description.strip():
            problems.append(f"{field.path}: no description")
        if not field.flag.startswith("--"):
            problems.append(f"{field.path}: no flag")
        elif field.flag in flags:
            problems.append(f"{field.path}: flag {field.flag} already sets {flags[field.flag]}")
        flags[field.flag] = field.path
        try:
            kind = field.kind
        except TypeError:
            problems.append(f"{field.path}: a type that has no flag or message")
            continue
        if kind in ("int", "float") and not {"ge", "gt"} & set(field.bounds):
            problems.append(f"{field.path}: a number without a lower bound")
        if kind == "bool" and field.flag.startswith("--no-"):
            problems.append(f"{field.path}: declare --X for a true/false field; --no-X is made")
        try:
            field.check(field.default, "its default", strict=False)
        except ConfigError:
            problems.append(f"{field.path}: its default is not allowed")
    return problems


def test_every_setting_has_a_description_a_flag_and_bounds() -> None:
    assert declaration_problems(Declaration) == []
    assert len(FIELDS) >= 20  # the tables were walked into, not only the top


def test_an_incomplete_declaration_is_named() -> None:
    class Planted(BaseModel):
        bare: int = Field(3)  # no description, no flag, no bounds
        unbounded: float = setting(1.0, flag="--unbounded", description="A number.")
        twice: int = setting(2, ge=1, flag="--unbounded", description="Same flag.")
        negative: bool = setting(True, flag="--no-thing", description="Named wrongly.")
        outside: int = setting(0, ge=1, flag="--outside", description="Default refused.")
        odd: list[int] = setting([], flag="--odd", description="A type with no flag.")

    problems = "\n".join(declaration_problems(Planted))
    for expected in (
        "bare: no description",
        "bare: no flag",
        "bare: a number without a lower bound",
        "unbounded: a number without a lower bound",
        "twice: flag --unbounded already sets unbounded",
        "negative: declare --X",
        "outside: its default is not allowed",
        "odd: a type that has no flag or message",
    ):
        assert expected in problems


def test_settings_add_no_field_of_their_own() -> None:
    from conductor.config import Settings

    assert Settings.model_fields.keys() == Declaration.model_fields.keys()


# -- the flags are made from the declarations ----------------------------------------------
def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


PARSERS = dict(_parsers(build_parser()))
STARTS_RUNS = (("solve",), ("batch",), ("tui",))
# The options of those commands that are their own, not a setting's. A flag for a setting
# is declared with `setting(...)` (conductor/config), never added here.
OWN_OPTIONS = {
    ("solve",): {"-h", "--help", "--json", "--quiet"},
    ("tui",): {"-h", "--help", "--screen", "--run"},
    ("batch",): {
        "-h", "--help", "--task", "--spec", "--description", "--scorer", "--concurrency",
        "--limit", "--learn-order", "--on-error", "--on-bad-line", "--retry-errors",
        "--replay", "--ablation", "--json", "--ray", "--learning", "--learn-every", "--rpm",
        "--tpm", "--methods", "--with-notebook", "--replay-dir",
    },
}  # fmt: skip
# The same words on commands that read no settings, where they mean something else.
OTHER_MEANINGS = {
    (("replay",), "--sandbox"),  # also `none`: replay without running code
    (("score",), "--sandbox"),  # where P3 answers run, never this host
    (("notebook", "test-tools"), "--sandbox"),
    (("sandbox", "exec"), "--sandbox"),
    (("runs", "export"), "--notebook"),  # whose notes' evidence a page shows, if any
    (("runs", "list"), "--method"),  # only runs of this method
    (("runs", "list"), "--model"),  # only runs of this model
    (("runs", "import"), "--method"),  # the method the published runs used
    (("replay",), "--method"),  # the method the published runs used
}


def _options(field: SettingField) -> list[str]:
    return [field.flag, f"--no-{field.flag[2:]}"] if field.kind == "bool" else [field.flag]


@pytest.mark.parametrize("command", STARTS_RUNS, ids=" ".join)
def test_a_command_that_starts_runs_has_every_setting_flag_made_from_its_declaration(
    command: tuple[str, ...],
) -> None:
    actions = PARSERS[command]._actions
    made = {getattr(a, GENERATED): a for a in actions if getattr(a, GENERATED, None)}
    assert set(made) == {field.path for field in FIELDS}
    for field in FIELDS:
        action = made[field.path]
        assert action.option_strings == _options(field)
        assert action.dest == field.path and action.default == argparse.SUPPRESS
        assert action.help is not None and field.description in action.help
        assert f"default: {field.shown_default()}" in action.help
        if field.kind in ("int", "float"):
            assert field.allowed() in action.help  # its bounds, in words
        if field.kind != "bool":
            assert action.metavar == field.metavar
    own = {o for a in actions if not getattr(a, GENERATED, None) for o in a.option_strings}
    assert own == OWN_OPTIONS[command], (
        "an option that is not a declared setting: declare a setting with `setting(...)` "
        "(conductor/config/declaration.py or conductor_kernel/limits/run_config.py), or, if it "
        "is the command's own, add it to OWN_OPTIONS"
    )


def test_no_command_has_a_hand_written_flag_for_a_setting() -> None:
    words = {option: field for field in FIELDS for option in _options(field)}
    seen_other = set()
    for path, parser in PARSERS.items():
        for action in parser._actions:
            for option in action.option_strings:
                if option not in words:
                    continue
                if getattr(action, GENERATED, None) == words[option].path:
                    continue
                assert (path, option) in OTHER_MEANINGS, (
                    f"`conductor {' '.join(path)}` writes {option} by hand: use "
                    "conductor.config.flags.add_setting_flags (its `only=` for some)"
                )
                seen_other.add((path, option))
    assert seen_other == OTHER_MEANINGS  # the list holds no stale entry


def test_the_notebook_commands_take_the_notebook_setting_flag() -> None:
    notebook = [p for path, p in PARSERS.items() if path[:1] == ("notebook",)]
    assert len(notebook) > 5
    for parser in notebook:
        made = [a for a in parser._actions if getattr(a, GENERATED, None)]
        assert [a.dest for a in made] == ["notebook"]


# -- values from every source, checked by the declaration ----------------------------------
def _good(field: SettingField) -> st.SearchStrategy[Any]:
    bounds = field.bounds
    if field.kind == "bool":
        return st.booleans()
    if field.kind == "choice":
        return st.sampled_from(field.choices)
    if field.kind == "int":
        low = int(bounds["ge"]) if "ge" in bounds else int(bounds["gt"]) + 1
        return st.integers(min_value=low, max_value=int(bounds.get("le", 10**9)))
    if field.kind == "float":
        low = bounds.get("ge", bounds.get("gt"))
        return st.floats(
            min_value=low, max_value=bounds.get("le", 1e9), exclude_min="gt" in bounds,
            allow_nan=False, allow_infinity=False,
        )  # fmt: skip
    characters = st.characters(blacklist_categories=("Cs", "Cc"))
    return st.text(characters, max_size=20).filter(lambda s: s.strip().lower() not in UNSET_WORDS)


def _as_text(value: Any) -> str:
    """A value as a person types it in a variable or after a flag."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _as_toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON escapes = TOML basic-string escapes
    return _as_text(value)


def _variable(field: SettingField) -> str:
    return "CONDUCTOR_" + field.path.upper().replace(".", "__")


def _flag_argv(field: SettingField, value: Any) -> list[str]:
    if field.kind == "bool":
        return [field.flag if value else f"--no-{field.flag[2:]}"]
    return [f"{field.flag}={_as_text(value)}"]


def _file_body(field: SettingField, line: str, padding: int) -> tuple[str, int]:
    """A config file setting `field` on the line returned, after other lines."""
    head = ["# my settings", 'model = "demo"' if field.path != "model" else "", ""][:padding]
    head += [f"[{field.section}]"] if field.section else []
    return "\n".join([*head, line]) + "\n", len(head) + 1


def _held(settings: Any, field: SettingField) -> Any:
    for part in field.path.split("."):
        settings = getattr(settings, part)
    return settings


def _load(argv: list[str]) -> Any:
    return settings_from_args(build_parser().parse_args(["solve", "q", *argv]))


@EXAMPLES
@given(data=st.data())
def test_each_setting_is_read_from_flag_variable_and_file_in_that_order(
    data: st.DataObject,
) -> None:
    field = data.draw(st.sampled_from(FIELDS), label="field")
    sources = data.draw(st.sets(st.sampled_from(["flag", "env", "file"])), label="sources")
    given_values = {source: data.draw(_good(field), label=source) for source in sources}
    config = Path(os.environ["CONDUCTOR_CONFIG"])
    variable = _variable(field)
    try:
        body = ""
        if "file" in given_values:
            body, _ = _file_body(field, f"{field.name} = {_as_toml(given_values['file'])}", 2)
        config.write_text(body, encoding="utf-8")
        if "env" in given_values:
            os.environ[variable] = _as_text(given_values["env"])
        argv = _flag_argv(field, given_values["flag"]) if "flag" in given_values else []
        expected = next(
            (given_values[s] for s in ("flag", "env", "file") if s in given_values),
            field.default,
        )
        assert _held(_load(argv), field) == expected
    finally:
        os.environ.pop(variable, None)
        config.write_text("")


def _bad(field: SettingField, source: str) -> st.SearchStrategy[str] | None:
    """Values a field refuses, as they are written in `source` (None: none can be)."""
    bounds = field.bounds
    typed_wrongly = st.sampled_from(['"10"', "true", "[1]"] if field.kind != "bool" else ["1"])
    if field.kind in ("int", "float"):
        low = bounds.get("ge", bounds.get("gt"))
        top = int(low) - 1 if "ge" in bounds else int(low)
        below = st.integers(min_value=-(10**6), max_value=top).map(str)  # TOML: 64-bit
        over = (
            st.integers(min_value=int(bounds["le"]) + 1, max_value=10**9).map(str)
            if "le" in bounds
            else st.nothing()
        )
        words = st.sampled_from(["many", "1,5", "ten"])
        fractions = st.sampled_from(["2.5", "1e-3"]) if field.kind == "int" else st.nothing()
        written = st.one_of(below, over, words if source != "file" else st.nothing(), fractions)
        return st.one_of(written, typed_wrongly) if source == "file" else written
    if field.kind == "choice":
        other = st.sampled_from(["dokker", "all", "ANSWER"]).filter(
            lambda s: s not in field.choices
        )
        return st.one_of(other.map(json.dumps), typed_wrongly) if source == "file" else other
    if field.kind == "bool":
        if source == "flag":
            return None  # --X and --no-X take no value
        return typed_wrongly if source == "file" else st.sampled_from(["perhaps", "2", "yes!"])
    return st.sampled_from(["10", "true", "[1]"]) if source == "file" else None  # text


@EXAMPLES
@given(data=st.data())
def test_a_bad_value_is_refused_naming_its_source_and_what_is_allowed(
    data: st.DataObject,
) -> None:
    source = data.draw(st.sampled_from(["flag", "env", "file"]), label="source")
    candidates = [f for f in FIELDS if _bad(f, source) is not None]
    field = data.draw(st.sampled_from(candidates), label="field")
    strategy = _bad(field, source)
    assert strategy is not None
    value = data.draw(strategy, label="value")
    config = Path(os.environ["CONDUCTOR_CONFIG"])
    variable = _variable(field)
    try:
        argv: list[str] = []
        if source == "file":
            padding = data.draw(st.integers(0, 3), label="lines before")
            body, line = _file_body(field, f"{field.name} = {value}", padding)
            config.write_text(body, encoding="utf-8")
            where = f"{config} line {line}"
        elif source == "env":
            os.environ[variable] = value
            where = f"environment variable {variable}"
        else:
            argv = [f"{field.flag}={value}"]
            where = f"command-line flag {field.flag}"
        with pytest.raises(ConfigError) as caught:
            _load(argv)
        message = str(caught.value)
        assert message.startswith(f"{where}: {field.path} = ")
        assert f"allowed: {field.allowed()}." in message
    finally:
        os.environ.pop(variable, None)
        config.write_text("")


@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind != "bool"], ids=lambda f: f.path)
def test_an_unset_word_from_a_flag_puts_the_default_back(field: SettingField) -> None:
    # An optional limit is lifted (its default may be a limit: the run's wall time).
    config = Path(os.environ["CONDUCTOR_CONFIG"])
    body, _ = _file_body(field, f"{field.name} = {_as_toml(_changed(field))}", 0)
    config.write_text(body)
    assert _held(_load([]), field) == _changed(field)
    lifted = None if field.optional else field.default
    assert _held(_load([f"{field.flag}=none"]), field) == lifted


def test_a_run_has_a_wall_clock_limit_unless_lifted() -> None:
    wall = next(f for f in FIELDS if f.path == "run.max_wall_s")
    assert _held(_load([]), wall) == 1200  # 20 minutes
    assert _held(_load(["--max-wall=90"]), wall) == 90
    assert _held(_load(["--max-wall=none"]), wall) is None


def _changed(field: SettingField) -> Any:
    """A value other than the default, as the field holds it."""
    if field.kind == "choice":
        return next(c for c in field.choices if c != field.default)
    if field.kind == "text":
        return "other"
    low = field.bounds.get("ge", field.bounds.get("gt", 0))
    value = (field.default or low) + 1
    return float(value) if field.kind == "float" else int(value)


# -- what users read -----------------------------------------------------------------------
def test_the_readme_table_is_the_one_the_declarations_make() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- settings-table -->\n", "<!-- /settings-table -->"
    shown = readme[readme.index(start) + len(start) : readme.index(end)]
    assert shown == settings_table(), "paste `python -m conductor.config` into README.md"


def test_building_the_parser_loads_neither_the_sources_nor_a_session() -> None:
    """`conductor --help` and `--version` build the parser: it needs the declarations,
    not pydantic-settings, the session or a database library."""
    code = (
        "import sys; from conductor.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('pydantic_settings', 'conductor.session', 'sqlite_utils', "
        "'conductor.batch.runner', 'textual') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_a_literal_declaration_lists_its_words_in_the_flag() -> None:
    class Planted(BaseModel):
        how: Literal["a", "b", "c"] = setting("a", flag="--how", description="How.")

    (field,) = setting_fields(Planted)
    assert field.metavar == "{a,b,c}" and field.allowed() == "a, b or c"
    with pytest.raises(ConfigError, match=r"flag --how: how = 'd' .* allowed: a, b or c\."):
        field.check("d", "flag --how", strict=False)
