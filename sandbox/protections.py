"""Which protections hold on this machine, per backend, for `conductor sandbox doctor`.

Each check says whether a protection holds here and why, from what the machine and a
live sandbox show (not from what the code intends): the cell's uid against the
runner's, its capability sets and bounding set, the seccomp mode and what an unlisted
call answers, the socket classes refused, how a cell's Python starts, what the sandbox
shows of the host's memory, load and uptime, the cgroup bounding the sandbox and, kind
by kind, which kernel memory that bound is charged for (sandbox/bounds.py), the host's
Yama setting, and the user namespaces in use.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.bounds import measure_charges

PROBE = r"""
import ctypes, errno, json, os, socket, sys, time
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(1000)
unlisted = errno.errorcode.get(ctypes.get_errno(), "")
def refused(fn):
    try:
        fn()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return None
def meminfo():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None
print(json.dumps({
    "uid": os.getuid(),
    "seccomp": status["Seccomp"].strip(),
    "cap_eff": status["CapEff"].strip(),
    "cap_bnd": status["CapBnd"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(),
    "unlisted": unlisted,
    "netlink": refused(lambda: socket.socket(16, 3, 0)),
    "rcvbuf": refused(lambda: socket.socket().setsockopt(1, 8, 1 << 20)),
    "home": os.environ.get("HOME"),
    "user_site": os.environ.get("PYTHONNOUSERSITE"),
    "safe_path": os.environ.get("PYTHONSAFEPATH"),
    "memtotal_kb": meminfo(),
    "boottime_s": time.clock_gettime(7),  # CLOCK_BOOTTIME
}))
"""


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


def _live(sandbox: object) -> tuple[dict, dict]:
    result = sandbox.run(PROBE, timeout=30)  # type: ignore[attr-defined]
    session = getattr(sandbox, "_session", None)
    pong = dict(getattr(session, "preload", {}) or {})
    try:
        seen = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        seen = {}
    return seen, pong


def _host_memtotal_kb() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return None


def _cell_rows(seen: dict, pong: dict) -> list[Protection]:
    if not seen:
        return [Protection("uid separation", False, "the live probe did not run")]
    cell_uid = seen["uid"]
    runner_uid = pong.get("runner_uid")
    separated = runner_uid is not None and runner_uid != cell_uid
    caps_clear = int(seen["cap_eff"], 16) == 0
    bounding_empty = int(seen["cap_bnd"], 16) == 0
    unlisted = seen.get("unlisted") or "allowed"
    host_kb, cell_kb = _host_memtotal_kb(), seen.get("memtotal_kb")
    boot = float(seen.get("boottime_s") or 0)
    host_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    return [
        Protection(
            "uid separation",
            separated,
            f"runner uid {runner_uid}, cell uid {cell_uid}"
            + ("" if separated else ": the cell could signal, prlimit or ptrace the runner"),
        ),
        Protection(
            "cell capabilities",
            caps_clear and bounding_empty and seen.get("no_new_privs") == "1",
            f"CapEff {seen['cap_eff']}, bounding set {seen['cap_bnd']}, "
            f"no_new_privs {seen.get('no_new_privs')}: "
            + (
                "none held, none any exec could gain"
                if bounding_empty
                else "a setuid or file-capability binary could gain what the bounding set holds"
            ),
        ),
        Protection(
            "seccomp",
            seen["seccomp"] == "2" and unlisted == "ENOSYS",
            f"filter mode {seen['seccomp']} (allowlist, sandbox/policy/seccomp.py); an "
            f"unlisted call answers {unlisted}",
        ),
        Protection(
            "socket classes",
            bool(seen.get("netlink")) and bool(seen.get("rcvbuf")),
            f"netlink sockets refused ({seen.get('netlink') or 'NOT refused'}), raising "
            f"SO_RCVBUF refused ({seen.get('rcvbuf') or 'NOT refused'}); unix, TCP and UDP "
            "work with their default buffers",
        ),
        Protection(
            "later cells",
            seen.get("user_site") == "1"
            and seen.get("safe_path") == "1"
            and not str(seen.get("home", "")).startswith(("/work", "/tmp")),
            f"HOME {seen.get('home')}, PYTHONNOUSERSITE={seen.get('user_site')}, "
            f"PYTHONSAFEPATH={seen.get('safe_path')}: a cell's python3 runs nothing an "
            "earlier cell planted in /work, /tmp or a user site; /work itself is shared "
            "by the run's cells on purpose",
        ),
        Protection(
            "host memory and load",
            cell_kb != host_kb,
            f"/proc/meminfo shows {_kb(cell_kb)} (host {_kb(host_kb)}); loadavg, stat, "
            "uptime, vmstat, zoneinfo, diskstats, pressure and /proc/sys describe the "
            "sandbox or read empty (sandbox/policy/hostview.py)",
        ),
        Protection(
            "host uptime",
            boot < host_boot - 60,
            f"CLOCK_BOOTTIME in the cell {boot:.0f} s, on the host {host_boot:.0f} s"
            + (
                ": a time namespace hides the host's"
                if boot < host_boot - 60
                else ": the cell can tell how long the host has been up (no time namespace)"
            ),
        ),
    ]


def _kb(value: int | None) -> str:
    return "nothing" if not value else f"{value // 1024} MB"


def _mb(value: float) -> str:
    return f"{value:.1f} MB" if value < 10 else f"{value:.0f} MB"


def _charge_rows(sandbox: object, bound: str) -> list[Protection]:
    """Kind by kind: how much the sandbox's cgroup rose while a cell held it (measured)."""
    rows = []
    for charge in measure_charges(sandbox):
        if charge.queued_mb < 0:
            detail = "refused"
        elif charge.charged_mb is None:
            detail = f"{_mb(charge.queued_mb)} queued; the cgroup could not be read here"
        else:
            where = "its TCP buffer limit" if charge.counter == "tcp" else bound
            detail = f"{_mb(charge.queued_mb)} queued, +{_mb(charge.charged_mb)} charged to " + (
                where if charge.covered else "the sandbox: NOT covered by its bounds"
            )
        rows.append(Protection(f"bound: {charge.kind}", charge.covered, detail))
    return rows


def docker_report() -> list[Protection]:
    from sandbox.docker.backend import DockerSandbox

    sandbox = DockerSandbox(pool_size=0)
    try:
        seen, pong = _live(sandbox)
        limits = sandbox.limits
        charges = _charge_rows(sandbox, f"its {limits.memory_mb} MB memory limit")
    finally:
        sandbox.close()
    return [
        *_cell_rows(seen, pong),
        Protection(
            "cgroup bound",
            True,
            f"the container's cgroup: {limits.memory_mb} MB memory without swap, "
            f"{limits.pids} processes; not covered: CPU beyond {limits.cpus:g} core(s) is "
            "shared, disk and network I/O bandwidth are not limited",
        ),
        *charges,
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
        seen, pong = _live(sandbox)
        privileged, limits = sandbox.privileged, sandbox.limits
        charges = _charge_rows(sandbox, f"its {limits.memory_bytes >> 20} MB memory limit")
    finally:
        sandbox.close()
    why_no_cgroup = cgroups.why_none() if privileged else "not root (cgroups are used as root)"
    memory = (
        f"its own cgroup v{cgroups.version()}: {limits.memory_bytes >> 20} MB for the whole "
        f"sandbox, {limits.max_processes} processes; what it charges is measured below, "
        "kind by kind; not covered: CPU time and disk I/O bandwidth"
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
        *_cell_rows(seen, pong),
        Protection("cgroup bound", why_no_cgroup is None, memory),
        *charges,
        Protection("user namespace", None, userns),
        yama(),
    ]


REPORTS = {"docker": docker_report, "bwrap": bwrap_report}
