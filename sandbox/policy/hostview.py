"""What a sandbox sees of /proc and /sys: nothing that describes the host.

A fresh /proc in a new PID namespace still shows the whole machine outside the
per-process directories: its memory (meminfo, zoneinfo, buddyinfo, vmstat, and the
sysctls the kernel sizes from RAM, like fs.file-max or kernel.threads-max), its load
(loadavg, stat, pressure/*, softirqs, interrupts), its uptime (uptime, stat's btime)
and its disks (diskstats, partitions, swaps, fs/*, locks' device numbers). Rather than
naming those files one by one, the policy is an allowlist by class:

- `KEPT`: entries that describe only the sandbox (its own processes, mounts, network
  namespace, IPC namespace) or only the CPU model and kernel features a program may
  need (cpuinfo, filesystems, crypto, execdomains);
- `SYNTHESIZED`: files programs do read, replaced by the sandbox's own figures
  (meminfo with the sandbox's memory limit, stat with idle CPUs and the sandbox's
  start as boot time, uptime and loadavg at zero, a neutral cmdline and version);
- everything else at the top of /proc is hidden: a file reads empty, a directory is
  an empty read-only one. /proc/sys goes whole: nothing a cell runs needs it, and
  much of it is host-wide counters or figures derived from RAM.

`hidden_proc_entries()` lists what to hide on this host (the host's own /proc is the
template, since a fresh proc mount has the same entries), so an entry added by a newer
kernel is hidden without anyone naming it. Under /sys (Docker mounts one; bubblewrap
does not) the same rule keeps only the container's cgroup and the CPU list
(`os.cpu_count()` reads it) and hides the rest: block devices, NUMA memory, memory
blocks, file-system instances named after disks.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PROC = Path("/proc")
SYS = Path("/sys")

# Top-level /proc entries that show the sandbox's own world, or nothing of the host.
KEPT = frozenset(
    {
        "self",
        "thread-self",
        "mounts",
        "net",
        "sysvipc",
        "cpuinfo",
        "filesystems",
        "crypto",
        "execdomains",
    }
)
# Replaced by content of the sandbox's own (bubblewrap; Docker empties them).
SYNTHESIZED = ("meminfo", "stat", "uptime", "loadavg", "cmdline", "version")
# Under /sys, the paths kept visible (with every directory on the way to them).
SYS_KEPT = ("fs/cgroup", "devices/system/cpu")


def hidden_proc_entries(proc: Path = PROC) -> tuple[list[str], list[str]]:
    """(files, directories) at the top of `proc` to hide: neither kept nor synthesized."""
    files: list[str] = []
    dirs: list[str] = []
    try:
        names = sorted(os.listdir(proc))
    except OSError:
        return [], []
    for name in names:
        if name.isdigit() or name in KEPT or name in SYNTHESIZED:
            continue
        path = proc / name
        if path.is_symlink():
            continue  # self-like links (mounts, net, self) are the sandbox's own
        (dirs if path.is_dir() else files).append(f"/proc/{name}")
    return files, dirs


def hidden_sys_dirs(sys_root: Path = SYS) -> list[str]:
    """Directories under `sys_root` to hide so that only `SYS_KEPT` stays visible."""
    hidden: list[str] = []

    def walk(here: Path, relative: str) -> None:
        try:
            entries = sorted(os.listdir(here))
        except OSError:
            return
        for name in entries:
            child = f"{relative}/{name}" if relative else name
            if child in SYS_KEPT:
                continue  # kept whole
            if any(kept.startswith(child + "/") for kept in SYS_KEPT):
                walk(here / name, child)  # on the way to something kept
            elif (here / name).is_dir() and not (here / name).is_symlink():
                hidden.append(f"/sys/{child}")

    walk(sys_root, "")
    return hidden


def synthesized_proc(memory_bytes: int, cpus: int | None = None) -> list[tuple[str, bytes]]:
    """The sandbox's own /proc files: its memory limit, idle CPUs, boot at its start."""
    cpus = cpus or os.cpu_count() or 1
    kib = memory_bytes // 1024
    meminfo = (
        f"MemTotal: {kib:>12} kB\nMemFree: {kib:>13} kB\nMemAvailable: {kib:>8} kB\n"
        "Buffers:             0 kB\nCached:              0 kB\n"
        "SwapTotal:           0 kB\nSwapFree:            0 kB\n"
    )
    idle = " 0" * 10
    cpu_lines = [f"cpu {idle}\n", *(f"cpu{n}{idle}\n" for n in range(cpus))]
    stat = "".join(cpu_lines) + (
        f"intr 0\nctxt 0\nbtime {int(time.time())}\n"
        "processes 0\nprocs_running 1\nprocs_blocked 0\nsoftirq 0\n"
    )
    return [
        ("/proc/meminfo", meminfo.encode()),
        ("/proc/stat", stat.encode()),
        ("/proc/uptime", b"0.00 0.00\n"),
        ("/proc/loadavg", b"0.00 0.00 0.00 1/1 1\n"),
        ("/proc/cmdline", b"sandbox\n"),
        ("/proc/version", b"Linux version sandbox\n"),
    ]
