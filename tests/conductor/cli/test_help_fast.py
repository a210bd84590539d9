"""`conductor --help` lists the commands without importing what they need (pydantic for
the setting flags, rich, the model clients, textual): what it imports is measured, not
how long it takes. The lazy parser it uses must say and parse exactly what the eager one
does, for every command."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest

from conductor.cli import build_parser
from conductor.cli.lazy_parser import LazyParser
from support import modules_imported_by

HEAVY = {
    "pydantic",
    "pydantic_settings",
    "rich",
    "regex",
    "textual",
    "anthropic",
    "openai",
    "httpx",
    "docker",
    "ray",
    "sqlite_utils",
    "conductor.config.settings",
    "conductor.config.declaration",
    "conductor_kernel.limits.run_config",
    "conductor.session",
    "experts",
}


@pytest.mark.parametrize("args", [("--help",), ("-h",), ()])
def test_the_command_list_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    modules = modules_imported_by(*args)
    assert "conductor.cli.solve" in modules  # the commands were registered
    assert not HEAVY & modules, sorted(HEAVY & modules)


def test_the_command_list_names_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "conductor.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout == build_parser().format_help()


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


def test_each_commands_help_is_the_same_lazy_or_not() -> None:
    eager = dict(_parsers(build_parser()))
    lazy = dict(_parsers(build_parser(lazy=True)))
    assert eager.keys() == lazy.keys()
    deferred = [path for path, p in lazy.items() if isinstance(p, LazyParser) and p._pending]
    assert ("solve",) in deferred  # the setting flags wait until used
    for path, parser in eager.items():
        assert lazy[path].format_help() == parser.format_help(), path


def _setting_argv() -> Iterator[tuple[list[str], str, object]]:
    """For each int or bool setting: a command line giving it, its dest, what it holds."""
    from conductor.config.declaration import Declaration
    from conductor.config.fields import setting_fields

    for field in setting_fields(Declaration):
        if field.kind == "int":
            yield ["solve", "q", field.flag, "3"], field.path, "3"  # checked when loaded
        elif field.kind == "bool":
            yield ["batch", "tasks.jsonl", field.flag], field.path, True


@pytest.mark.parametrize(("argv", "dest", "value"), list(_setting_argv()), ids=str)
def test_a_setting_flag_parses_the_same_lazy_or_not(
    argv: list[str], dest: str, value: object
) -> None:
    eager = vars(build_parser().parse_args(argv))
    lazy = vars(build_parser(lazy=True).parse_args(argv))
    assert lazy == eager
    assert lazy[dest] == value


# What building a command's setting flags must not import: the declarations and what
# they pull in (pydantic, the methods, the run's kernel).
SETTINGS_MACHINERY = {
    "pydantic",
    "pydantic_settings",
    "conductor.config.settings",
    "conductor.config.declaration",
    "conductor.config.fields",
    "conductor.methods",
}


@pytest.mark.slow  # a fresh interpreter per command
@pytest.mark.parametrize("command", ["solve", "batch", "serve", "mcp", "replay"])
def test_a_commands_help_imports_no_settings_machinery(command: str) -> None:
    modules = modules_imported_by(command, "--help")
    assert not SETTINGS_MACHINERY & modules, sorted(SETTINGS_MACHINERY & modules)


def test_the_flag_table_is_what_the_declarations_make() -> None:
    from conductor.config.flag_table import FLAGS
    from conductor.config.flags import derived_table

    assert derived_table() == FLAGS, (
        "conductor/config/flag_table.py is out of date: run "
        "`python -c 'from conductor.config.flags import write_table; write_table()'`"
    )
