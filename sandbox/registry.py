"""Choosing a sandbox backend by name, or the best one this machine has.

`auto` takes Docker, else bubblewrap, else refuses with a message saying how to get
either. The unsafe subprocess backend is used only when asked for by name, and warns.
Backends are imported lazily: the docker SDK is not loaded for a bubblewrap run.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
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

UNISOLATED = (
    "To run code without isolation at your own risk, pass `--sandbox subprocess` (in the "
    "TUI, pick “Sandbox: subprocess” from the palette)."
)
HOW_TO_GET_ONE = (
    "No sandbox can run Python here. Install and start Docker (e.g. `apt-get install "
    "docker.io && dockerd &`, then `conductor sandbox build`), or install bubblewrap "
    f"(`apt-get install bubblewrap`). {UNISOLATED} `conductor sandbox doctor` tells what "
    "works here."
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


def usable_instead(name: str) -> str:
    """A sentence naming the isolating backend that works here when `name` does not (a
    user who asked for Docker learns that bubblewrap would run), else how to run without
    isolation."""
    for candidate in AUTO_ORDER:
        if candidate != name and probe(candidate) is None:
            return (
                f" The {candidate} sandbox works here: pass `--sandbox {candidate}` (in the "
                f"TUI, pick “Sandbox: {candidate}” from the palette)."
            )
    return " " + UNISOLATED


def why_unusable(name: str) -> str | None:
    """None when `name` (a backend or `auto`) can run code here; else the whole message,
    with the backend that would work instead when there is one."""
    if name == "auto":
        try:
            resolve_name(name)
        except SandboxUnavailable as exc:
            return str(exc)
        return None
    why_not = probe(name)
    if why_not is None:
        return None
    return f"sandbox {name!r} cannot run here: {why_not}.{usable_instead(name)}"


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
    if name != "auto":
        problem = why_unusable(chosen)
        if problem is not None:
            raise SandboxUnavailable(problem)
    if chosen == "subprocess":
        _warn_once_unisolated()
    return backend_class(chosen)(**options)


_warned: list[bool] = []  # the warning below, given in this process
_warned_lock = threading.Lock()


def _warn_once_unisolated() -> None:
    """Said once a process: a batch opens a sandbox per item (and for its checks), and
    the same line thrice is noise that hides the rest."""
    with _warned_lock:
        if _warned:
            return
        _warned.append(True)
    log.warning("the subprocess sandbox isolates nothing: code runs as you, on this host")


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
