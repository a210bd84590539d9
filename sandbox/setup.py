"""`make run`'s sandbox set-up: provide the best sandbox this machine can have.

Run as `python -m sandbox.setup` (the Makefile does, before the TUI opens).
In order: a Docker engine that answers gets the sandbox image built (once); else
bubblewrap is installed with apt-get, as root or through password-less sudo, and
where neither is possible its Debian package is unpacked into the virtualenv (it
needs no privileges, only unprivileged user namespaces). When nothing works, one
short paragraph says what to do. It never fails `make run`: the TUI still opens and
says the same thing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

WHAT_TO_DO = (
    "No sandbox can run Expert Python's code on this machine yet, so the demo's "
    "programs will not run. Do one of these, then `make run` again: start a Docker "
    "engine (`dockerd`, or Docker Desktop; `conductor sandbox build` builds the image), "
    "or install bubblewrap (`sudo apt-get install bubblewrap`, `dnf install bubblewrap`, "
    "`pacman -S bubblewrap`) on a kernel that allows unprivileged user namespaces. "
    "To run code with no isolation at your own risk, pick “Sandbox: subprocess” in the "
    "TUI's palette (ctrl+p). `conductor sandbox doctor` says what works here and why not."
)

Say = Callable[[str], None]


def _run(cmd: list[str], say: Say, timeout: float = 900) -> bool:
    say("  $ " + " ".join(cmd))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        say(f"    failed: {exc}")
        return False
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        say("    failed: " + " / ".join(tail))
    return done.returncode == 0


def _forget_probes() -> None:
    from sandbox.bwrap import backend as bwrap_backend

    bwrap_backend._probe_reason.cache_clear()


# Seconds without a line from the image build after which `make run` says it is
# still at work: a newcomer must never look at a silent terminal and think it hung.
HEARTBEAT_S = 5.0


def _build_command() -> list[str]:
    return [str(Path(sys.executable).with_name("conductor")), "sandbox", "build"]


def _stream(cmd: list[str], say: Say, *, timeout: float = 1800) -> bool:
    """Run `cmd`, saying each line it prints as it comes, and a line of its own at least
    every HEARTBEAT_S seconds while it prints nothing; whether it succeeded."""
    import threading
    import time

    say("  $ " + " ".join(cmd))
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
    except OSError as exc:
        say(f"    failed: {exc}")
        return False
    started = time.monotonic()
    last = [started]  # when a line was last said, by the build or by the heartbeat
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(0.5):
            now = time.monotonic()
            if now - last[0] >= HEARTBEAT_S:
                say(f"    … still building ({now - started:.0f} s so far)")
                last[0] = now

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            last[0] = time.monotonic()
            say("    " + line.rstrip())
            if last[0] - started > timeout:
                proc.kill()
                say("    failed: the build took too long")
                break
        proc.wait()
    finally:
        done.set()
        beat.join(2)
    return proc.returncode == 0


def _build_running(log: Path) -> bool:
    """Whether an image build this set-up started in the background still runs."""
    pid_file = log.with_suffix(".pid")
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _build_in_background(say: Say) -> bool:
    """Start the image build detached, its output in a log under the data directory;
    whether it started (or one already runs)."""
    from record.home import home_dir

    log = home_dir() / "logs" / "sandbox-build.log"
    if _build_running(log):
        say(f"The sandbox image is still building in the background (log: {log}).")
        return True
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                _build_command(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
    except OSError as exc:
        say(f"  could not start the image build in the background: {exc}")
        return False
    log.with_suffix(".pid").write_text(str(proc.pid))
    say(
        "A Docker engine answers but the sandbox image is not built yet: it is building in "
        f"the background (a few minutes; log: {log}). This session runs code in bubblewrap; "
        "once the image is ready, runs use Docker (`conductor sandbox doctor` says which)."
    )
    return True


def docker_ready(say: Say, *, wait: bool = True) -> bool:
    """True when Docker can run code, building the image if the engine answers; with
    `wait` false (bubblewrap works meanwhile) the build goes to the background."""
    from sandbox.docker.backend import daemon_problem
    from sandbox.registry import probe

    if daemon_problem() is not None:
        return False
    if probe("docker") is None:
        return True
    if not wait:
        _build_in_background(say)
        return False
    say("A Docker engine answers; building the sandbox image (once, a few minutes):")
    _stream(_build_command(), say, timeout=1800)
    return probe("docker") is None


def _privileged_prefix() -> list[str] | None:
    """[] as root, ["sudo", "-n"] with password-less sudo, else None."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        ok = subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=20)
        if ok.returncode == 0:
            return ["sudo", "-n"]
    return None


def _unpack_into_venv(say: Say) -> bool:
    """Fetch bubblewrap's Debian package (no root needed) and unpack it into .venv/bin."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return False
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            if not _run(["apt-get", "download", "bubblewrap"], say, timeout=300):
                return False
        finally:
            os.chdir(cwd)
        debs = list(Path(tmp).glob("bubblewrap_*.deb"))
        if not debs or not _run(["dpkg-deb", "-x", str(debs[0]), tmp + "/root"], say):
            return False
        found = Path(tmp) / "root" / "usr" / "bin" / "bwrap"
        if not found.exists():
            return False
        shutil.copy2(found, bin_dir / "bwrap")
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    say(f"  bubblewrap unpacked to {bin_dir / 'bwrap'} (on PATH for `make run`).")
    return True


def bwrap_ready(say: Say) -> bool:
    """True when bubblewrap can run code, installing it first where that is possible."""
    from sandbox.registry import probe

    if probe("bwrap") is None:
        return True
    if shutil.which("bwrap") is None:
        prefix = _privileged_prefix()
        if prefix is not None and shutil.which("apt-get"):
            say("Installing bubblewrap with apt-get (no Docker engine here).")
            if not _run([*prefix, "apt-get", "install", "-y", "bubblewrap"], say):
                _run([*prefix, "apt-get", "update"], say)
                _run([*prefix, "apt-get", "install", "-y", "bubblewrap"], say)
        if shutil.which("bwrap") is None:
            say("Fetching bubblewrap's package into the virtualenv instead.")
            _unpack_into_venv(say)
        _forget_probes()
    return probe("bwrap") is None


def set_up(say: Say = print) -> str | None:
    """The sandbox now ready ("docker" or "bwrap"), or None after saying what to do.
    Where bubblewrap already works, a missing Docker image builds in the background and
    the TUI opens at once on bubblewrap."""
    from sandbox.registry import probe

    bwrap_now = probe("bwrap") is None
    if docker_ready(say, wait=not bwrap_now):
        return "docker"
    if bwrap_now or bwrap_ready(say):
        return "bwrap"
    say(WHAT_TO_DO)
    return None


def main() -> int:
    chosen = set_up()
    if chosen:
        print(f"Sandbox ready: {chosen}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
