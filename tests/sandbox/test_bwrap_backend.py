"""The bubblewrap backend and its seccomp program.

The BPF program is checked twice: by a small classic-BPF interpreter here (every arch,
every rule, with syscall numbers cross-checked against the kernel headers when they are
installed), and live inside real sandboxes. Sandbox tests skip without a working
bubblewrap and fail instead under CONDUCTOR_REQUIRE_DOCKER=1, like the Docker ones.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from support import skip_or_fail

from sandbox import seccomp_bpf
from sandbox.bwrap_backend import SANDBOX_ENV, BwrapSandbox, Limits
from sandbox.registry import open_sandbox

RET_ALLOW = seccomp_bpf.SECCOMP_RET_ALLOW
RET_EPERM = seccomp_bpf.SECCOMP_RET_ERRNO | errno.EPERM
RET_ENOSYS = seccomp_bpf.SECCOMP_RET_ERRNO | errno.ENOSYS
RET_KILL = seccomp_bpf.SECCOMP_RET_KILL_PROCESS
AUDIT_ARCH_I386 = 0x40000003
HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


def run_filter(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Evaluate a classic BPF seccomp program on one syscall (the opcodes we emit)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
    insns = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == seccomp_bpf.BPF_LD_W_ABS:
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == seccomp_bpf.BPF_RET_K:
            return k
        elif code in (seccomp_bpf.BPF_JEQ_K, seccomp_bpf.BPF_JGE_K, seccomp_bpf.BPF_JSET_K):
            taken = {
                seccomp_bpf.BPF_JEQ_K: acc == k,
                seccomp_bpf.BPF_JGE_K: acc >= k,
                seccomp_bpf.BPF_JSET_K: bool(acc & k),
            }[code]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_filter_denies_the_denylist_and_allows_the_rest(arch: str) -> None:
    program = seccomp_bpf.build_program(arch)
    audit = seccomp_bpf.AUDIT_ARCH[arch]
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    denied = seccomp_bpf.denied_numbers(arch)
    assert {"ptrace", "mount", "unshare", "setns", "keyctl", "bpf", "userfaultfd"} <= set(denied)
    for name, nr in denied.items():
        assert run_filter(program, nr, audit) == RET_EPERM, name
    clone = seccomp_bpf.CLONE_NUMBERS[arch]
    others = set(range(450)) - set(denied.values()) - {clone, seccomp_bpf.CLONE3_NUMBER}
    for nr in sorted(others):
        assert run_filter(program, nr, audit) == RET_ALLOW, nr


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_filter_checks_clone_flags_and_answers_clone3_with_enosys(arch: str) -> None:
    program = seccomp_bpf.build_program(arch)
    audit, clone = seccomp_bpf.AUDIT_ARCH[arch], seccomp_bpf.CLONE_NUMBERS[arch]
    fork_flags = 0x01200011  # what glibc's fork passes: CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
    thread_flags = 0x003D0F00  # pthread_create: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|...
    assert run_filter(program, clone, audit, (fork_flags,)) == RET_ALLOW
    assert run_filter(program, clone, audit, (thread_flags,)) == RET_ALLOW
    for bit in range(32):
        flag = 1 << bit
        if flag & seccomp_bpf.CLONE_NAMESPACE_FLAGS:
            assert run_filter(program, clone, audit, (flag | 17,)) == RET_EPERM, hex(flag)
    assert run_filter(program, seccomp_bpf.CLONE3_NUMBER, audit) == RET_ENOSYS


def test_filter_kills_foreign_abis() -> None:
    program = seccomp_bpf.build_program("x86_64")
    assert run_filter(program, 20, AUDIT_ARCH_I386) == RET_KILL  # i386 getpid via int 0x80
    assert run_filter(program, 0x40000000 | 39, seccomp_bpf.AUDIT_ARCH["x86_64"]) == RET_KILL
    arm = seccomp_bpf.build_program("aarch64")
    assert run_filter(arm, 172, seccomp_bpf.AUDIT_ARCH["x86_64"]) == RET_KILL


def test_unknown_arch_is_refused_with_a_hint() -> None:
    with pytest.raises(seccomp_bpf.UnsupportedArch, match="Docker backend"):
        seccomp_bpf.build_program("riscv64")


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_syscall_numbers_match_the_kernel_headers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} not installed (linux-libc-dev)")
    text = header.read_text()
    for name, nr in seccomp_bpf.denied_numbers(arch).items():
        found = re.search(rf"#define __NR(?:3264)?_{name}\s+(\d+)", text)
        assert found and int(found.group(1)) == nr, f"{arch} {name}: table {nr}, header {found}"
    clone = re.search(r"#define __NR_clone\s+(\d+)", text)
    assert clone and int(clone.group(1)) == seccomp_bpf.CLONE_NUMBERS[arch]


# -- live sandboxes ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bwrap_ready() -> None:
    reason = BwrapSandbox.probe()
    if reason is not None:
        skip_or_fail(f"bubblewrap cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")


@pytest.fixture
def box(bwrap_ready: None) -> BwrapSandbox:
    return BwrapSandbox(rootfs="/")  # the host's Python: no rootfs lookup in tests


def test_runs_code_and_reports_like_the_protocol_says(box: BwrapSandbox) -> None:
    result = box.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert result.backend == "bwrap" and result.infra_error is None and not result.timed_out
    crashed = box.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert crashed.signal == 11 and crashed.exit_code is None
    assert open_sandbox("bwrap").name == "bwrap"


def test_the_sandbox_sees_only_what_it_is_given(box: BwrapSandbox) -> None:
    code = """
