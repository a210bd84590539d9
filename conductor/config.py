"""Configuration: run limits and user settings, with documented precedence.

Precedence, highest first: a CLI flag; a `CONDUCTOR_<FIELD>` environment variable; the
user's config file (`config.toml` in the user config dir, or `$CONDUCTOR_CONFIG`); the
defaults below. All data lives under one directory, `$CONDUCTOR_HOME` (default: the
platform's user data dir).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from conductor.errors import ConfigError


def home_dir() -> Path:
    """The data directory: `$CONDUCTOR_HOME`, else the platform's user data dir."""
    env = os.environ.get("CONDUCTOR_HOME")
    if env:
        path = Path(env).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("conductor", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_path() -> Path:
    env = os.environ.get("CONDUCTOR_CONFIG")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("conductor", appauthor=False)) / "config.toml"


def runs_dir() -> Path:
    path = home_dir() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class RunConfig:
    """What one conductor run may do. Every field can be set by flag, env or file."""

    max_rounds: int = 15
    """Meta-model turns at most; the run ends without an answer past it."""
    last_round_notice: bool = True
    """Tell the meta model, in the round before the limit, that it must answer now."""
    last_round_notice_at: int | None = None
    """Round whose user message carries that notice; unset: the round before the limit."""
    max_tokens: int | None = None
    """Total tokens (meta and experts, input and output) a run may spend."""
    max_cost_usd: float | None = None
    """Dollars a run may spend, by the price table."""
    max_wall_s: float | None = None
    """Seconds a run may take."""
    python: bool = True
    """Offer Expert Python and run its code in the sandbox."""
    python_timeout_s: float = 10.0
    """Seconds each sandboxed program may run."""
    output_cap_chars: int = 4000
    """Characters of each stream of program output shown to the meta model."""
    expert_reply_cap_chars: int = 20000
    """Characters of an expert's reply shown to the meta model."""
    parallel_experts: bool = True
    """Dispatch several calls of one turn concurrently."""
    calls_and_answer: str = "calls_first"
    """A turn with calls and an answer: `calls_first` (as the paper) or `answer`."""
    prompt_cache: bool = True
    """Ask the provider to cache the growing meta history."""
    expert_max_tokens: int = 4096
    """Output token cap per expert reply; a reply cut there is marked truncated."""
    meta_max_tokens: int = 4096
    """Output token cap per meta-model turn; a turn cut there is never acted on."""

    def limits(self) -> dict[str, Any]:
        return {
            "max_rounds": self.max_rounds,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "max_wall_s": self.max_wall_s,
            "python_timeout_s": self.python_timeout_s,
        }


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
    run: RunConfig = field(default_factory=RunConfig)


def _coerce(value: str, current: Any, name: str, source: str) -> Any:
    kind = type(current)
    try:
        if isinstance(current, bool):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if current is None:
            return float(value) if "." in value else int(value)
        return kind(value)
    except ValueError as exc:
        raise ConfigError(
            f"{source}: {name}={value!r} is not a valid {kind.__name__}; fix or unset it."
        ) from exc


def _apply(obj: Any, values: dict[str, Any], source: str) -> Any:
    names = {f.name for f in fields(obj)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key not in names:
            raise ConfigError(
                f"{source}: unknown setting {key!r}; known: {', '.join(sorted(names))}"
            )
        current = getattr(obj, key)
        if isinstance(value, dict):
            changes[key] = _apply(current, value, source)
        elif isinstance(value, str) and not isinstance(current, str):
            changes[key] = _coerce(value, current, key, source)
        else:
            changes[key] = value
    return replace(obj, **changes)


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from defaults, then the config file, then env, then `overrides` (flags)."""
    settings = Settings()
    path = config_path()
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: not valid TOML ({exc}); fix the file or move it away."
            ) from exc
        settings = _apply(settings, data, str(path))
    env: dict[str, Any] = {}
    for key, value in os.environ.items():
        if not key.startswith("CONDUCTOR_") or key in ("CONDUCTOR_HOME", "CONDUCTOR_CONFIG"):
            continue
        parts = key[len("CONDUCTOR_") :].lower().split("__")
        if parts[0] not in {f.name for f in fields(Settings)}:
            continue  # CONDUCTOR_REQUIRE_DOCKER and friends are not settings
        target = env
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    if env:
        settings = _apply(settings, env, "environment")
    if overrides:
        clean = {k: v for k, v in overrides.items() if v is not None}
        settings = _apply(settings, clean, "command line")
    return settings
