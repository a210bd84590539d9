"""How one bubblewrap sandbox is laid out and started (sandbox/bwrap/backend.py runs it).

The sandbox holds only the system directories (read-only), a few synthesized /etc
files, a fresh /proc in which nothing describes the host (sandbox/policy/hostview.py:
meminfo, stat, uptime and loadavg are the sandbox's own, the rest of the host-wide
files read empty and /proc/sys is an empty directory), a minimal /dev, size-capped
tmpfs for /tmp, /dev/shm and the work dir, and the runner's three files, copied in
(no host directory of ours is shared).
The environment is cleared; the seccomp allowlist of sandbox/policy/seccomp.py is
loaded before the runner starts.

Two modes, chosen by who we are:

- as root (`privileged`): no user namespace. bwrap keeps for the runner only
  CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP (to empty each cell's capability
  bounding set); the runner (uid 0) drops every cell to a host uid of this sandbox alone, so the cell can neither signal, trace, prlimit nor open
  /proc/PID/* of the runner or bwrap's init. The sandbox lives in its own cgroup.
- otherwise: an unprivileged user namespace mapping one uid (10001); runner and cell
  share it, which `conductor sandbox doctor` reports as "no uid separation".
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.policy import hostview
from sandbox.policy import seccomp as seccomp_policy
from sandbox.policy.cgroups import SandboxCgroup
from sandbox.preload import preload_args

SANDBOX_UID = 10001  # the cell's uid inside an unprivileged user namespace
WORKDIR = "/work"
# HOME is nowhere a cell can write: what an earlier cell plants there (a user-site
# .pth, dot files) must not shape a later cell's programs.
HOME = "/nonexistent"
RUNNER_DIR = "/opt/conductor"
MIB = 1024 * 1024
# Host uids handed to cells when we run as root: far above real and subuid ranges.
HOST_UID_BASE = 2_100_000_000
HOST_UID_SPAN = 40_000_000
PRIVATE_ROOTFS_MOUNT = "/mnt"
EMPTY_LAYER = "rootfs-empty"
RUNNER_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SETPCAP")

SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The few /etc entries that Python, the dynamic loader and numpy's BLAS need.
ETC_ENTRIES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")
ETC_GLOBS = ("python3*",)
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": HOME,
    "LANG": "C.UTF-8",
    # Every Python a cell starts ignores the user site and never puts its script's
    # directory or the working directory first on sys.path: a /work/json.py or a .pth
    # left by an earlier cell cannot run in a later cell's python3.
    "PYTHONNOUSERSITE": "1",
    "PYTHONSAFEPATH": "1",
    "TMPDIR": "/tmp",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
    # Each thread would reserve its own 64 MB malloc arena, and RLIMIT_AS counts it.
    "MALLOC_ARENA_MAX": "2",
}
RUNNER_SOURCES = ("main.py", "supervise.py", "child.py")


# Queued signals and POSIX timers of a cell's uid (each timer holds kernel memory).
SIGPENDING = 1024


@dataclass(frozen=True)
class Limits:
    """Resource caps of one bubblewrap sandbox."""

    memory_bytes: int = 1024 * MIB  # the whole sandbox (cgroup); else per process (AS)
    max_processes: int = 64  # processes and threads of the sandbox
    open_files: int = 256
    file_size_bytes: int = 64 * MIB
    tmp_bytes: int = 64 * MIB
    work_bytes: int = 64 * MIB
    shm_bytes: int = 16 * MIB
    lifetime_s: float = 3600.0


def new_host_uid() -> int:
    return HOST_UID_BASE + secrets.randbelow(HOST_UID_SPAN)


def etc_files(cell_uid: int) -> list[tuple[str, bytes]]:
    """Synthesized, so that the host's account database never enters the sandbox."""
    return [
        (
            "/etc/passwd",
            (
                "root:x:0:0::/:/usr/sbin/nologin\n"
                f"sandbox:x:{cell_uid}:{cell_uid}::{HOME}:/usr/sbin/nologin\n"
                "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n"
            ).encode(),
        ),
        ("/etc/group", f"root:x:0:\nsandbox:x:{cell_uid}:\nnogroup:x:65534:\n".encode()),
        ("/etc/hosts", b"127.0.0.1 localhost sandbox\n::1 localhost\n"),
    ]


