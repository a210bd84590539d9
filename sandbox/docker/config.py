"""How one Docker sandbox container is configured: limits, hardening, the cell's uid.

Hardening, all on by default: the runner and init run as root in the container with
only CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP; each cell runs as a host uid of
its container alone, with no capabilities and an empty bounding set; no network, a
read-only root, size- and inode-capped tmpfs for /tmp and /work, no-new-privileges,
the seccomp allowlist of sandbox/policy/seccomp.py (as the engine's profile, and
loaded again by the runner so that refused calls answer ENOSYS on every engine),
pids/memory(no swap)/CPU limits, nofile/fsize/core/sigpending limits, an init process,
capped logs, every /proc and /sys file that describes the host masked
(sandbox/policy/hostview.py), and an explicit minimal environment (nothing of the
host's, API keys above all; HOME outside /work, no user site, no script directory on
sys.path).
"""

from __future__ import annotations

import base64
import functools
import json
import secrets
from dataclasses import dataclass
from typing import Any

from sandbox import image as sandbox_image
from sandbox.policy import hostview
from sandbox.policy import seccomp as seccomp_policy
from sandbox.policy.cgroups import TCP_BYTES

MB = 1024 * 1024


@dataclass(frozen=True)
class ContainerLimits:
    """Resource limits of one sandbox container; every field has a safe default."""

    memory_mb: int = 512  # RAM; swap is the same figure, i.e. none
    cpus: float = 1.0
    pids: int = 128  # processes and threads together
    tmpfs_mb: int = 64  # each of /tmp and /work
    tmpfs_inodes: int = 4096
    nofile: int = 256
    fsize_mb: int = 64  # largest file the code may write
    lifetime_s: float = 3600.0  # the runner exits by then even if we vanish

    def create_kwargs(self, image: str, cell_uid: int | None = None) -> dict[str, Any]:
        """`create_container` arguments (low-level API) for one sandbox container.

        The runner and the init run as root in the container with only the three
        capabilities the runner needs to drop each cell to `cell_uid` and kill what it
        leaves; the cell runs as `cell_uid`, a host uid of this container alone (no
        user namespace: per-user kernel limits such as inotify instances are then not
        shared with any other run).
        """
        from docker.types import LogConfig, Ulimit

        from sandbox.docker.client import docker_client

        uid = cell_uid if cell_uid is not None else new_cell_uid()
        tmpfs_opts = f"rw,noexec,nosuid,nodev,size={self.tmpfs_mb}m,nr_inodes={self.tmpfs_inodes}"
        workdir = sandbox_image.WORKDIR
        host_config = docker_client().api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={
                "/tmp": f"{tmpfs_opts},mode=1777",
                workdir: f"{tmpfs_opts},mode=0700,uid={uid},gid={uid}",
            },
            cap_drop=["ALL"],
            cap_add=list(RUNNER_CAPABILITIES),
            security_opt=["no-new-privileges:true", f"seccomp={seccomp_profile()}"],
            pids_limit=self.pids,
            mem_limit=self.memory_mb * MB,
            memswap_limit=self.memory_mb * MB,
            nano_cpus=int(self.cpus * 1e9),
            shm_size=16 * MB,
            ipc_mode="private",
            ulimits=[
                Ulimit(name="nofile", soft=self.nofile, hard=self.nofile),
                Ulimit(name="fsize", soft=self.fsize_mb * MB, hard=self.fsize_mb * MB),
                Ulimit(name="core", soft=0, hard=0),
            ],
            init=True,
            log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
            auto_remove=True,
        )
        # Docker's own masked paths, plus every /proc and /sys entry that describes the host.
        host_config["MaskedPaths"] = masked_paths()
        # On cgroup v1 TCP buffers count against no memory limit unless this is set (a
        # container held 1.3 GB of the host's global tcp_mem); v2 ignores it and charges
        # them to the container's memory.
        host_config["KernelMemoryTCP"] = TCP_BYTES
        return {
            "image": image,
            "command": [
                "python3",
                "-I",
                sandbox_image.RUNNER_IN_IMAGE,
                "--workdir",
                workdir,
                "--lifetime",
                f"{self.lifetime_s:.0f}",
                "--kill-strays",
                "--cell-uid",
                str(uid),
                *runner_filter_args(),
                *self.cell_limit_args(),
            ],
            "user": "0:0",
            "working_dir": "/",
            "environment": minimal_environment(),
            "hostname": "sandbox",
            "network_disabled": True,
            "stdin_open": True,
            "detach": False,  # with stdin_open: StdinOnce, so our socket closing ends the
            # runner and no container outlives us by more than a moment
            "tty": False,
            "host_config": host_config,
        }

    def cell_limit_args(self) -> list[str]:
        """Per-cell rlimits the runner sets afresh on every fork (cells share the uid)."""
        limits = {
            "nproc": self.pids,
            "nofile": self.nofile,
            "fsize": self.fsize_mb * MB,
            "core": 0,
            "memlock": 8 * MB,
            "msgqueue": 0,
            "sigpending": SIGPENDING,
        }
        return [arg for key, value in limits.items() for arg in ("--limit", f"{key}={value}")]


# The runner's capabilities (the cell has none, and an empty bounding set): drop to the
# cell's uid, kill its leftovers, empty each cell's bounding set.
RUNNER_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SETPCAP")
# Queued signals and POSIX timers of a cell's uid (each timer holds kernel memory).
SIGPENDING = 1024
# Docker masks these by default; naming any replaces the default list, so all are here.
DOCKER_DEFAULT_MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)


def masked_paths() -> list[str]:
    """Docker's defaults, and what sandbox/policy/hostview.py hides: every host-wide
    /proc entry (Docker cannot lay the sandbox's own figures over the few that
    bubblewrap synthesizes, so those read empty too) and /sys but the cgroup and CPUs."""
    files, dirs = hostview.hidden_proc_entries()
    synthesized = [f"/proc/{name}" for name in hostview.SYNTHESIZED]
    found = [*DOCKER_DEFAULT_MASKED, *files, *synthesized, *dirs, *hostview.hidden_sys_dirs()]
    return list(dict.fromkeys(found))


@functools.cache
def runner_filter_args() -> tuple[str, ...]:
    """The allowlist as BPF for the runner to load itself (base64): the engine's profile
    answers EPERM for unlisted calls before Docker 23; the runner's filter, newer, wins.
    Without libseccomp on the host the engine's profile alone stands (EPERM, then)."""
    try:
        program = seccomp_policy.bpf_program()
    except seccomp_policy.SeccompUnavailable:
        return ()
    return ("--seccomp-bpf", base64.b64encode(program).decode())


# Host uids for cells: far above real and subuid ranges, one per container.
CELL_UID_BASE = 2_000_000_000
CELL_UID_SPAN = 50_000_000


def new_cell_uid() -> int:
    return CELL_UID_BASE + secrets.randbelow(CELL_UID_SPAN)


def minimal_environment() -> dict[str, str]:
    """The container's whole environment: nothing is taken from the host's."""
    return {
        "PATH": sandbox_image.IMAGE_PATH_ENV,
        "LANG": "C.UTF-8",
        "HOME": sandbox_image.HOME,
        "PYTHONDONTWRITEBYTECODE": "1",
        # Every Python a cell starts ignores the user site and keeps its script's
        # directory and the working directory off sys.path: a /work/json.py or a .pth
        # left by an earlier cell cannot run in a later cell's python3.
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MPLCONFIGDIR": "/tmp",
    }


def seccomp_profile() -> str:
    """The shared allowlist as the Docker API wants it: the JSON text itself, compacted."""
    return json.dumps(seccomp_policy.docker_profile(), separators=(",", ":"))
