"""Which protections hold on this machine, per backend, for `conductor sandbox doctor`.

Each check says whether a protection holds here and why, from what the machine and a
live sandbox show (not from what the code intends): the cell's uid against the
runner's, the cgroup bounding the sandbox, the seccomp mode the cell runs under, the
host's Yama setting, and the user namespaces in use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROBE = (
    "import os\n"
    "status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
    "print(os.getuid(), status['Seccomp'].strip(), status['CapEff'].strip())\n"
)


@dataclass(frozen=True)
class Protection:
    name: str
    holds: bool | None  # None: not applicable or unknown here
    detail: str


def yama() -> Protection:
    path = Path("/proc/sys/kernel/yama/ptrace_scope")
    try:
        scope = path.read_text().strip()
    except OSError:
        return Protection(
            "Yama ptrace scope",
            None,
            "no Yama on this kernel: same-uid processes may ptrace each other and write "
            "/proc/PID/mem; the runner's uid separation is what keeps the cell out",
        )
    return Protection("Yama ptrace scope", scope != "0", f"kernel.yama.ptrace_scope = {scope}")


def _live(sandbox: object) -> tuple[list[str], dict]:
    result = sandbox.run(PROBE, timeout=30)  # type: ignore[attr-defined]
    session = getattr(sandbox, "_session", None)
    pong = dict(getattr(session, "preload", {}) or {})
    return result.stdout.split(), pong


def _uid_rows(words: list[str], pong: dict) -> list[Protection]:
    if len(words) != 3:
        return [Protection("uid separation", False, "the live probe did not run")]
    cell_uid, seccomp_mode, caps = int(words[0]), words[1], words[2]
    runner_uid = pong.get("runner_uid")
    separated = runner_uid is not None and runner_uid != cell_uid
    return [
        Protection(
            "uid separation",
            separated,
            f"runner uid {runner_uid}, cell uid {cell_uid}"
            + ("" if separated else ": the cell could signal, prlimit or ptrace the runner"),
        ),
        Protection("cell capabilities", caps.strip("0") == "", f"CapEff {caps}"),
        Protection(
            "seccomp",
            seccomp_mode == "2",
            "filter mode (allowlist, sandbox/policy/seccomp.py)"
            if seccomp_mode == "2"
            else f"Seccomp: {seccomp_mode}",
        ),
    ]


def docker_report() -> list[Protection]:
    from sandbox.docker.backend import DockerSandbox

    sandbox = DockerSandbox(pool_size=0)
    try:
        words, pong = _live(sandbox)
        limits = sandbox.limits
    finally:
        sandbox.close()
    return [
        *_uid_rows(words, pong),
        Protection(
            "cgroup bound",
            True,
            f"the container's cgroup: {limits.memory_mb} MB memory without swap, "
            f"{limits.pids} processes",
        ),
        Protection(
            "user namespace",
            None,
            "none (Docker's is daemon-wide); each container's cell has a host uid of its "
            "own instead, so per-user kernel limits are not shared",
        ),
        yama(),
    ]


def bwrap_report() -> list[Protection]:
    from sandbox.bwrap.backend import BwrapSandbox
    from sandbox.policy import cgroups

    sandbox = BwrapSandbox(warm=False)
    try:
        words, pong = _live(sandbox)
        privileged, limits = sandbox.privileged, sandbox.limits
    finally:
        sandbox.close()
    why_no_cgroup = cgroups.why_none() if privileged else "not root (cgroups are used as root)"
    memory = (
        f"its own cgroup v{cgroups.version()}: {limits.memory_bytes >> 20} MB for the whole "
        f"sandbox (memfd, shmem and page cache included), {limits.max_processes} processes"
        if why_no_cgroup is None
        else f"no cgroup ({why_no_cgroup}): only RLIMIT_AS per process, /dev/shm and tmpfs "
        "size caps and RLIMIT_NPROC; memfds and socket buffers of several processes "
        "together are NOT bounded (SysV shm and message queues are refused by seccomp)"
    )
    userns = (
        "none: bwrap runs as root with pid, net, ipc, uts and cgroup namespaces; new user "
        "namespaces are refused by seccomp"
        if privileged
        else f"an unprivileged one mapping uid {os.getuid()} to 10001 (runner and cell "
        "share it); nested ones disabled"
    )
    return [
        *_uid_rows(words, pong),
        Protection("cgroup bound", why_no_cgroup is None, memory),
        Protection("user namespace", None, userns),
        yama(),
    ]


REPORTS = {"docker": docker_report, "bwrap": bwrap_report}