def proc_covers(memory_bytes: int) -> list[tuple[str, bytes]]:
    """Files laid over the fresh /proc: the sandbox's own figures where programs read
    them, and every other host-wide file empty (sandbox/policy/hostview.py)."""
    files, _ = hostview.hidden_proc_entries()
    return [*hostview.synthesized_proc(memory_bytes), *((path, b"") for path in files)]


def proc_hiding_args() -> list[str]:
    """Empty read-only directories over the host-wide /proc directories (/proc/sys...)."""
    _, dirs = hostview.hidden_proc_entries()
    return [arg for path in dirs for arg in ("--perms", "0555", "--size", "4096", "--tmpfs", path)]


def runner_files() -> list[tuple[str, bytes]]:
    here = Path(__file__).resolve().parent.parent / "runner"
    return [(f"{RUNNER_DIR}/{name}", (here / name).read_bytes()) for name in RUNNER_SOURCES]


def namespace_args(privileged: bool) -> list[str]:
    common = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    common += ["--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent"]
    common += ["--new-session"]
    if privileged:
        caps = [arg for cap in RUNNER_CAPABILITIES for arg in ("--cap-add", cap)]
        return [*common, "--cap-drop", "ALL", *caps]
    ids = ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    return [*common, "--unshare-user", "--disable-userns", *ids]


def scratch_args(limits: Limits) -> list[str]:
    return [
        *("--proc", "/proc", "--dev", "/dev"),
        *("--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"),
        *("--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"),
        *("--perms", "1777", "--size", str(limits.work_bytes), "--tmpfs", WORKDIR),
    ]


def system_binds(root: Path, visible_root: Path) -> list[str]:
    """Read-only binds of `root`'s system dirs (as bwrap will see them: `visible_root`)."""
    # Directories bwrap makes on the way to a bind are private to root: make them first.
    args = [arg for d in ("/etc", "/opt", RUNNER_DIR) for arg in ("--perms", "0755", "--dir", d)]
    for name in SYSTEM_DIRS:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(visible_root / name), f"/{name}"]
    etc = root / "etc"
    names = [n for n in ETC_ENTRIES if os.path.lexists(etc / n)]
    names += sorted({p.name for pattern in ETC_GLOBS for p in etc.glob(pattern)})
    for name in names:
        if (etc / name).is_symlink():
            # Recreated, not bound: a bind would follow the link on the host (to the
            # host's own zoneinfo, say), and name the host's disk in the mount table.
            args += ["--symlink", os.readlink(etc / name), f"/etc/{name}"]
        else:
            args += ["--ro-bind", str(visible_root / "etc" / name), f"/etc/{name}"]
    return args


def runner_command(python: str, *, cell_uid: int | None, limits: Limits, cgroup: bool) -> list:
    argv = [python, "-I", "-B", f"{RUNNER_DIR}/main.py", "--workdir", WORKDIR]
    argv += ["--lifetime", f"{limits.lifetime_s:.0f}", "--kill-strays", *preload_args()]
    if cell_uid is not None:
        argv += ["--cell-uid", str(cell_uid)]
    per_cell = {
        "nproc": limits.max_processes,
        "nofile": limits.open_files,
        "fsize": limits.file_size_bytes,
        "core": 0,
        "memlock": 8 * MIB,
        "msgqueue": 0,
        "sigpending": SIGPENDING,
    }
    if not cgroup:
        per_cell["as"] = limits.memory_bytes  # no whole-sandbox bound: per process, then
    return argv + [arg for key, value in per_cell.items() for arg in ("--limit", f"{key}={value}")]


