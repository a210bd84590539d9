"""A seccomp denylist as a classic BPF program, assembled in pure Python.

bubblewrap loads it with `--seccomp FD`: the fd holds a raw array of
`struct sock_filter` (8 bytes each, native byte order). The program

1. kills the process when the syscall comes from a foreign ABI (i386 or x32 on an
   x86_64 host), so a denylist written for one table cannot be bypassed through another;
2. answers EPERM for syscalls that only serve escaping or spying on the host (ptrace,
   mounts, namespaces, keyrings, kernel modules, bpf, io_uring, ...);
3. answers EPERM for `clone` asking for new namespaces, and ENOSYS for `clone3`, whose
   flags live in memory a filter cannot read; libc then falls back to `clone`;
4. allows everything else.

Numbers come from the kernel's uapi headers (asm/unistd_64.h; asm-generic/unistd.h
for aarch64).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from dataclasses import dataclass

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

# Offsets into struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6].
OFFSET_NR = 0
OFFSET_ARCH = 4
OFFSET_ARG0_LOW = 16  # both supported arches are little-endian

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

# clone() flags that create namespaces; all fit in the low 32 bits of arg 0.
CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

# name: (x86_64, aarch64); None where the arch has no such syscall.
SYSCALL_NUMBERS: dict[str, tuple[int | None, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "fanotify_init": (300, 262),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "lookup_dcookie": (212, 18),
    "syslog": (103, 116),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "vhangup": (153, 58),
    "nfsservctl": (180, 42),
    "iopl": (172, None),
    "ioperm": (173, None),
    "uselib": (134, None),
    "_sysctl": (156, None),
    "create_module": (174, None),
    "get_kernel_syms": (177, None),
    "query_module": (178, None),
}
CLONE_NUMBERS = {"x86_64": 56, "aarch64": 220}
CLONE3_NUMBER = 435  # the same on both arches
ARCH_COLUMN = {"x86_64": 0, "aarch64": 1}
ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


class UnsupportedArch(ValueError):
    """The host CPU has no syscall table here; the sandbox cannot filter it."""


@dataclass(frozen=True)
class _Insn:
    code: int
    k: int
    jt: str | None = None  # label jumped to when the test holds
    jf: str | None = None  # label jumped to when it does not (None: next instruction)


def native_arch() -> str:
    machine = platform.machine().lower()
    return ARCH_ALIASES.get(machine, machine)


def denied_numbers(arch: str) -> dict[str, int]:
    """Syscall name -> number for every syscall the filter answers with EPERM."""
    column = _column(arch)
    return {
        name: numbers[column]
        for name, numbers in SYSCALL_NUMBERS.items()
        if numbers[column] is not None
    }


def build_program(arch: str | None = None, *, deny_errno: int = errno.EPERM) -> bytes:
    """The filter for `arch` (default: this machine) as raw `struct sock_filter` bytes."""
    arch = arch or native_arch()
    column = _column(arch)
    ret_deny = SECCOMP_RET_ERRNO | deny_errno
    ret_enosys = SECCOMP_RET_ERRNO | errno.ENOSYS
    insns: list[_Insn | str] = [
        _Insn(BPF_LD_W_ABS, OFFSET_ARCH),
        _Insn(BPF_JEQ_K, AUDIT_ARCH[arch], jf="kill"),
        _Insn(BPF_LD_W_ABS, OFFSET_NR),
    ]
    if arch == "x86_64":
        insns.append(_Insn(BPF_JGE_K, X32_SYSCALL_BIT, jt="kill"))
    for numbers in SYSCALL_NUMBERS.values():
        if numbers[column] is not None:
            insns.append(_Insn(BPF_JEQ_K, numbers[column], jt="deny"))
    insns += [
        _Insn(BPF_JEQ_K, CLONE3_NUMBER, jt="enosys"),
        _Insn(BPF_JEQ_K, CLONE_NUMBERS[arch], jf="allow"),
        _Insn(BPF_LD_W_ABS, OFFSET_ARG0_LOW),
        _Insn(BPF_JSET_K, CLONE_NAMESPACE_FLAGS, jt="deny"),
        "allow",
        _Insn(BPF_RET_K, SECCOMP_RET_ALLOW),
        "deny",
        _Insn(BPF_RET_K, ret_deny),
        "enosys",
        _Insn(BPF_RET_K, ret_enosys),
        "kill",
        _Insn(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
    ]
    return _assemble(insns)


def program_fd(arch: str | None = None) -> int:
    """An anonymous file holding the program, positioned at its start.

    bwrap reads the fd to its end, so each sandbox launch needs a fresh one; the
    caller passes it on (`pass_fds`) and closes it afterwards.
    """
    return data_fd(build_program(arch), name="conductor-seccomp")


def data_fd(data: bytes, *, name: str) -> int:
    """A memfd holding `data`, seeked to 0: bwrap's `--file`/`--seccomp` read from it."""
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


def _column(arch: str) -> int:
    if arch not in ARCH_COLUMN:
        raise UnsupportedArch(
            f"no seccomp syscall table for {arch!r} (known: {', '.join(ARCH_COLUMN)}); "
            "use the Docker backend on this machine"
        )
    return ARCH_COLUMN[arch]


def _assemble(items: list[_Insn | str]) -> bytes:
    """Resolve labels to the relative jump offsets classic BPF uses (0..255)."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in items:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(at: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = labels[label] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"BPF jump to {label!r} out of range ({distance})")
        return distance

    return b"".join(
        struct.pack("=HBBI", insn.code, offset(i, insn.jt), offset(i, insn.jf), insn.k)
        for i, insn in enumerate(insns)
    )