import json, os, resource, socket
def writable(path):
    try:
        open(path, "w").close()
        return True
    except OSError:
        return False
st = os.statvfs("/tmp")
print(json.dumps({
    "uid": os.getuid(), "host": socket.gethostname(), "cwd": os.getcwd(),
    "env": sorted(os.environ), "fds": sorted(os.listdir("/proc/self/fd")),
    "root": sorted(os.listdir("/")), "pids": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "nics": [name for _, name in socket.if_nameindex()],
    "writable": [writable(p) for p in ("/etc/x", "/usr/x", "/x", "/tmp/x", "/work/x")],
    "tmp_bytes": st.f_blocks * st.f_frsize,
    "limits": [resource.getrlimit(r)[1] for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE,
               resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)],
    "oom": open("/proc/self/oom_score_adj").read().strip(),
}))
"""
    result = box.run(code, timeout=10)
    assert result.ok, result.stderr
    seen = json.loads(result.stdout)
    limits = Limits()
    assert seen["uid"] == 10001 and seen["host"] == "sandbox" and seen["cwd"] == "/work"
    assert set(seen["env"]) <= {*SANDBOX_ENV, "PWD"}
    assert len(seen["fds"]) <= 4  # 0, 1, 2 and the one listing them
    assert not {"root", "home", "var", "run", "sys", "mnt"} & set(seen["root"])
    assert seen["pids"] <= 3 and seen["nics"] == ["lo"]
    assert seen["writable"] == [False, False, False, True, True]
    assert seen["tmp_bytes"] == limits.tmp_bytes
    assert seen["limits"] == [limits.memory_bytes, limits.open_files, limits.file_size_bytes, 0]
    assert seen["oom"] == "1000"


def test_every_denied_syscall_answers_eperm_inside(box: BwrapSandbox) -> None:
    numbers = seccomp_bpf.denied_numbers(seccomp_bpf.native_arch())
    code = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, nr in {numbers!r}.items():
    rc = libc.syscall(nr, 0, 0, 0, 0, 0, 0)
    print(name, rc, ctypes.get_errno() if rc == -1 else 0)
"""
    result = box.run(code, timeout=10)
    assert result.exit_code == 0, result.stderr
    answers = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    assert answers.keys() == numbers.keys()
    wrong = {name: a for name, a in answers.items() if a != ["-1", str(errno.EPERM)]}
    assert not wrong, f"not refused with EPERM: {wrong}"


def test_seccomp_is_what_stops_calls_that_need_no_privilege(box: BwrapSandbox) -> None:
    # Each of these works for an unprivileged process unless the filter refuses it.
    numbers = seccomp_bpf.denied_numbers(seccomp_bpf.native_arch())
    clone3, clone = seccomp_bpf.CLONE3_NUMBER, seccomp_bpf.CLONE_NUMBERS[seccomp_bpf.native_arch()]
    code = f"""
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def err(rc):
    return ctypes.get_errno() if rc == -1 else "ok"
print("keyctl", err(libc.syscall({numbers["keyctl"]}, 0, -3, 0)))
buf = ctypes.create_string_buffer(8)
iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
print("vm_readv_self", err(libc.syscall({numbers["process_vm_readv"]}, os.getpid(), iov, 1, iov, 1, 0)))
print("clone3", err(libc.syscall({clone3}, None, 0)))
print("clone_newuser", err(libc.syscall({clone}, 0x10000000 | 17, 0, 0, 0, 0)))
t = threading.Thread(target=print, args=("thread", "ok"))
t.start(); t.join()
print("subprocess", subprocess.run(["true"]).returncode)
"""
    result = box.run(code, timeout=10)
    lines = dict(line.split() for line in result.stdout.splitlines())
    assert lines == {
        "keyctl": str(errno.EPERM),
        "vm_readv_self": str(errno.EPERM),
        "clone3": str(errno.ENOSYS),
        "clone_newuser": str(errno.EPERM),
        "thread": "ok",
        "subprocess": "0",
    }, result.stderr


