"""The bubblewrap backend: Python in unshared namespaces, for machines with no Docker engine.

Each `run` starts a fresh `bwrap` with every namespace unshared (user, pid, net, ipc,
uts, cgroup; no nested user namespaces), a read-only root holding only the system
directories and a few files of /etc, a fresh /proc and a minimal /dev, size-capped
tmpfs for /tmp, /dev/shm and the work dir, a cleared environment, the seccomp denylist
of `sandbox.seccomp_bpf`, and rlimits. The code runs as uid 10001 in the sandbox.

Which Python: the debootstrap root file system that `conductor sandbox build --offline`
unpacks (Debian's python3 with numpy and sympy, as in the Docker image) when it exists,
else the host's /usr/bin/python3 with whatever Debian packages the host has.

Run as root, we first drop to an unused host uid picked per sandbox: rlimits such as
RLIMIT_NPROC do not bind host root, and a process count shared with other runs would
let one run's fork bomb starve another. If that uid cannot reach the root file system
(its parents are private, e.g. under /root), a private mount namespace binds it onto
/mnt for bwrap alone; the host's mount table is never touched.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from conductor.interfaces import ExecResult
from sandbox import seccomp_bpf
from sandbox.subprocess_backend import run_process

log = logging.getLogger("conductor.sandbox")

SANDBOX_UID = 10001  # the same user as in the Docker image
WORKDIR = "/work"
CELL_PATH = f"{WORKDIR}/main.py"
MIB = 1024 * 1024
# Host uids handed to sandboxes when we run as root: far above real and subuid ranges.
HOST_UID_BASE = 2_100_000_000
HOST_UID_SPAN = 40_000_000
# Where a private-mount-namespace bind exposes an unreachable root file system.
PRIVATE_ROOTFS_MOUNT = "/mnt"

SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The few /etc entries that Python, the dynamic loader and numpy's BLAS need.
ETC_ENTRIES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")
ETC_GLOBS = ("python3*",)
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": WORKDIR,
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    # Each thread would reserve its own 64 MB malloc arena, and RLIMIT_AS counts it.
    "MALLOC_ARENA_MAX": "2",
}
# -E -s: ignore PYTHON* variables and user site; -u: output survives a kill at the
# deadline; -B: no .pyc writes; faulthandler: a crash prints where it happened.
PYTHON_FLAGS = ("-E", "-s", "-u", "-B", "-X", "faulthandler")


@dataclass(frozen=True)
class Limits:
    """Resource caps of one run; every process of the run inherits them."""

    memory_bytes: int = 1024 * MIB  # RLIMIT_AS, per process
    max_processes: int = 64  # RLIMIT_NPROC: processes and threads of the run
    open_files: int = 256
    file_size_bytes: int = 64 * MIB
    tmp_bytes: int = 64 * MIB
    work_bytes: int = 64 * MIB
    shm_bytes: int = 16 * MIB


class BwrapSandbox:
    """Runs each piece of code in a fresh bubblewrap sandbox."""

    name = "bwrap"

    @staticmethod
    def probe() -> str | None:
        """None when bubblewrap can run code here; else why not (cached per process)."""
        return _probe_reason()

    def __init__(
        self,
        *,
        rootfs: str | Path | None = None,
        python: str | None = None,
        limits: Limits | None = None,
        **_options: object,
    ) -> None:
        self.limits = limits or Limits()
        root = Path(rootfs) if rootfs else _built_rootfs()
        self.root = root or Path("/")
        self.python = python or "/usr/bin/python3"
        hosted = self.root == Path("/")
        self.python_source = f"host {self.python}" if hosted else f"rootfs {self.root}"
        self._is_root = os.geteuid() == 0
        self._host_uid = HOST_UID_BASE + random.randrange(HOST_UID_SPAN)
        self._mount_private = self._is_root and not hosted and not _reachable_by_anyone(self.root)
        if self._mount_private and not os.path.isdir(PRIVATE_ROOTFS_MOUNT):
            log.warning(
                "%s is not reachable by an unprivileged uid and there is no %s to bind it "
                "on; using the host's Python. Move CONDUCTOR_HOME to a world-searchable "
                "directory to use the image's Python.",
                self.root,
                PRIVATE_ROOTFS_MOUNT,
            )
            self.root, self._mount_private = Path("/"), False
            self.python_source = f"host {self.python}"
        visible_root = Path(PRIVATE_ROOTFS_MOUNT) if self._mount_private else self.root
        self._static_args = _system_binds(self.root, visible_root)

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        fds: dict[str, int] = {}
        try:
            fds["seccomp"] = seccomp_bpf.program_fd()
            for key, data in (("cell", code.encode("utf-8", "surrogatepass")), *_ETC_FILES):
                fds[key] = seccomp_bpf.data_fd(data, name=key)
            fds["status"], fds["status_write"] = os.pipe()
        except (OSError, seccomp_bpf.UnsupportedArch) as exc:
            _close_all(fds.values())
            return ExecResult(backend=self.name, infra_error=f"cannot prepare bwrap: {exc}")
        argv = [
            "bwrap",
            *_namespace_args(),
            *self._static_args,
            *_scratch_args(self.limits),
            *[arg for key, _ in _ETC_FILES for arg in ("--ro-bind-data", str(fds[key]), key)],
            *("--perms", "0644", "--file", str(fds["cell"]), CELL_PATH),
            *("--remount-ro", "/", "--chdir", WORKDIR, "--clearenv"),
            *[arg for key, value in SANDBOX_ENV.items() for arg in ("--setenv", key, value)],
            *("--seccomp", str(fds["seccomp"]), "--json-status-fd", str(fds["status_write"])),
            "--",
            self.python,
            *PYTHON_FLAGS,
            CELL_PATH,
        ]
        passed = tuple(fd for key, fd in fds.items() if key != "status")
        try:
            result = self._launch(argv, timeout, stdin, passed)
            os.close(fds.pop("status_write"))
            exit_reported = _exit_reported(fds["status"])
        finally:
            _close_all(fds.values())
        return _interpret(result, exit_reported)

    def _launch(
        self, argv: list[str], timeout: float, stdin: str, pass_fds: tuple[int, ...]
    ) -> ExecResult:
        try:
            return run_process(
                argv,
                timeout=timeout,
                stdin=stdin,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd="/",
                backend=self.name,
                preexec=self._child_setup(timeout),
                pass_fds=pass_fds,
            )
        except subprocess.SubprocessError as exc:  # our child setup failed before exec
            return ExecResult(backend=self.name, infra_error=f"cannot start bwrap: {exc}")

    def close(self) -> None:
        """Nothing is held between runs: each run's sandbox is gone when it returns."""

    def _child_setup(self, timeout: float):
        """What the forked child does before exec'ing bwrap: plain system calls only."""
        drop, uid = self._is_root, self._host_uid
        rlimits = _rlimits(self.limits, timeout, keep_uid=not drop)
        mount_private = _private_rootfs_mount(self.root) if self._mount_private else None

        def setup() -> None:
            os.setsid()
            _prefer_as_oom_victim()
            for kind, soft, hard in rlimits:
                resource.setrlimit(kind, (soft, hard))
            if mount_private:
                mount_private()
            if drop:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        return setup


