"""Models served on this machine: how conductor names them and whether they cost money.

llama.cpp's server reports the model as the path it loaded (an absolute path to a GGUF
file) unless given an alias; a transcript names the model by its file's name instead,
so it reads the same on every machine and leaks no home directory. A server on this
machine (localhost, or a GGUF file) charges nothing, so its missing price is no news;
an unpriced hosted model is worth one warning per process, not one per model object.
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import PurePosixPath, PureWindowsPath
from urllib.parse import urlsplit

log = logging.getLogger("conductor.experts")
_warned_unpriced: set[str] = set()


def model_id(raw: str) -> str:
    """The model's name as a transcript shows it: a file path becomes its file's name;
    anything else (`gpt-4o`, `Qwen/Qwen2.5-Coder-1.5B`) is kept as it is."""
    name = raw.strip()
    if name.startswith(("/", "~", "\\")) or PureWindowsPath(name).drive:
        return PureWindowsPath(name).name if "\\" in name else PurePosixPath(name).name
    if name.lower().endswith(".gguf"):
        return PurePosixPath(name.replace("\\", "/")).name
    return raw


def is_local(base_url: str, model: str = "") -> bool:
    """Whether the server runs on this machine (or the model is a GGUF file)."""
    if model.lower().endswith(".gguf"):
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    if host in {"localhost", "localhost.localdomain"} or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def warn_unpriced(model: str, base_url: str) -> None:
    """Say once per process that a hosted model's calls are counted as costing $0."""
    if is_local(base_url, model) or model in _warned_unpriced:
        return
    _warned_unpriced.add(model)
    log.warning("no price known for %r: its calls are counted as costing $0", model)