@pytest.mark.skipif(platform.machine() != "x86_64", reason="i386 and x32 ABIs exist on x86_64")
def test_foreign_abi_syscalls_kill_the_process(box: BwrapSandbox) -> None:
    x32 = box.run("import ctypes\nctypes.CDLL(None).syscall(0x40000000 | 39)\nprint('alive')")
    assert x32.signal == 31 and "alive" not in x32.stdout  # SIGSYS
    # mov eax, 20 (i386 getpid); int 0x80; ret -- from executable anonymous memory
    i386 = box.run(
        "import ctypes, mmap\n"
        "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "m.write(bytes.fromhex('b814000000cd80c3'))\n"
        "addr = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
        "ctypes.CFUNCTYPE(ctypes.c_int)(addr)()\nprint('alive')"
    )
    assert i386.signal == 31 and "alive" not in i386.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="privileges are only dropped when run as root")
def test_root_runs_the_sandbox_as_an_unprivileged_host_uid(box: BwrapSandbox) -> None:
    marker = "bw" + uuid.uuid4().hex[:10]
    code = f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{marker}', 0, 0, 0)\ntime.sleep(3)"
    runner = threading.Thread(target=box.run, args=(code,), kwargs={"timeout": 10})
    runner.start()
    uids: list[str] = []
    deadline = time.monotonic() + 5
    while not uids and time.monotonic() < deadline:
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            if f"Name:\t{marker}" in text:
                uids = re.search(r"Uid:\s+(.*)", text).group(1).split()  # type: ignore[union-attr]
        time.sleep(0.05)
    runner.join()
    assert uids and "0" not in uids, f"sandbox host uids: {uids}"
    assert int(uids[0]) >= 2_000_000_000


def test_nproc_limit_stops_a_fork_bomb_early(bwrap_ready: None) -> None:
    box = BwrapSandbox(rootfs="/", limits=Limits(max_processes=16))
    code = """
import os, time
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError as exc:
    print("refused after", n, exc.errno)
"""
    result = box.run(code, timeout=10)
    words = result.stdout.split()
    assert words[:2] == ["refused", "after"] and int(words[2]) < 16, result.stdout
    assert result.duration_s < 5  # the sleeping children died with the run


def test_a_failure_of_bwrap_itself_is_an_infra_error(bwrap_ready: None) -> None:
    result = BwrapSandbox(rootfs="/", python="/nonexistent/python3").run("print(1)")
    assert result.infra_error and "bubblewrap could not start" in result.infra_error
    assert not result.ok


def _mini_rootfs(root: Path) -> None:
    """Hard links (or copies) of the host's python3, its libraries and stdlib, plus a marker."""
    ldd = subprocess.run(["ldd", "/usr/bin/python3"], capture_output=True, text=True).stdout
    stdlib = next(Path("/usr/lib").glob("python3.[0-9]*/os.py")).parent
    sources = [Path("/usr/bin/python3"), Path("/etc/ld.so.cache")]
    sources += [Path(lib) for lib in re.findall(r"(/\S+\.so[.\d]*)", ldd)]
    sources += [p for p in stdlib.rglob("*") if p.is_file() and "test" not in p.parts]
    for source in sources:
        _mirror(source, root)
    for name in ("bin", "lib", "lib64", "sbin"):
        if Path("/", name).is_symlink():
            (root / name).symlink_to(os.readlink(Path("/", name)))
    marker = root / str(stdlib).lstrip("/") / "conductor_rootfs_marker.py"
    marker.write_text("WHERE = 'rootfs'\n")


def _mirror(path: Path, root: Path) -> None:
    """Recreate `path` under `root`: symlinks as symlinks (and their targets), files linked."""
    path = Path(os.path.realpath(path.parent)) / path.name
    target = root / str(path).lstrip("/")
    if os.path.lexists(target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        link = os.readlink(path)
        target.symlink_to(link)
        _mirror(path.parent / link, root)
        return
    try:
        os.link(path, target)
    except OSError:
        shutil.copy2(path, target)


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="needs a Debian-style python3")
def test_a_root_file_system_replaces_the_hosts_python(bwrap_ready: None, tmp_path: Path) -> None:
    rootfs = tmp_path / "private" / "rootfs"  # under pytest's 0700 dirs: unreachable by others
    _mini_rootfs(rootfs)
    box = BwrapSandbox(rootfs=rootfs)
    assert box.python_source == f"rootfs {rootfs}"
    result = box.run("import conductor_rootfs_marker as m\nprint(m.WHERE)")
    assert result.ok, result.stderr or result.infra_error
    assert result.stdout.split()[0] == "rootfs"
    host = BwrapSandbox(rootfs="/").run("import conductor_rootfs_marker")
    assert "ModuleNotFoundError" in host.stderr
