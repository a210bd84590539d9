"""Configuration: run limits and user settings, each field declared once.

Precedence, highest first: a CLI flag; a `CONDUCTOR_<FIELD>` environment variable (a
table's fields nested with `__`: `CONDUCTOR_RUN__MAX_ROUNDS`); the user's config file
(`config.toml` in the user config dir, or `$CONDUCTOR_CONFIG`); the defaults. An empty
(or `none`) variable or flag value unsets a field. All data lives under one directory,
`$CONDUCTOR_HOME` (default: the platform's user data dir).

Where things are:
- `declaration.py`: the top-level fields; `conductor_kernel/limits/run_config.py`: `RunConfig`,
  the `[run]` table. Each field is one `setting(...)` declaration: type, default,
  description, bounds (`ge`/`gt`/`le`/`lt`, or a `Literal` of allowed words), the flag,
  and the flag's metavar.
- `fields.py` reads those declarations (what a field allows, in words; its check).
- `settings.py`: `Settings`, the declared fields read by pydantic-settings from
  `sources.py`: the file and the variables, each value checked with its origin named.
- `flags.py`: the argparse flags made from the declarations, and the settings from them.
- `table.py`: the README's table of settings.

Adding a setting is a change in one place. For example a prompting method:

    method: Literal["meta", "cot"] = setting(
        "meta", flag="--method", description="How a run prompts: ...",
    )

in `Declaration` (or in `RunConfig` if the loop reads it from the run's config: then it is
`run.method`, `CONDUCTOR_RUN__METHOD`). A field's type is bool, int, float, str, a
`Literal` of words, or one of these or None; another type needs its words and check in
`fields.py` first (the test below says so). From that line come `--method {meta,cot}` on every command that starts runs (solve, batch, tui),
`CONDUCTOR_METHOD`, `method = "..."` in the file, the check and its message. Then
`python -m conductor.config` prints the README's settings table to paste in (a test
compares them), and tests/conductor/test_config_declared.py checks the declaration is
complete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conductor_kernel.errors import ConfigError
from record.home import config_path, home_dir, runs_dir

if TYPE_CHECKING:
    from conductor.config.settings import Settings
    from conductor_kernel.limits.run_config import RunConfig

__all__ = ["RunConfig", "Settings", "config_path", "home_dir", "load_settings", "runs_dir"]


def __getattr__(name: str) -> Any:
    # `Settings` brings pydantic-settings, which the command line does not need to build
    # its flags (`--help` stays quick): it is loaded when first asked for.
    if name == "Settings":
        from conductor.config.settings import Settings

        return Settings
    if name == "RunConfig":  # pydantic too
        from conductor_kernel.limits.run_config import RunConfig

        return RunConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from defaults, then the config file, then env, then `overrides` (flags,
    nested as the settings are: `{"run": {"max_rounds": 5}}`; a None is not given).

    Every value is checked as it is read; a bad one raises `ConfigError` naming where it
    came from and what is allowed.
    """
    from pydantic import ValidationError

    from conductor.config.settings import Settings
    from conductor.config.sources import FlagOrigin, checked

    given = _without_none(overrides or {})
    flags = checked(given, Settings, FlagOrigin(Settings))
    try:
        return Settings(**flags)
    except ValidationError as exc:  # each source checked its values: not expected
        raise ConfigError(f"settings: {exc}") from None


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {
        key: _without_none(value) if isinstance(value, dict) else value
        for key, value in values.items()
        if value is not None
    }
