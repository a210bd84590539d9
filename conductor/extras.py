"""How to add an optional extra (serve, mcp, inspect, ray) to the environment running now.

This project is not on the public package index, where another, unrelated project
already holds the name `conductor`: `pip install 'conductor[serve]'` would install that
one. So the line printed names this checkout by its path, installed into the Python
running this command; without a checkout (a wheel), the extra's own requirements.
"""

from __future__ import annotations

import shlex
import sys
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
# The distribution's name (pyproject.toml): free on the public index, unlike `conductor`.
DISTRIBUTION = "conductor-metaprompt"


def install_command(extra: str) -> str:
    """The exact shell command that adds `extra` here."""
    python = shlex.quote(sys.executable)
    if (CHECKOUT / "pyproject.toml").is_file():
        target = shlex.quote(f"{CHECKOUT}[{extra}]")
        return f"{python} -m pip install -e {target}"
    needs = _requirements(extra)
    return f"{python} -m pip install {' '.join(shlex.quote(r) for r in needs)}"


def _requirements(extra: str) -> list[str]:
    """The extra's requirements as the installed distribution lists them."""
    marker = f'extra == "{extra}"'
    try:
        listed = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        listed = []
    return [r.split(";", 1)[0].strip() for r in listed if marker in r] or [extra]


def needs_extra(what: str, extra: str, missing: str | None = None) -> str:
    """The message for a feature whose extra is not installed."""
    gone = f" ({missing} is missing)" if missing else ""
    return f"{what} needs the `{extra}` extra{gone}: {install_command(extra)}"