def _prefer_as_oom_victim() -> None:
    """If memory runs out across processes (RLIMIT_AS is per process), kill ours first.

    Set before dropping privileges, this also stops the code from lowering it again.
    """
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"1000")
        finally:
            os.close(fd)
    except OSError:
        pass


def _rlimits(limits: Limits, timeout: float, *, keep_uid: bool) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for the run, never above what we may set ourselves."""
    nproc = limits.max_processes + (_own_process_count() if keep_uid else 0)
    cpu_seconds = int(timeout) + 2  # a backstop: the wall-clock deadline comes first
    wanted = [
        (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
        (resource.RLIMIT_NPROC, nproc, nproc),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1),
    ]
    clamped = []
    for kind, soft, hard in wanted:
        ceiling = resource.getrlimit(kind)[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        clamped.append((kind, soft, hard))
    return clamped


# Synthesized, so that the host's account database never enters the sandbox.
_ETC_FILES = (
    (
        "/etc/passwd",
        (
            "root:x:0:0::/:/usr/sbin/nologin\n"
            f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::{WORKDIR}:/usr/sbin/nologin\n"
            "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n"
        ).encode(),
    ),
    ("/etc/group", f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n".encode()),
    ("/etc/hosts", b"127.0.0.1 localhost sandbox\n::1 localhost\n"),
)


def _namespace_args() -> list[str]:
    return [
        "--unshare-all",
        "--unshare-user",
        "--unshare-cgroup",
        "--disable-userns",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
    ]


def _scratch_args(limits: Limits) -> list[str]:
    return [
        *("--proc", "/proc", "--dev", "/dev"),
        *("--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"),
        *("--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"),
        *("--size", str(limits.work_bytes), "--tmpfs", WORKDIR),
    ]


def _system_binds(root: Path, visible_root: Path) -> list[str]:
    """Read-only binds of `root`'s system dirs (as bwrap will see them: `visible_root`)."""
    args: list[str] = []
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
        args += ["--ro-bind", str(visible_root / "etc" / name), f"/etc/{name}"]
    return args


