"""Choosing a sandbox backend by name, or the best one this machine has.

`auto` takes Docker, else bubblewrap, else refuses with a message saying how to get
either. The unsafe subprocess backend is used only when asked for by name, and warns.
Backends are imported lazily: the docker SDK is not loaded for a bubblewrap run.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable

from conductor_kernel.interfaces import Sandbox, SandboxUnavailable

log = logging.getLogger("conductor.sandbox")

# name -> (module, class). Each class has `probe() -> str | None` (None: usable here;
# else why not) and a constructor taking keyword options.
BACKENDS: dict[str, tuple[str, str]] = {
    "docker": ("sandbox.docker.backend", "DockerSandbox"),
    "bwrap": ("sandbox.bwrap.backend", "BwrapSandbox"),
    "subprocess": ("sandbox.subprocess_backend", "SubprocessSandbox"),
}
AUTO_ORDER = ("docker", "bwrap")

HOW_TO_GET_ONE = (
    "No sandbox can run Python here. Install and start Docker (e.g. `apt-get install "
    "docker.io && dockerd &`, then `conductor sandbox build`), or install bubblewrap "
    "(`apt-get install bubblewrap`). To run code without isolation at your own risk, "
    "pass `--sandbox subprocess`. `conductor sandbox doctor` tells what works here."
)


def backend_class(name: str) -> type:
    if name not in BACKENDS:
        known = ", ".join([*BACKENDS, "auto"])
        raise SandboxUnavailable(f"unknown sandbox backend {name!r}; known: {known}")
    module, cls = BACKENDS[name]
    return getattr(importlib.import_module(module), cls)


def probe(name: str) -> str | None:
    """None when backend `name` can run code here; otherwise the reason it cannot."""
    try:
        cls = backend_class(name)
    except ImportError as exc:
        return f"not available: {exc}"
    probe_fn: Callable[[], str | None] | None = getattr(cls, "probe", None)
    return probe_fn() if probe_fn else None


def resolve_name(name: str = "auto") -> str:
    if name != "auto":
        return name
    reasons = []
    for candidate in AUTO_ORDER:
        why_not = probe(candidate)
        if why_not is None:
            return candidate
        reasons.append(f"{candidate}: {why_not}")
    raise SandboxUnavailable(HOW_TO_GET_ONE + " (" + "; ".join(reasons) + ")")


def open_sandbox(name: str = "auto", **options: object) -> Sandbox:
    """A ready sandbox for one conductor run."""
    chosen = resolve_name(name)
    if chosen != "auto" and name != "auto":
        why_not = probe(chosen)
        if why_not is not None:
            raise SandboxUnavailable(f"sandbox {chosen!r} cannot run here: {why_not}")
    if chosen == "subprocess":
        log.warning("the subprocess sandbox isolates nothing: code runs as you, on this host")
    return backend_class(chosen)(**options)


def leave_quickly() -> None:
    """The process is about to exit on a stop signal: end every sandbox it holds without
    waiting for any (no container removal, no warm-up, no thread joined), and leave the
    cleanup to what outlives it: a detached reaper for Docker's containers, the kernel
    for bubblewrap's (--die-with-parent). Only backends already loaded are touched."""
    if "sandbox.docker.backend" in sys.modules:
        from sandbox.docker import reaper

        reaper.leave_quickly()
    if "sandbox.bwrap.backend" in sys.modules:
        from sandbox.bwrap import backend as bwrap

        bwrap.leave_quickly()
