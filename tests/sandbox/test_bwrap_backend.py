"""The bubblewrap backend and the one seccomp policy both backends load.

Sandbox tests skip without a working bubblewrap and fail instead under
CONDUCTOR_REQUIRE_DOCKER=1, like the Docker ones.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.bwrap.backend import BwrapSandbox, Limits
from sandbox.bwrap.launch import SANDBOX_ENV
from sandbox.policy import seccomp as seccomp_policy
from sandbox.registry import open_sandbox
from support import skip_or_fail


def test_both_filters_come_from_the_one_list() -> None:
    profile = seccomp_policy.docker_profile()
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert profile["defaultErrnoRet"] == errno.ENOSYS
    unconditional = profile["syscalls"][0]["names"]
    assert sorted(set(seccomp_policy.ALLOWED)) == unconditional
    conditional = [rule["names"][0] for rule in profile["syscalls"][1:-1]]
    assert profile["syscalls"][-1]["errnoRet"] == errno.ENOSYS
    assert conditional == [rule.name for rule in seccomp_policy.RULES]
    assert not set(seccomp_policy.NOTABLY_DENIED) & set(unconditional + conditional)
    program = seccomp_policy.bpf_program()
    assert len(program) % 8 == 0 and len(program) // 8 > 100  # struct sock_filter[]


def _numbers(names: tuple[str, ...]) -> dict[str, int]:
    import pyseccomp

    found = {n: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, n) for n in names}
    return {name: nr for name, nr in found.items() if nr >= 0}


# -- live sandboxes ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bwrap_ready() -> None:
    reason = BwrapSandbox.probe()
    if reason is not None:
        skip_or_fail(f"bubblewrap cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER")


@pytest.fixture
def box(bwrap_ready: None) -> Iterator[BwrapSandbox]:
    sandbox = BwrapSandbox(rootfs="/")  # the host's Python: no rootfs lookup in tests
    yield sandbox
    sandbox.close()


def test_runs_code_and_reports_like_the_protocol_says(box: BwrapSandbox) -> None:
    result = box.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert result.backend == "bwrap" and result.infra_error is None and not result.timed_out
    crashed = box.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert crashed.signal == 11 and crashed.exit_code is None
    opened = open_sandbox("bwrap")
    assert opened.name == "bwrap"
    opened.close()


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
    # From the network namespace's own table (if_nameindex needs netlink, refused).
    "nics": [line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]],
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
    if os.geteuid() == 0:
        assert seen["uid"] >= 2_000_000_000  # a host uid of this sandbox alone
    else:
        assert seen["uid"] == 10001
    assert seen["host"] == "sandbox" and seen["cwd"] == "/work"
    assert set(seen["env"]) <= {*SANDBOX_ENV, "PWD"}
    # 0, 1, 2, the one listing them, and the runner's completion pipe (through which the
    # cell can only claim an exit status, which is its own to choose anyway)
    assert len(seen["fds"]) <= 5
    assert not {"root", "home", "var", "run", "sys", "mnt"} & set(seen["root"])
    assert seen["pids"] <= 4 and seen["nics"] == ["lo"]  # init, runner, cell (+ listing)
    assert seen["writable"] == [False, False, False, True, True]
    assert seen["tmp_bytes"] == limits.tmp_bytes
    memory = resource_infinity() if box.privileged else limits.memory_bytes  # cgroup bound
    assert seen["limits"] == [memory, limits.open_files, limits.file_size_bytes, 0]
    assert seen["oom"] == "1000"


def resource_infinity() -> int:
    import resource

    return resource.RLIM_INFINITY


def test_everything_off_the_allowlist_answers_enosys_inside(box: BwrapSandbox) -> None:
    numbers = _numbers(seccomp_policy.NOTABLY_DENIED)
    numbers |= {"unknown_future_call": 460, "far_beyond": 1000}
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
    wrong = {name: a for name, a in answers.items() if a != ["-1", str(errno.ENOSYS)]}
    assert not wrong, f"not refused: {wrong}"


def test_argument_rules_hold_inside(box: BwrapSandbox) -> None:
    code = """
import ctypes, errno, socket, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def err(rc):
    return errno.errorcode[ctypes.get_errno()] if rc == -1 else "ok"
def sock(*args):
    try:
        socket.socket(*args).close()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
print("clone_newuser", err(libc.syscall(56 if ctypes.sizeof(ctypes.c_void_p) else 0,
                                         0x10000000 | 17, 0, 0, 0, 0)))