def overlay_rootfs(root: Path):
    """A child-side step (root only): show `root` at /mnt through a private overlay.

    The sandbox's mount table would otherwise name where the root file system lies on
    the host (a bind's root is its path in the source file system, e.g. the user's
    cache directory). An overlay is a file system of its own, whose options we give as
    relative paths, so the sandbox sees "/usr" on "lowerdir=.:../rootfs-empty" and
    nothing more.
    The overlay lives in a mount namespace of bwrap's own; the host's is untouched.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    clone_newns, ms_rec, ms_private, ms_rdonly = 0x00020000, 0x4000, 0x40000, 0x1
    target = os.fsencode(PRIVATE_ROOTFS_MOUNT)

    def mount_overlay() -> None:
        if libc.unshare(clone_newns) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        if libc.mount(b"none", b"/", None, ms_rec | ms_private, None) != 0:
            raise OSError(ctypes.get_errno(), "making / private")
        os.chdir(root)
        # An empty second layer beside the root file system (overlay wants two lowers).
        options = b"lowerdir=.:../" + os.fsencode(EMPTY_LAYER)
        if libc.mount(b"overlay", target, b"overlay", ms_rdonly, options) != 0:
            raise OSError(ctypes.get_errno(), f"overlaying {root} on {PRIVATE_ROOTFS_MOUNT}")
        os.chdir("/")

    return mount_overlay


def can_overlay(root: Path) -> bool:
    if os.geteuid() != 0 or root == Path("/") or not os.path.isdir(PRIVATE_ROOTFS_MOUNT):
        return False
    empty = root.parent / EMPTY_LAYER
    try:
        empty.mkdir(mode=0o755, exist_ok=True)
        return not any(empty.iterdir())
    except OSError:
        return False


def data_fd(data: bytes, *, name: str) -> int:
    """A memfd holding `data`, seeked to 0: bwrap's `--*-data`/`--seccomp` read from it."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def seccomp_fd() -> int:
    return data_fd(seccomp_policy.bpf_program(), name="conductor-seccomp")


CLONE_NEWTIME = 0x80


def time_namespace():
    """A child-side step (root only): the sandbox in a time namespace of its own, whose
    monotonic and boot-time clocks start near zero. Without it CLOCK_BOOTTIME, and the
    start time of every process in /proc/PID/stat, tell the host's uptime. Returns the
    step, or None where the kernel has no time namespaces."""
    import ctypes

    if not os.path.exists("/proc/self/timens_offsets"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def enter() -> None:
        if libc.unshare(CLONE_NEWTIME) != 0:
            return  # no time namespace here: the host's clocks show, as on Docker
        # Written before any process is in the namespace (bwrap joins it at exec).
        offsets = []
        for name, clock in (("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME)):
            offsets.append(f"{name} {1 - int(time.clock_gettime(clock))} 0\n")
        fd = os.open("/proc/self/timens_offsets", os.O_WRONLY)
        try:
            os.write(fd, "".join(offsets).encode())
        finally:
            os.close(fd)

    return enter


def child_setup(
    limits: Limits,
    cgroup: SandboxCgroup | None,
    *,
    keep_uid: bool,
    overlay: object = None,
    timens: object = None,
):
    """What the forked child does before exec'ing bwrap: plain system calls only."""
    rlimits = host_rlimits(limits, keep_uid=keep_uid)
    joins = cgroup.join_paths() if cgroup else []

    def setup() -> None:
        os.setsid()
        for path in joins:  # the whole sandbox is born inside its cgroup
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        with contextlib.suppress(OSError):
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")  # if memory runs out, the sandbox goes first
            os.close(fd)
        if callable(overlay):
            overlay()
        if callable(timens):
            timens()
        for kind, soft, hard in rlimits:
            resource.setrlimit(kind, (soft, hard))

    return setup


def host_rlimits(limits: Limits, *, keep_uid: bool) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for bwrap itself, never above what we may set ourselves."""
    nproc = limits.max_processes + 8 + (_own_process_count() if keep_uid else 0)
    wanted = [
        (resource.RLIMIT_NPROC, nproc, nproc),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    clamped = []
    for kind, soft, hard in wanted:
        ceiling = resource.getrlimit(kind)[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        clamped.append((kind, soft, hard))
    return clamped


def _own_process_count() -> int:
    """Processes and threads of our uid: RLIMIT_NPROC counts them too when we keep it."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count
