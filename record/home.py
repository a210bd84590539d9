"""Where conductor keeps its data and finds its config file.

All data lives under one directory, `$CONDUCTOR_HOME` (default: the platform's user data
dir); the config file is `$CONDUCTOR_CONFIG`, else `config.toml` in the user config dir.
"""

from __future__ import annotations

import os
from pathlib import Path

from conductor_kernel.errors import ConfigError


def home_path() -> Path:
    """Where the data directory is (`$CONDUCTOR_HOME`, else the platform's user data
    dir), without making it."""
    env = os.environ.get("CONDUCTOR_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("conductor", appauthor=False))


def home_dir() -> Path:
    """The data directory, made if missing."""
    return _make_folder(home_path())


def _make_folder(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a read-only file system, no permission, a file in the way
        from record.writable import why_unwritable

        cause = why_unwritable(path, exc) or str(exc.strerror or exc)
        raise ConfigError(
            f"cannot create the data folder {path}: {cause}. Point CONDUCTOR_HOME (or "
            "--home) at a writable folder."
        ) from None
    return path


def config_path() -> Path:
    env = os.environ.get("CONDUCTOR_CONFIG")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("conductor", appauthor=False)) / "config.toml"


def runs_dir() -> Path:
    return _make_folder(home_dir() / "runs")


# Where the home keeps transcripts, relative to it: solves and imports in runs/, and each
# batch (batches/ID/runs/), ablation or comparison in a folder of its own one level down.
TRANSCRIPT_GLOBS = ("runs/*.jsonl", "*/*/runs/*.jsonl")


def transcript_files(home: Path) -> list[Path]:
    """Every transcript the home holds, in a stable order (what `runs reindex` reads)."""
    found = {path for pattern in TRANSCRIPT_GLOBS for path in home.glob(pattern)}
    return sorted(found)