print("vsock", sock(40, socket.SOCK_STREAM))
print("uevent", sock(socket.AF_NETLINK, socket.SOCK_DGRAM, 15))
print("route", sock(socket.AF_NETLINK, socket.SOCK_DGRAM, 0))
print("icmp", sock(socket.AF_INET, socket.SOCK_DGRAM, 1))
print("tcp6", sock(socket.AF_INET6, socket.SOCK_STREAM, 6))
print("resolve", socket.getaddrinfo("localhost", 80)[0][4][0])
print("clone_parent", err(libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)))
print("unix", sock(socket.AF_UNIX, socket.SOCK_STREAM))
print("no_aslr", err(libc.personality(0x0040000)))
print("query", "ok" if libc.personality(0xFFFFFFFF) == 0 else "changed")
t = threading.Thread(target=print, args=("thread", "ok"))
t.start(); t.join()
print("subprocess", subprocess.run(["true"]).returncode)
"""
    result = box.run(code, timeout=10)
    lines = dict(line.split() for line in result.stdout.splitlines())
    expected = {
        "vsock": "ENOSYS",
        "uevent": "ENOSYS",
        "route": "ENOSYS",  # no netlink at all: name resolution works without it
        "icmp": "ENOSYS",
        "tcp6": "ok",
        "resolve": "127.0.0.1",
        "unix": "ok",
        "no_aslr": "ENOSYS",
        "query": "ok",
        "thread": "ok",
        "subprocess": "0",
    }
    if platform.machine() == "x86_64":
        expected["clone_newuser"] = "ENOSYS"
        expected["clone_parent"] = "ENOSYS"
    lines = {k: v for k, v in lines.items() if k in expected}
    assert lines == expected, result.stderr


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


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="privileges are only dropped when run as root")
def test_root_runs_the_sandbox_as_an_unprivileged_host_uid(box: BwrapSandbox) -> None:
    marker = "bw" + uuid.uuid4().hex[:10]
    # The cell stays up long enough to be seen, however slowly the sandbox started: the
    # search runs for as long as the run does, not for a fixed time.
    code = f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{marker}', 0, 0, 0)\ntime.sleep(8)"
    runner = threading.Thread(target=box.run, args=(code,), kwargs={"timeout": 30})
    runner.start()
    uids: list[str] = []
    while not uids and runner.is_alive():
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
            time.sleep(600)
            os._exit(0)
        n += 1
except OSError as exc:
    print("refused after", n, exc.errno)
"""
    result = box.run(code, timeout=10)
    box.close()
    words = result.stdout.split()
    assert words[:2] == ["refused", "after"] and int(words[2]) < 16, result.stdout
    assert not result.timed_out  # the children (asleep for 10 minutes) died with the run


def test_a_failure_of_bwrap_itself_is_an_infra_error(bwrap_ready: None) -> None:
    box = BwrapSandbox(rootfs="/", python="/nonexistent/python3")
    result = box.run("print(1)")
    box.close()
    assert result.infra_error and "bubblewrap could not start" in result.infra_error
    assert not result.ok


def _mini_rootfs(root: Path) -> None:
    """Hard links (or copies) of the host's python3, its libraries and stdlib, plus a marker."""
    ldd = subprocess.run(["ldd", "/usr/bin/python3"], capture_output=True, text=True).stdout
    stdlib = next(Path("/usr/lib").glob("python3.[0-9]*/os.py")).parent
    sources = [Path("/usr/bin/python3"), Path("/etc/ld.so.cache")]
    sources += [Path(lib) for lib in re.findall(r"(/\S+\.so[.\d]*)", ldd)]
    # ctypes (the runner drops each cell's capabilities with it) and its libffi.
    for ctypes_ext in Path("/usr/lib").glob("python3.[0-9]*/lib-dynload/_ctypes*.so"):
        more = subprocess.run(["ldd", str(ctypes_ext)], capture_output=True, text=True).stdout
        sources += [ctypes_ext, *(Path(lib) for lib in re.findall(r"(/\S+\.so[.\d]*)", more))]
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


@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="needs a Debian-style python3")
def test_a_root_file_system_replaces_the_hosts_python(bwrap_ready: None, tmp_path: Path) -> None:
    rootfs = tmp_path / "private" / "rootfs"  # under pytest's 0700 dirs: unreachable by others
    _mini_rootfs(rootfs)
    box = BwrapSandbox(rootfs=rootfs)
    assert box.python_source == f"rootfs {rootfs}"
    result = box.run("import conductor_rootfs_marker as m\nprint(m.WHERE)")
    box.close()
    assert result.ok, result.stderr or result.infra_error
    assert result.stdout.split()[0] == "rootfs"
    host_box = BwrapSandbox(rootfs="/")
    host = host_box.run("import conductor_rootfs_marker")
    host_box.close()
    assert "ModuleNotFoundError" in host.stderr