def _built_rootfs() -> Path | None:
    """The root file system that the offline image build unpacked, if there is one."""
    from sandbox import image  # stdlib-only at import; the docker SDK stays unloaded

    return image.rootfs_path()


def _reachable_by_anyone(path: Path) -> bool:
    """Whether an unprivileged uid can walk to `path` (every ancestor world-searchable)."""
    for part in [path, *path.parents]:
        try:
            if not os.stat(part).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _private_rootfs_mount(root: Path):
    """A child-side step: bind `root` onto /mnt in a mount namespace of our own."""
    libc = ctypes.CDLL(None, use_errno=True)
    source, target = os.fsencode(root), os.fsencode(PRIVATE_ROOTFS_MOUNT)
    clone_newns, ms_rec, ms_private, ms_bind = 0x00020000, 0x4000, 0x40000, 0x1000

    def mount_private() -> None:
        if libc.unshare(clone_newns) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        if libc.mount(b"none", b"/", None, ms_rec | ms_private, None) != 0:
            raise OSError(ctypes.get_errno(), "making / private")
        if libc.mount(source, target, None, ms_bind | ms_rec, None) != 0:
            raise OSError(ctypes.get_errno(), f"binding {root} on {PRIVATE_ROOTFS_MOUNT}")

    return mount_private


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


def _exit_reported(fd: int) -> bool:
    """Whether bwrap's JSON status says the code ran and exited.

    bwrap writes {"child-pid": ...} when it forks and {"exit-code": N} when the code
    ends; a failure while setting the sandbox up leaves the second one out.
    """
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b'"exit-code"' in b"".join(chunks)


def _interpret(result: ExecResult, exited: bool) -> ExecResult:
    """Turn bwrap's conventions into ExecResult fields."""
    if result.infra_error:
        return result
    if not exited and not (result.timed_out or result.output_limit_hit):
        # bwrap failed before or while starting the code: our failure, not the code's.
        reason = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
        result.infra_error = f"bubblewrap could not start the sandbox: {reason[0]}"
        return result
    code = result.exit_code
    # bwrap reports a child killed by signal N as exit status 128 + N, like a shell.
    if code is not None and 128 < code <= 128 + 64:
        result.exit_code, result.signal = None, code - 128
    if result.signal == signal.SIGXCPU:
        result.timed_out = True  # the CPU-seconds rlimit, a backstop to the wall clock
    last_line = result.stderr.rstrip().rsplit("\n", 1)[-1]
    if last_line.startswith("MemoryError"):
        result.oom_killed = True  # RLIMIT_AS is our memory cap: Python reports it so
    return result


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


@functools.cache
def _probe_reason() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (`apt-get install bubblewrap`)"
    arch = seccomp_bpf.native_arch()
    if arch not in seccomp_bpf.ARCH_COLUMN:
        return f"no seccomp syscall table for {arch}; only x86_64 and aarch64 are covered"
    try:
        sandbox = BwrapSandbox()
    except OSError as exc:
        return f"cannot lay out the sandbox: {exc}"
    result = sandbox.run("pass", timeout=20)
    if result.ok:
        return None
    detail = result.infra_error or result.stderr.strip()[-300:] or f"exit {result.exit_code}"
    hint = ""
    if "namespace" in detail or "uid map" in detail or "Operation not permitted" in detail:
        hint = (
            " (are unprivileged user namespaces allowed? check "
            "`sysctl user.max_user_namespaces kernel.unprivileged_userns_clone`)"
        )
    return f"a trivial bwrap sandbox failed: {detail}{hint}"
