"""Hostile cases: what describes the host (its memory, load, uptime, disks), anywhere.

The round this answers read the host's RAM from /proc/zoneinfo while /proc/meminfo was
masked, and its load, uptime, disks, inode and file counts from a dozen other files.
Rather than trying those files, the case walks all of /proc outside the per-process
directories (/proc/sys included) and all of /sys, reading every file it may, and looks
for the host's own figures, which the test takes from the host: its memory in kB, bytes
and pages, its boot time, its disk names, and the sysctls the kernel sizes from its RAM
(fs.file-max, kernel.threads-max, the epoll and inotify watch limits, tcp_mem, udp_mem,
min_free_kbytes, user namespaces). Load and uptime change by the second, so the case
reports what it reads for them and the check compares with the host's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hostile_base import C

from conductor_kernel.interfaces import ExecResult

# Sysctls the kernel computes from the machine's memory at boot.
RAM_SIZED = (
    "fs/file-max",
    "kernel/threads-max",
    "fs/epoll/max_user_watches",
    "fs/inotify/max_user_watches",
    "user/max_user_namespaces",
    "user/max_pid_namespaces",
    "vm/min_free_kbytes",
    "net/ipv4/tcp_mem",
    "net/ipv4/udp_mem",
)


def host_tokens() -> list[str]:
    """Numbers (5 digits or more) and names that belong to this host and no sandbox."""
    tokens: set[str] = set()
    meminfo = Path("/proc/meminfo").read_text()
    total_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))  # type: ignore[union-attr]
    tokens |= {str(total_kb), str(total_kb * 1024), str(total_kb // 4)}
    stat = Path("/proc/stat").read_text()
    btime = re.search(r"^btime (\d+)", stat, re.M)
    if btime:
        tokens.add(btime.group(1))
    for name in RAM_SIZED:
        try:
            text = (Path("/proc/sys") / name).read_text()
        except OSError:
            continue
        tokens |= {n for n in text.split() if n.isdigit() and len(n) >= 5}
    for line in Path("/proc/partitions").read_text().splitlines()[2:]:
        name = line.split()[-1]
        if not name.startswith(("loop", "ram", "zram")) and len(name) >= 3:
            tokens.add(name)
    return sorted(tokens)


WALK = r"""
import json, os, re, time
tokens = json.loads(@HOST_TOKENS@)
pattern = re.compile(r"(?<![0-9A-Za-z])(" + "|".join(map(re.escape, tokens)) + r")(?![0-9A-Za-z])")
skip = {"/proc/kmsg", "/proc/kcore", "/proc/self", "/proc/thread-self", "/proc/sysrq-trigger"}
leaks, files = [], 0
deadline = time.monotonic() + 20
def scan(top):
    global files
    for root, dirs, names in os.walk(top, followlinks=False):
        if top == "/proc":
            dirs[:] = [d for d in dirs if not d.isdigit() and f"/proc/{d}" not in skip]
        for name in names:
            path = os.path.join(root, name)
            if path in skip or time.monotonic() > deadline:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                data = os.read(fd, 1 << 16).decode("latin-1")
            except OSError:
                continue
            finally:
                os.close(fd)
            files += 1
            for match in pattern.finditer(data):
                leaks.append((path, match.group(1)))
scan("/proc")
if os.path.isdir("/sys"):
    scan("/sys")
for path, token in leaks[:40]:
    print("LEAK", path, token, flush=True)
print("read", files, "files,", len(leaks), "leaks", flush=True)
def first(path):
    try:
        return open(path).read().split()
    except OSError:
        return []
print("UPTIME", (first("/proc/uptime") or ["absent"])[0], flush=True)
load = first("/proc/loadavg")
print("LOADAVG_TASKS", load[3].split("/")[1] if len(load) > 3 else "absent", flush=True)
"""


def _no_host_facts(r: ExecResult, fill: dict[str, str]) -> None:
    assert r.exit_code == 0, (r.exit_code, r.signal, r.stderr[-400:])
    leaks = [line for line in r.stdout.splitlines() if line.startswith("LEAK")]
    if r.backend == "docker":
        # Known and documented (docs/hostile-battery.md): the engine bind-mounts
        # /etc/hostname, /etc/hosts, /etc/resolv.conf and docker-init from its own
        # directory, so the mount table names the host's disk device as their source.
        leaks = [line for line in leaks if not line.startswith("LEAK /proc/mounts ")]
    assert not leaks, "host facts readable:\n" + "\n".join(leaks)
    values = dict(line.split(maxsplit=1) for line in r.stdout.splitlines() if " " in line)
    uptime = values.get("UPTIME", "absent")
    if uptime != "absent":
        host_uptime = float(fill["HOST_UPTIME"])
        assert float(uptime) < host_uptime - 60, f"/proc/uptime {uptime} is the host's"
    tasks = values.get("LOADAVG_TASKS", "absent")
    if tasks != "absent":
        assert int(tasks) < 200, f"/proc/loadavg counts {tasks} tasks: the host's"


HOSTFACTS = [
    C(
        "host_facts_anywhere_in_proc_and_sys",
        "reads every file of /proc outside the process directories (/proc/sys included) "
        "and of /sys, looking for the host's memory size, boot time, disk names and the "
        "sysctls the kernel sizes from RAM; reports uptime and the load's task count",
        WALK,
        _no_host_facts,
        timeout=30,
    ),
]


def fill_host_facts() -> dict[str, str]:
    """Placeholders for the cases above, taken from the host now."""
    uptime = Path("/proc/uptime").read_text().split()[0]
    return {"HOST_TOKENS": repr(json.dumps(host_tokens())), "HOST_UPTIME": uptime}
