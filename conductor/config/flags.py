"""The settings' command-line flags, made from their declarations (none is written by hand).

`add_setting_flags(parser)` gives a command every setting's flag, with its description,
what it allows and its default as help; `settings_from_args(args)` loads the settings
with the flags given on top. A flag's text is checked like a variable's, so a bad value is
refused naming the flag and what is allowed.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conductor.config.fields import SettingField
    from conductor.config.settings import Settings

GENERATED = "setting_path"  # set on each action made here, to the field it sets
GROUPS = {
    "": ("settings", "flag > CONDUCTOR_* variable > config file > default"),
    "run": ("run limits", "the [run] table of the config file; CONDUCTOR_RUN__<NAME>"),
}


def add_setting_flags(
    parser: argparse.ArgumentParser,
    *,
    only: Collection[str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> None:
    """Every setting's flag (or those in `only`, by field path) on `parser`.

    `notes` adds a sentence to a field's help where this command treats it its own way
    (a batch's own notebook). A flag given on the command line is kept for
    `settings_from_args`; one not given leaves the setting to the other sources.

    A parser that can `defer` (`conductor.cli.lazy_parser`) gets the flags when it is
    first used: the declarations need pydantic, which `conductor --help` does without.
    """
    defer = getattr(parser, "defer", None)
    if defer is not None:
        defer(lambda: _add_setting_flags(parser, only, notes))
    else:
        _add_setting_flags(parser, only, notes)


def _add_setting_flags(
    parser: argparse.ArgumentParser,
    only: Collection[str] | None,
    notes: Mapping[str, str] | None,
) -> None:
    from conductor.config.flag_table import FLAGS  # not the declarations: no pydantic

    groups: dict[str, Any] = {}
    for section, path, flag, kind, metavar, help_text in FLAGS:
        if only is not None and path not in only:
            continue
        if section not in groups:
            title, about = GROUPS.get(section, (section, ""))
            groups[section] = parser.add_argument_group(title, about)
        note = (notes or {}).get(path)
        options: dict[str, Any] = {
            "dest": path,
            "default": argparse.SUPPRESS,
            "help": help_text + (f" {note}".replace("%", "%%") if note else ""),
        }
        if kind == "bool":
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["metavar"] = metavar
        action = groups[section].add_argument(flag, **options)
        setattr(action, GENERATED, path)


FlagRow = tuple[str, str, str, str, str | None, str]


def derived_table() -> tuple[FlagRow, ...]:
    """What conductor/config/flag_table.py must hold: each setting's flag as its
    declaration makes it (section, path, flag, kind, metavar, help)."""
    from conductor.config.declaration import Declaration
    from conductor.config.fields import setting_fields

    return tuple(
        (f.section, f.path, f.flag, f.kind, f.metavar, flag_help(f))
        for f in setting_fields(Declaration)
    )


def write_table() -> None:
    """Write conductor/config/flag_table.py from the declarations (after changing one)."""
    from pathlib import Path

    rows = "".join(f"    {row!r},\n" for row in derived_table())
    text = (
        '"""The setting flags as conductor/config/flags.py makes them, written out: a\n'
        "command's `--help` builds its flags from this table without importing the\n"
        "declarations (pydantic, the methods). Generated; after changing a setting run\n"
        "`python -c 'from conductor.config.flags import write_table; write_table()'`\n"
        '(tests/conductor/cli/test_help_fast.py checks it matches)."""\n\n'
        "# (section, path, flag, kind, metavar, help), one setting a line\n"
        "# fmt: off\n"
        f"FLAGS: tuple[tuple[str, str, str, str, str | None, str], ...] = (\n{rows})\n"
        "# fmt: on\n"
    )
    Path(__file__).with_name("flag_table.py").write_text(text, encoding="utf-8")


def flag_help(field: SettingField, note: str | None = None) -> str:
    """A flag's help: the field's description, what it allows, its default."""
    bits = [field.allowed()] if field.kind in ("int", "float") else []
    bits.append(f"default: {field.shown_default()}")
    text = f"{field.description} ({'; '.join(bits)})" + (f" {note}" if note else "")
    return text.replace("%", "%%")  # argparse formats help with %


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line gave, nested as the settings are."""
    from conductor.config.declaration import Declaration
    from conductor.config.fields import setting_fields

    given: dict[str, Any] = {}
    for field in setting_fields(Declaration):
        if hasattr(args, field.path):
            *tables, name = field.path.split(".")
            target = given
            for table in tables:
                target = target.setdefault(table, {})
            target[name] = getattr(args, field.path)
    return given


def settings_from_args(args: argparse.Namespace) -> Settings:
    from conductor.config import load_settings

    return load_settings(flag_values(args))


def number_above(low: float, kind: type = float, *, inclusive: bool = False) -> Any:
    """An argparse `type` for a flag that is no setting: a number of `kind` above `low`
    (or at least `low`), else argparse's own usage error, whatever the other flags."""
    import math

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        ok = value >= low if inclusive else value > low
        if not ok or (isinstance(value, float) and not math.isfinite(value)):
            bound = f"{low:g} or more" if inclusive else f"more than {low:g}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse
