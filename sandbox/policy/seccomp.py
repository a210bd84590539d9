"""The one seccomp policy of both backends: an allowlist, denied by default.

`ALLOWED` names every system call a sandbox may make (the runner, Python, numpy,
sympy, subprocesses); `RULES` adds the calls allowed only with certain arguments.
Everything else answers ENOSYS, so a call newer than this list (or one libc merely
probes, like clone3) fails the way it would on an older kernel and libc falls back.

From this one list come both filters:

- `bpf_program()`: the classic BPF bytes bubblewrap loads with `--seccomp FD`, built by
  libseccomp (through the `pyseccomp` ctypes bindings), which also kills calls made
  through a foreign ABI (i386, x32) since the filter only admits the native one. The
  Docker runner loads the same bytes itself (`--seccomp-bpf`), on top of the engine's
  profile: Docker engines before 23 ignore a profile's default errno and answer EPERM,
  and of two filters that both refuse a call the newer one's errno is the answer, so
  an unlisted call answers ENOSYS on every engine;
- `docker_profile()`: the same allowlist as a Docker seccomp profile (JSON), which the
  engine hands to libseccomp in the same way.

Argument rules (identical in both), each closing a class rather than a case:

- `clone` without namespace flags and without CLONE_PARENT: no process of a cell can
  become the child of the cell's parent (the runner), whose reaping it would then
  escape (clone3, whose flags a filter cannot read, answers ENOSYS and libc falls back);
- `socket` only for AF_UNIX (protocol 0) and AF_INET/AF_INET6 with protocol 0, TCP or
  UDP: no netlink of any protocol (its buffers are charged to no memory cgroup, and
  name resolution works without it), no ICMP ping sockets, no SCTP, UDP-Lite or MPTCP,
  no AF_VSOCK (a path to the hypervisor that network namespaces do not cover);
  `socketpair` for AF_UNIX;
- `setsockopt` only for the options in `SOCKET_OPTIONS` (what the standard library and
  common servers set: address reuse, keep-alive, timeouts, TCP_NODELAY, IPv6-only...):
  nothing that sizes a buffer (SO_SNDBUF, SO_RCVBUF and their FORCE variants), attaches
  a filter program (SO_ATTACH_FILTER, SO_ATTACH_BPF, the reuseport ones), joins
  multicast groups, loads a TCP upper layer (kTLS) or keys, or pins user pages
  (SO_ZEROCOPY); a refused option answers ENOSYS like any refused call;
- `personality` only to query or to set PER_LINUX (ADDR_NO_RANDOMIZE would turn ASLR
  off for the next exec).

Kernel memory a cell can pin, and what bounds it (docs/sandbox.md has the measured
figures): socket, pipe, inotify, epoll, eventfd, timerfd and memfd memory is charged to
the sandbox's memory cgroup (TCP and UDP buffers on cgroup v1 to its TCP buffer
limit); POSIX timers are bounded by RLIMIT_SIGPENDING, set per cell; SysV IPC, POSIX
message queues, keyrings, io_uring, BPF, userfaultfd and perf events are not on the
list at all.
"""

from __future__ import annotations

import errno
import platform
import tempfile
from dataclasses import dataclass

DEFAULT_ERRNO = errno.ENOSYS

