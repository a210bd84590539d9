"""Writing one top-level setting into the user's config file (`config.toml`).

The TUI saves a model chosen there so the next `conductor` reads it too. Only the one
line is changed: the user's comments, other settings and tables stay as written. The
result is read back, and loaded as settings are; if either fails, the file is put back
as it was and `ConfigError` says why.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from conductor_kernel.errors import ConfigError
from record.home import config_path

_TABLE = re.compile(r"^\s*\[")


def save_setting(name: str, value: str) -> Path:
    """Set the top-level setting `name` to the string `value` in the config file (made
    if missing); returns the file's path."""
    from conductor.config import Settings, load_settings

    if name not in Settings.model_fields:
        raise ConfigError(f"{name!r} is not a setting (see `python -m conductor.config`)")
    path = config_path()
    before = path.read_text(encoding="utf-8") if path.exists() else None
    lines = (before or "").splitlines()
    line = f"{name} = {toml_string(value)}"
    own = re.compile(rf"^\s*{re.escape(name)}\s*=")
    top = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    at = next((i for i in range(top) if own.match(lines[i])), None)
    if at is None:
        lines.insert(0, line)
    else:
        lines[at] = line
    _write(path, "\n".join(lines) + "\n")
    try:
        if tomllib.loads(path.read_text(encoding="utf-8")).get(name) != value:
            raise ConfigError(f"{path}: {name} could not be written on one line")
        load_settings()
    except (ConfigError, tomllib.TOMLDecodeError) as exc:
        if before is None:
            path.unlink()
        else:
            _write(path, before)
        raise ConfigError(f"{path} was left as it was: {exc}") from None
    return path


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def toml_string(value: str) -> str:
    """`value` as a TOML basic string: quotes, backslashes and control characters
    escaped (TOML allows none of them bare, DEL included)."""
    out = []
    for char in value:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ConfigError(f"{value!r} holds a lone surrogate, which no config file can")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _write(path: Path, text: str) -> None:
    """Replace the file whole (a crash leaves the old one or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    spare = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    spare.write_text(text, encoding="utf-8")
    spare.replace(path)
