"""Where settings come from, each value checked as it is read with its origin named.

pydantic-settings merges the sources in order (flags, then `CONDUCTOR_*` variables, then
the config file, then the defaults). Each source here checks its own values field by
field before the merge, so a bad one is refused with where it came from: the flag, the
variable, or the file and line, and what the field allows.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource

from conductor.config.fields import SettingField, nearest, section_model, setting_fields
from conductor_kernel.bounded import TooDeep, loads_toml
from conductor_kernel.errors import ConfigError
from record.home import config_path

# Written as a value (in the environment, or a flag), these unset a field: an optional
# limit is lifted, any other field goes back to its default.
UNSET_WORDS = ("", "none", "null", "unset")
# Variables with the prefix that are not settings: where the settings themselves live.
NOT_SETTINGS = ("CONDUCTOR_HOME", "CONDUCTOR_CONFIG")


class Origin:
    """One source's way of naming where a value came from, and how it reads values."""

    strict = False  # typed values taken as written (the file), or text parsed
    unsets = True  # an unset word puts the field back to its default

    def where(self, path: str) -> str:
        raise NotImplementedError


def checked(
    values: Mapping[str, Any], model: type[BaseModel], origin: Origin, prefix: str = ""
) -> dict[str, Any]:
    """`values` (nested as the settings are) checked against `model`'s declarations."""
    fields = model.model_fields
    out: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        info = fields.get(key)
        if info is None:
            known = [f"{prefix}{name}" for name in fields]
            raise ConfigError(
                f"{origin.where(path)}: unknown setting {path!r}; {nearest(path, known)}"
            )
        inner = section_model(info)
        if inner is not None:
            out[key] = _table(value, inner, origin, path)
        elif isinstance(value, Mapping):  # a table, or CONDUCTOR_MODEL__X, where a value goes
            raise ConfigError(
                f"{origin.where(path)}: {path} is one value, not a table of settings; "
                "set it directly."
            )
        else:
            out[key] = _value(SettingField(path, info), value, origin)
    return out


def _table(value: Any, model: type[BaseModel], origin: Origin, path: str) -> Any:
    if isinstance(value, model):  # given whole by a program
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{origin.where(path)}: {path} is a table of settings "
            f"({', '.join(model.model_fields)}), not a value"
        )
    return checked(value, model, origin, prefix=f"{path}.")


def _value(field: SettingField, value: Any, origin: Origin) -> Any:
    if origin.unsets and isinstance(value, str) and value.strip().lower() in UNSET_WORDS:
        return None if field.optional else field.default  # a limit with a default lifted too
    return field.check(value, origin.where(field.path), strict=origin.strict)


class _Checked(PydanticBaseSettingsSource):
    """A source that hands pydantic-settings values already checked, whole tables at once."""

    values: dict[str, Any]

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self.values


# -- the config file -----------------------------------------------------------------------
class FileSource(TomlConfigSettingsSource):
    """`config.toml` in the user config dir, or the file `$CONDUCTOR_CONFIG` names."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        path = config_path()
        if os.environ.get("CONDUCTOR_CONFIG") and not path.is_file():
            raise ConfigError(
                f"CONDUCTOR_CONFIG names {path}, which is not a file. Create it, or unset "
                "CONDUCTOR_CONFIG to use the default config file."
            )
        self.path, self.text = path, ""
        super().__init__(settings_cls, toml_file=path)  # reads it when it exists
        self.values = checked(self.toml_data, settings_cls, _InFile(self.path, self.text))

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            self.text = Path(file_path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(
                f"{file_path}: cannot be read ({exc.strerror}); fix its permissions or "
                "move it away."
            ) from exc
        try:
            return loads_toml(self.text)
        except TooDeep as exc:
            raise ConfigError(
                f"{file_path}:{exc.line}: {exc}; no setting nests like that. Fix the file "
                "or move it away."
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{file_path}: not valid TOML ({exc}); fix the file or move it away."
            ) from exc

    def __call__(self) -> dict[str, Any]:
        return self.values


class _InFile(Origin):
    strict, unsets = True, False  # TOML has types of its own, and no null

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def where(self, path: str) -> str:
        line = line_of(self.text, path)
        return f"{self.path}" + (f" line {line}" if line else "")


def line_of(text: str, field_path: str) -> int | None:
    """The line of a TOML file that sets `field_path` (`run.max_rounds`), or its table."""
    *tables, key = field_path.split(".")
    table = ""
    for number, line in enumerate(text.split("\n"), start=1):  # TOML ends lines at \n only
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            table = stripped.split("]", 1)[0].strip("[ \t")
            if table == field_path:
                return number
            continue
        if "=" not in stripped:
            continue
        name = stripped.split("=", 1)[0].strip().strip("\"'")
        if (table == ".".join(tables) and name == key) or (not table and name == field_path):
            return number
    return None


# -- the environment -----------------------------------------------------------------------
class EnvSource(_Checked):
    """`CONDUCTOR_<FIELD>` variables, a table's fields nested with `__`
    (`CONDUCTOR_RUN__MAX_ROUNDS`). Variables naming no setting (CONDUCTOR_HOME,
    CONDUCTOR_REQUIRE_DOCKER, ...) are not read; a variable that names a setting wrongly
    is refused with its name."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        prefix = str(self.config.get("env_prefix") or "")
        nesting = str(self.config.get("env_nested_delimiter") or "__")
        tree, names = _env_tree(os.environ, prefix, nesting, set(settings_cls.model_fields))
        self.values = checked(tree, settings_cls, _InEnv(names))


def _env_tree(
    environ: Mapping[str, str], prefix: str, nesting: str, top: set[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The variables' values nested as the settings are, and each leaf's variable name."""
    tree: dict[str, Any] = {}
    names: dict[str, str] = {}  # "run.max_rounds" -> "CONDUCTOR_RUN__MAX_ROUNDS"
    for variable, value in sorted(environ.items()):
        if not variable.startswith(prefix) or variable in NOT_SETTINGS:
            continue
        parts = variable[len(prefix) :].lower().split(nesting)
        if parts[0] not in top:
            continue
        target = tree
        for depth, part in enumerate(parts):
            path = ".".join(parts[: depth + 1])
            here = target.get(part)
            last = depth == len(parts) - 1
            if here is not None and (not isinstance(here, dict) or last):
                # CONDUCTOR_RUN=... beside CONDUCTOR_RUN__MAX_ROUNDS=...
                other = names.get(path) or _first_name(names, path)
                raise ConfigError(
                    f"environment variables {other} and {variable} both set {path}; "
                    "unset one of them."
                )
            if last:
                target[part] = value
                names[path] = variable
            else:
                target = target.setdefault(part, {})
    return tree, names


def _first_name(names: dict[str, str], path: str) -> str:
    """The variable behind a nested table of variables, to name it in a message."""
    return next(name for leaf, name in sorted(names.items()) if leaf.startswith(f"{path}."))


class _InEnv(Origin):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def where(self, path: str) -> str:
        return f"environment variable {self.names.get(path) or _first_name(self.names, path)}"


# -- flags ---------------------------------------------------------------------------------
class FlagOrigin(Origin):
    """Values from the command line (or a program's overrides), named by their flag."""

    def __init__(self, settings_cls: type[BaseModel]) -> None:
        self.flags = {f.path: f.flag for f in setting_fields(settings_cls)}

    def where(self, path: str) -> str:
        flag = self.flags.get(path)
        return f"command-line flag {flag}" if flag else f"command line ({path})"