ALLOWED: tuple[str, ...] = (
    # files and descriptors
    *("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev"),
    *("preadv2", "pwritev2", "open", "openat", "openat2", "close", "close_range", "creat"),
    *("lseek", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs"),
    *("access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents"),
    *("getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink"),
    *("unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink"),
    *("symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat"),
    *("truncate", "ftruncate", "fallocate", "fsync", "fdatasync", "utime", "utimes"),
    *("utimensat", "futimesat", "umask", "dup", "dup2", "dup3", "fcntl", "flock", "ioctl"),
    *("pipe", "pipe2", "sendfile", "splice", "tee", "copy_file_range", "fadvise64"),
    *("readahead", "mknod", "mknodat", "getxattr", "lgetxattr", "fgetxattr", "listxattr"),
    *("llistxattr", "flistxattr", "memfd_create", "inotify_init", "inotify_init1"),
    *("inotify_add_watch", "inotify_rm_watch"),
    # memory
    *("brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore"),
    *("mlock", "mlock2", "munlock", "membarrier"),
    # processes, threads, identity (setuid and friends: the runner drops to the cell's uid)
    *("fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid"),
    *("kill", "tkill", "tgkill", "getpid", "getppid", "gettid", "getuid", "geteuid"),
    *("getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid"),
    *("setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid"),
    *("setfsgid", "setsid", "setpgid", "getpgid", "getpgrp", "getsid", "prctl"),
    *("arch_prctl", "set_tid_address", "set_robust_list", "get_robust_list", "rseq"),
    *("capget", "capset", "getpriority", "setpriority", "sched_yield"),
    *("sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_getscheduler"),
    *("sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval"),
    *("sched_getattr", "getrlimit", "setrlimit", "prlimit64", "getrusage", "times"),
    *("pidfd_open", "pidfd_send_signal", "restart_syscall", "getrandom", "uname"),
    "getcpu",  # not sysinfo: it tells the host's RAM and uptime (glibc copes without it)
    # signals, time, waiting
    *("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending"),
    *("rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "pause"),
    *("alarm", "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres"),
    *("gettimeofday", "time", "getitimer", "setitimer", "timer_create", "timer_settime"),
    *("timer_gettime", "timer_getoverrun", "timer_delete", "timerfd_create"),
    *("timerfd_settime", "timerfd_gettime", "futex", "futex_waitv", "eventfd", "eventfd2"),
    *("signalfd", "signalfd4", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait"),
    *("epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6"),
    # sockets (socket() and socketpair() themselves are in RULES)
    *("bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername"),
    *("sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown"),
    "getsockopt",  # setsockopt is in RULES: only the options of SOCKET_OPTIONS
)

# Never allowed, listed so that tests and docs can name what the allowlist leaves out
# on purpose (anything unlisted is refused as well).
NOTABLY_DENIED: tuple[str, ...] = (
    *("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"),
    *("mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen"),
    *("fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns", "clone3"),
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"),
    *("io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load"),
    *("init_module", "finit_module", "delete_module", "modify_ldt", "open_by_handle_at"),
    *("name_to_handle_at", "fanotify_init", "syslog", "settimeofday", "clock_settime"),
    *("sethostname", "swapon", "reboot", "acct", "quotactl", "iopl", "ioperm", "vhangup"),
    *("shmget", "shmat", "msgget", "semget", "mq_open", "mbind", "migrate_pages"),
    *("move_pages", "process_madvise", "memfd_secret", "seccomp", "landlock_create_ruleset"),
    "sysinfo",
    *("sync", "syncfs", "lookup_dcookie", "statmount", "listmount", "open_tree_attr"),
)

CLONE_PARENT = 0x00008000  # the new process is a child of the caller's parent
CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
# Flags of clone() a cell may never pass: new namespaces, or a child for its parent.
CLONE_REFUSED_FLAGS = CLONE_NAMESPACE_FLAGS | CLONE_PARENT
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
IPPROTO_IP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_IPV6 = 0, 6, 17, 41
SOL_SOCKET = 1
# The protocols an internet socket may ask for: the family's default, TCP or UDP.
INET_PROTOCOLS = (0, IPPROTO_TCP, IPPROTO_UDP)
PER_LINUX, PERSONALITY_QUERY = 0, 0xFFFFFFFF

# (level, option) pairs setsockopt may set (the numbers are the same on x86_64 and
# aarch64). Left out on purpose: every option that sizes a buffer or attaches
# something the kernel keeps (see the module docstring).
SOCKET_OPTIONS: tuple[tuple[int, int, str], ...] = (
    (SOL_SOCKET, 2, "SO_REUSEADDR"),
    (SOL_SOCKET, 5, "SO_DONTROUTE"),
    (SOL_SOCKET, 6, "SO_BROADCAST"),
    (SOL_SOCKET, 9, "SO_KEEPALIVE"),
    (SOL_SOCKET, 10, "SO_OOBINLINE"),
    (SOL_SOCKET, 13, "SO_LINGER"),
    (SOL_SOCKET, 15, "SO_REUSEPORT"),
    (SOL_SOCKET, 16, "SO_PASSCRED"),
    (SOL_SOCKET, 18, "SO_RCVLOWAT"),
    (SOL_SOCKET, 20, "SO_RCVTIMEO_OLD"),
    (SOL_SOCKET, 21, "SO_SNDTIMEO_OLD"),
    (SOL_SOCKET, 29, "SO_TIMESTAMP_OLD"),
    (SOL_SOCKET, 35, "SO_TIMESTAMPNS_OLD"),
    (SOL_SOCKET, 66, "SO_RCVTIMEO_NEW"),
    (SOL_SOCKET, 67, "SO_SNDTIMEO_NEW"),
    (IPPROTO_TCP, 1, "TCP_NODELAY"),
    (IPPROTO_TCP, 2, "TCP_MAXSEG"),
    (IPPROTO_TCP, 3, "TCP_CORK"),
    (IPPROTO_TCP, 4, "TCP_KEEPIDLE"),
    (IPPROTO_TCP, 5, "TCP_KEEPINTVL"),
    (IPPROTO_TCP, 6, "TCP_KEEPCNT"),
    (IPPROTO_TCP, 7, "TCP_SYNCNT"),
    (IPPROTO_TCP, 8, "TCP_LINGER2"),
    (IPPROTO_TCP, 9, "TCP_DEFER_ACCEPT"),
    (IPPROTO_TCP, 12, "TCP_QUICKACK"),
    (IPPROTO_TCP, 18, "TCP_USER_TIMEOUT"),
    (IPPROTO_TCP, 25, "TCP_NOTSENT_LOWAT"),
    (IPPROTO_IP, 1, "IP_TOS"),
    (IPPROTO_IP, 2, "IP_TTL"),
    (IPPROTO_IPV6, 16, "IPV6_UNICAST_HOPS"),
    (IPPROTO_IPV6, 26, "IPV6_V6ONLY"),
    (IPPROTO_IPV6, 67, "IPV6_TCLASS"),
)


@dataclass(frozen=True)
class Condition:
    """Argument `index` compared with `op` ("eq", "ne" or "masked_eq" with `mask`)."""

    index: int
    op: str
    value: int
    mask: int = 0


@dataclass(frozen=True)
class Rule:
    """`name` is allowed when every condition holds (several rules: any one of them)."""

    name: str
    conditions: tuple[Condition, ...]


RULES: tuple[Rule, ...] = (
    Rule("clone", (Condition(0, "masked_eq", 0, CLONE_REFUSED_FLAGS),)),
    Rule("socket", (Condition(0, "eq", AF_UNIX), Condition(2, "eq", 0))),
    *(
        Rule("socket", (Condition(0, "eq", family), Condition(2, "eq", protocol)))
        for family in (AF_INET, AF_INET6)
        for protocol in INET_PROTOCOLS
    ),
    Rule("socketpair", (Condition(0, "eq", AF_UNIX),)),
    *(
        Rule("setsockopt", (Condition(1, "eq", level), Condition(2, "eq", option)))
        for level, option, _ in SOCKET_OPTIONS
    ),
    # The kernel reads personality's argument as 32 bits; compare only those.
    Rule("personality", (Condition(0, "masked_eq", PER_LINUX, 0xFFFFFFFF),)),
    Rule("personality", (Condition(0, "masked_eq", PERSONALITY_QUERY, 0xFFFFFFFF),)),
)

ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
DOCKER_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


class SeccompUnavailable(RuntimeError):
    """libseccomp (or its Python bindings) is missing or does not know this machine."""


def native_arch() -> str:
    machine = platform.machine().lower()
    return ARCH_ALIASES.get(machine, machine)


def docker_profile() -> dict:
    """The policy as a Docker seccomp profile (the engine's libseccomp compiles it)."""
    ops = {"eq": "SCMP_CMP_EQ", "ne": "SCMP_CMP_NE", "masked_eq": "SCMP_CMP_MASKED_EQ"}
    syscalls: list[dict] = [{"names": sorted(set(ALLOWED)), "action": "SCMP_ACT_ALLOW"}]
    for rule in RULES:
        args = []
        for cond in rule.conditions:
            # Docker's MASKED_EQ takes the mask as `value` and the expected value as valueTwo.
            value, two = (cond.mask, cond.value) if cond.op == "masked_eq" else (cond.value, 0)
            args.append({"index": cond.index, "value": value, "valueTwo": two, "op": ops[cond.op]})
        syscalls.append({"names": [rule.name], "action": "SCMP_ACT_ALLOW", "args": args})
    # Engines before Docker 23 ignore defaultErrnoRet (EPERM then): name the calls whose
    # answer matters (clone3 must be ENOSYS, or libc never falls back to clone).
    denied = sorted(set(NOTABLY_DENIED))
    syscalls.append({"names": denied, "action": "SCMP_ACT_ERRNO", "errnoRet": DEFAULT_ERRNO})
    arch = native_arch()
    return {
        "comment": "generated by sandbox/policy/seccomp.py: an allowlist, ENOSYS otherwise",
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": DEFAULT_ERRNO,
        "architectures": [DOCKER_ARCH[arch]] if arch in DOCKER_ARCH else [],
        "syscalls": syscalls,
    }


def bpf_program() -> bytes:
    """The policy compiled by libseccomp for this machine, as raw sock_filter bytes."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:  # the bindings load libseccomp.so.2 at import
        raise SeccompUnavailable(
            f"libseccomp is not usable here ({exc}): `apt-get install libseccomp2`"
        ) from exc
    ops = {"eq": seccomp.EQ, "ne": seccomp.NE, "masked_eq": seccomp.MASKED_EQ}
    policy = seccomp.SyscallFilter(defaction=seccomp.ERRNO(DEFAULT_ERRNO))
    for name in ALLOWED:
        _add(policy, seccomp.ALLOW, name)
    for rule in RULES:
        args = []
        for cond in rule.conditions:
            if cond.op == "masked_eq":
                args.append(seccomp.Arg(cond.index, ops[cond.op], cond.mask, cond.value))
            else:
                args.append(seccomp.Arg(cond.index, ops[cond.op], cond.value))
        _add(policy, seccomp.ALLOW, rule.name, *args)
    with tempfile.TemporaryFile() as handle:
        policy.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _add(policy: object, action: int, name: str, *args: object) -> None:
    try:
        policy.add_rule(action, name, *args)  # type: ignore[attr-defined]
    except (ValueError, OSError, RuntimeError):
        # A name this architecture (or this libseccomp) does not have, e.g. `open`
        # on aarch64: there is nothing to allow.
        pass
