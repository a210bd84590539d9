"""Configuration: run limits and user settings, with documented precedence.

Precedence, highest first: a CLI flag; a `CONDUCTOR_<FIELD>` environment variable; the
user's config file (`config.toml` in the user config dir, or `$CONDUCTOR_CONFIG`); the
defaults below. All data lives under one directory, `$CONDUCTOR_HOME` (default: the
platform's user data dir).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from conductor_kernel.errors import ConfigError
from conductor_kernel.run_config import RunConfig
from record.home import config_path, home_dir, runs_dir

__all__ = ["RunConfig", "Settings", "config_path", "home_dir", "load_settings", "runs_dir"]


@dataclass
class Settings:
    """User settings beyond one run's limits."""

    model: str = "auto"
    """Meta model: `auto` (by the keys set), `demo`, `anthropic:NAME`, `openai:NAME`."""
    expert_model: str = ""
    """Expert model; empty means the same as the meta model."""
    sandbox: str = "auto"
    """Sandbox backend: auto (docker, else bwrap), docker, bwrap, subprocess (unsafe)."""
    notebook: str = ""
    """Notebook database path; empty means notebook.db under the data directory."""
    recall: bool = True
    """Put notes from the notebook into the first meta turn."""
    learn: bool = True
    """Distill each finished run into the notebook."""
    model_timeout_s: float = 60.0
    """Seconds a model call may go without a byte from the server before it is retried."""
    run: RunConfig = field(default_factory=RunConfig)


# -- validation ----------------------------------------------------------------------------
# Every field's allowed values, checked at load whatever the source. A value that breaks
# a rule is refused with the source named (flag, variable, file and line) and the rule.
_POSITIVE_INT = Annotated[int, Field(ge=1)]
_POSITIVE_FLOAT = Annotated[float, Field(gt=0)]
RULES: dict[str, tuple[Any, str]] = {
    "model": (str, "a model name: auto, demo, anthropic:NAME, openai:NAME"),
    "expert_model": (str, "a model name, or empty for the meta model"),
    "sandbox": (
        Literal["auto", "docker", "bwrap", "subprocess"],
        "auto, docker, bwrap or subprocess",
    ),
    "notebook": (str, "a file path, or empty for notebook.db in the data directory"),
    "recall": (bool, "true or false"),
    "learn": (bool, "true or false"),
    "model_timeout_s": (
        Annotated[float, Field(gt=0, le=3600)],
        "seconds, more than 0 and at most 3600",
    ),
    "run.max_rounds": (Annotated[int, Field(ge=1, le=1000)], "a whole number from 1 to 1000"),
    "run.last_round_notice": (bool, "true or false"),
    "run.last_round_notice_at": (_POSITIVE_INT | None, "a whole number, 1 or more, or unset"),
    "run.max_tokens": (_POSITIVE_INT | None, "a whole number, 1 or more, or unset"),
    "run.max_cost_usd": (_POSITIVE_FLOAT | None, "dollars, more than 0, or unset"),
    "run.max_wall_s": (_POSITIVE_FLOAT | None, "seconds, more than 0, or unset"),
    "run.python": (bool, "true or false"),
    "run.python_timeout_s": (
        Annotated[float, Field(gt=0, le=3600)],
        "seconds, more than 0 and at most 3600",
    ),
    "run.output_cap_chars": (_POSITIVE_INT, "a whole number, 1 or more"),
    "run.expert_reply_cap_chars": (_POSITIVE_INT, "a whole number, 1 or more"),
    "run.parallel_experts": (bool, "true or false"),
    "run.calls_and_answer": (Literal["calls_first", "answer"], "calls_first or answer"),
    "run.prompt_cache": (bool, "true or false"),
    "run.expert_max_tokens": (_POSITIVE_INT, "a whole number, 1 or more"),
    "run.meta_max_tokens": (_POSITIVE_INT, "a whole number, 1 or more"),
}
# The command-line flag that sets each field, for messages.
FLAGS = {
    "model": "--model",
    "expert_model": "--expert-model",
    "sandbox": "--sandbox",
    "notebook": "--notebook",
    "recall": "--no-recall",
    "learn": "--no-learn",
    "model_timeout_s": "--model-timeout",
    "run.max_rounds": "--max-rounds",
    "run.max_tokens": "--max-tokens",
    "run.max_cost_usd": "--max-cost",
    "run.python": "--no-python",
    "run.python_timeout_s": "--python-timeout",
}
# Written as a value (in the environment, or a flag), these unset a field: an optional
# limit is lifted, any other field goes back to its default.
UNSET_WORDS = ("", "none", "null", "unset")

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _validate(path: str, value: Any, where: str, *, strict: bool = False) -> Any:
    """`value` checked against the field's rule. A config file's TOML values are typed,
    so they are taken as written (`max_rounds = true` is no number, `python = "yes"` no
    boolean); text from a variable or a flag is parsed."""
    kind, allowed = RULES[path]
    adapter = _ADAPTERS.setdefault(path, TypeAdapter(kind))
    try:
        return adapter.validate_python(value, strict=strict)
    except ValidationError as exc:
        error = exc
        if strict:
            try:
                adapter.validate_python(value)
            except ValidationError as lax:
                error = lax  # both refuse it: the lax reason is plainer ("fractional part")
        reason = error.errors()[0].get("msg", "invalid") if error.errors() else "invalid"
        raise ConfigError(
            f"{where}: {path} = {value!r} is not allowed ({reason}); allowed: {allowed}. "
            "Fix or unset it."
        ) from None


