"""Hostile cases: the seccomp allowlist, and what would identify the host.

The suite this answers found both filters allowing by default (syscalls newer than the
denylist reached the kernel), AF_VSOCK sockets and ASLR-off personalities allowed,
host device events on netlink, and the host's cmdline, boot id, memory size and paths
readable. Every case asserts the refusal or the hiding; what cannot be hidden is in
docs/hostile-battery.md.
"""

from __future__ import annotations

import platform

from hostile_base import C, all_of, blocked, exits, never_prints

from conductor_kernel.interfaces import ExecResult

SOCK = r"""
import socket
def sock(label, family, kind, proto=0):
    attempt(label, lambda: socket.socket(family, kind, proto).close())
"""


def _sigsys_or_refused(r: ExecResult, _: dict[str, str]) -> None:
    assert "alive" not in r.stdout or "BLOCKED" in r.stdout, r.stdout
    assert r.signal == 31 or "BLOCKED" in r.stdout or r.exit_code == 128 + 31, (r.signal, r.stdout)


def _differs_from_host(label: str, key: str) -> object:
    def check(r: ExecResult, fill: dict[str, str]) -> None:
        assert r.exit_code == 0, r.stderr[-300:]
        host = fill[key].strip()
        assert host and host not in r.stdout, f"the host's {label} is visible: {host[:60]!r}"

    return check


HARDENING = [
    C(
        "vsock_socket",
        "opens AF_VSOCK sockets (a path to the hypervisor, not network-namespaced)",
        SOCK + 'sock("stream", 40, 1)\nsock("dgram", 40, 2)\nsock("seqpacket", 40, 5)\n',
        blocked(3),
    ),
    C(
        "netlink_uevent",
        "listens for the host's device events (NETLINK_KOBJECT_UEVENT)",
        SOCK + 'sock("uevent", 16, 2, 15)\nsock("uevent_raw", 16, 3, 15)\n',
        blocked(2),
    ),
    C(
        "netlink_other_families",
        "opens audit, sock_diag, generic, netfilter and xfrm netlink sockets",
        SOCK + "for proto in (9, 4, 16, 12, 6):\n    sock(f'netlink{proto}', 16, 3, proto)\n",
        blocked(5),
    ),
    C(
        "exotic_socket_families",
        "opens AF_PACKET, AF_KEY, AF_ALG, AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_RDS sockets",
        SOCK + "for fam in (17, 15, 38, 31, 29, 30, 21):\n    sock(f'family{fam}', fam, 2)\n",
        blocked(7),
    ),
    C(
        "personality_no_aslr",
        "turns ASLR off for its next exec with personality(ADDR_NO_RANDOMIZE)",
        'attempt("no_aslr", lambda: libc("personality", 0x0040000))\n'
        'attempt("no_aslr_hi", lambda: libc("personality", 0x0040000 | (1 << 32)))\n',
        blocked(2),
    ),
    C(
        "personality_other",
        "sets READ_IMPLIES_EXEC, PER_LINUX32 and MMAP_PAGE_ZERO personalities",
        "for value in (0x0400000, 0x0008, 0x0100000):\n"
        '    attempt(hex(value), lambda: libc("personality", value))\n',
        blocked(3),
    ),
    C(
        "newer_syscalls",
        "calls syscalls newer than any denylist (statmount, listmount, open_tree_attr, ...)",
        """
for nr in range(451, 470):
    attempt(f"nr{nr}", lambda: libc("syscall", nr, 0, 0, 0, 0, 0))
""",
        blocked(19, {"ENOSYS"}),
    ),
    C(
        "unassigned_syscalls",
        "calls syscall numbers no kernel has assigned yet",
        """
for nr in (470, 500, 1000, 4095):
    attempt(f"nr{nr}", lambda: libc("syscall", nr, 0, 0, 0, 0, 0))
""",
        blocked(4, {"ENOSYS"}),
    ),
    C(
        "ldt_and_fd_theft",
        "calls modify_ldt, pidfd_getfd on itself, process_madvise and memfd_secret",
        """
import os
nr = {"x86_64": {"modify_ldt": 154}}.get(_platform.machine(), {})
if "modify_ldt" in nr:
    attempt("modify_ldt", lambda: libc("syscall", nr["modify_ldt"], 0, 0, 0))
else:
    print("BLOCKED modify_ldt none ENOSYS")
pidfd = os.pidfd_open(os.getpid())
attempt("pidfd_getfd", lambda: libc("syscall", 438, pidfd, 0, 0))
attempt("process_madvise", lambda: libc("syscall", 440, pidfd, 0, 0, 0, 0))
attempt("memfd_secret", lambda: libc("syscall", 447, 0))
""",
        blocked(4),
    ),
    C(
        "new_mount_api",
        "open_tree, fsopen, fspick, mount_setattr and move_mount",
        """
for name, nr, args in (("open_tree", 428, (-100, b"/", 1)), ("fsopen", 430, (b"tmpfs", 0)),
                       ("fspick", 433, (-100, b"/", 0)), ("mount_setattr", 442, (-100, b"/", 0, 0, 0)),
                       ("move_mount", 429, (-100, b"/", -100, b"/tmp", 0))):
    attempt(name, lambda: libc("syscall", nr, *args))
""",
        blocked(5),
    ),
    C(
        "sysinfo_host_memory",
        "asks the kernel for total RAM and uptime with sysinfo()",
        """
import ctypes
buf = ctypes.create_string_buffer(128)
attempt("sysinfo", lambda: libc("sysinfo", buf))
""",
        blocked(1),
    ),
    C(
        "x32_abi",
        "makes a syscall through the x32 ABI",
        "import ctypes\nctypes.CDLL(None).syscall(0x40000000 | 39)\nprint('alive')\n"
        if platform.machine() == "x86_64"
        else "print('BLOCKED x32 none ENOSYS')\n",
        _sigsys_or_refused,
    ),
    C(
        "host_cmdline",
        "reads /proc/cmdline (the host's kernel command line)",
        'print(open("/proc/cmdline").read())\n',
        _differs_from_host("kernel command line", "HOST_CMDLINE"),
    ),
    C(
        "host_boot_id",
        "reads the kernel's boot id (the same for every process of the host)",
        'try:\n    print(open("/proc/sys/kernel/random/boot_id").read())\n'
        "except OSError as exc:\n    print('absent', exc.errno)\n",
        _differs_from_host("boot id", "HOST_BOOT_ID"),
    ),
    C(
        "host_memtotal",
        "reads MemTotal from /proc/meminfo",
        'print(open("/proc/meminfo").read())\n',
        _differs_from_host("MemTotal", "HOST_MEMTOTAL"),
    ),
    C(
        "mountinfo_host_paths",
        "looks for the host's home and working directory in its mount table",
        'print(open("/proc/self/mountinfo").read())\nprint(open("/proc/1/mountinfo").read())\n',
        all_of(exits(0), never_prints("@HOST_CWD@", "@HOST_HOME@/")),
    ),
    C(
        "tty_ioctls",
        "TIOCSTI and TIOCLINUX on its standard streams",
        """
import fcntl, struct
for fd in (0, 1, 2):
    attempt(f"tiocsti{fd}", lambda: fcntl.ioctl(fd, 0x5412, b"x"))
""",
        blocked(3),
    ),
]