class _Source:
    """Where values come from, to name them in messages."""

    def __init__(self, kind: str, text: str = "", path: str = "") -> None:
        self.kind, self.text, self.path = kind, text, path

    def where(self, field_path: str, raw_key: str | None = None) -> str:
        if self.kind == "file":
            line = _line_of(self.text, field_path)
            return f"{self.path}" + (f" line {line}" if line else "")
        if self.kind == "env":
            return f"environment variable {raw_key}"
        flag = FLAGS.get(field_path)
        return f"command-line flag {flag}" if flag else f"command line ({field_path})"


def _line_of(text: str, field_path: str) -> int | None:
    """The line of a TOML file that sets `field_path` (run.max_rounds...), if found."""
    *tables, key = field_path.split(".")
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            table = stripped.strip("[] \t")
            continue
        name = stripped.split("=", 1)[0].strip().strip('"')
        if "=" in stripped and (
            (table == ".".join(tables) and name == key) or (not table and name == field_path)
        ):
            return number
    return None


def _apply(obj: Any, values: dict[str, Any], source: _Source, prefix: str = "") -> Any:
    names = {f.name for f in fields(obj)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        raw_key = None
        if isinstance(value, tuple):  # (env var name, value)
            raw_key, value = value
        if key not in names:
            raise ConfigError(
                f"{source.where(path, raw_key)}: unknown setting {path!r}; known: "
                f"{', '.join(sorted(prefix + n for n in names))}"
            )
        current = getattr(obj, key)
        if is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{source.where(path, raw_key)}: {path} is a table of settings "
                    f"({', '.join(f.name for f in fields(current))}), not a value"
                )
            changes[key] = _apply(current, value, source, prefix=f"{path}.")
            continue
        if (
            source.kind != "file"
            and isinstance(value, str)
            and value.strip().lower() in UNSET_WORDS
        ):
            changes[key] = _default_of(type(obj), key)
            continue
        if isinstance(value, dict):  # a table, or CONDUCTOR_MODEL__X, where a value goes
            raw_key = raw_key or _first_variable(value)
            raise ConfigError(
                f"{source.where(path, raw_key)}: {path} is one value, not a table of settings; "
                "set it directly."
            )
        changes[key] = _validate(
            path, value, source.where(path, raw_key), strict=source.kind == "file"
        )
    return replace(obj, **changes)


def _first_variable(table: dict[str, Any]) -> str | None:
    """The environment variable behind a nested env table, to name it in a message."""
    for value in table.values():
        if isinstance(value, tuple):
            return value[0]
        if isinstance(value, dict):
            return _first_variable(value)
    return None


def _default_of(cls: type, name: str) -> Any:
    for f in fields(cls):
        if f.name == name:
            if f.default is not MISSING:
                return f.default
            if f.default_factory is not MISSING:
                return f.default_factory()
    return None


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from defaults, then the config file, then env, then `overrides` (flags).

    Every value is checked against `RULES` as it is read; a bad one raises `ConfigError`
    naming where it came from and what is allowed.
    """
    settings = Settings()
    path = config_path()
    if os.environ.get("CONDUCTOR_CONFIG") and (not path.exists() or path.is_dir()):
        raise ConfigError(
            f"CONDUCTOR_CONFIG names {path}, which is not a file. Create it, or unset "
            "CONDUCTOR_CONFIG to use the default config file."
        )
    if path.exists() and not path.is_dir():
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{path}: not valid TOML ({exc}); fix the file or move it away."
            ) from exc
        settings = _apply(settings, data, _Source("file", text, str(path)))
    env: dict[str, Any] = {}
    for key, value in os.environ.items():
        if not key.startswith("CONDUCTOR_") or key in ("CONDUCTOR_HOME", "CONDUCTOR_CONFIG"):
            continue
        parts = key[len("CONDUCTOR_") :].lower().split("__")
        if parts[0] not in {f.name for f in fields(Settings)}:
            continue  # CONDUCTOR_REQUIRE_DOCKER and friends are not settings
        target = env
        for depth, part in enumerate(parts):
            here = target.get(part)
            last = depth == len(parts) - 1
            if here is not None and (isinstance(here, tuple) or last):
                # CONDUCTOR_RUN=... beside CONDUCTOR_RUN__MAX_ROUNDS=...
                other = here[0] if isinstance(here, tuple) else _first_variable(here)
                raise ConfigError(
                    f"environment variables {other} and {key} both set "
                    f"{'.'.join(parts[: depth + 1])}; unset one of them."
                )
            if last:
                target[part] = (key, value)
            else:
                target = target.setdefault(part, {})
    if env:
        settings = _apply(settings, env, _Source("env"))
    if overrides:
        clean = {k: v for k, v in overrides.items() if v is not None}
        settings = _apply(settings, clean, _Source("flag"))
    return settings
