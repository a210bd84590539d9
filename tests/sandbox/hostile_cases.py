"""The hostile-code battery: what each case does and what a sandbox must answer.

Every case's code runs after a preamble that names the process after a per-run marker
(children inherit the name, so the harness finds leftovers with `ps`-style scans) and
defines `attempt(label, fn)`, which prints `BLOCKED label Exc ERRNO` or `ESCAPED label`.
Placeholders `@NAME@` are filled from the host witness (paths, pids, ports); the code
never sees a secret itself, only where the host keeps one.

Expectations are backend-neutral: they state what must hold on any sandbox (a timeout,
a denial, a capped stream), not how a particular backend gets there.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from conductor.interfaces import ExecResult

Check = Callable[[ExecResult, dict[str, str]], None]

# Errnos that mean "refused" for a privileged syscall (seccomp, missing capability, or
# a kernel knob); EFAULT or EINVAL would mean the call reached its real work.
REFUSED = {"EPERM", "EACCES", "ENOSYS"}

PREAMBLE = r"""
import ctypes as _ctypes, errno as _errno, os as _os, platform as _platform
try:
    _ctypes.CDLL(None).prctl(15, b"@COMM@", 0, 0, 0)  # PR_SET_NAME, inherited on fork
except Exception:
    pass
NR = {
    "x86_64": {"clone": 56, "add_key": 248, "request_key": 249, "keyctl": 250,
               "bpf": 321, "perf_event_open": 298, "io_uring_setup": 425,
               "userfaultfd": 323, "init_module": 175, "finit_module": 313,
               "delete_module": 176, "kexec_load": 246, "process_vm_readv": 310,
               "pivot_root": 155},
    "aarch64": {"clone": 220, "add_key": 217, "request_key": 218, "keyctl": 219,
                "bpf": 280, "perf_event_open": 241, "io_uring_setup": 425,
                "userfaultfd": 282, "init_module": 105, "finit_module": 273,
                "delete_module": 106, "kexec_load": 104, "process_vm_readv": 270,
                "pivot_root": 41},
}.get(_platform.machine(), {})

def libc(name, *args):
    lib = _ctypes.CDLL(None, use_errno=True)
    result = getattr(lib, name)(*args)
    if result == -1:
        err = _ctypes.get_errno()
        raise OSError(err, _os.strerror(err))
    return result

def syscall(name, *args):
    return libc("syscall", NR[name], *args)

def put(path, data, flags=_os.O_WRONLY | _os.O_CREAT):
    # unbuffered: a refusal shows here, not at some later close
    fd = _os.open(path, flags, 0o644)
    try:
        return _os.write(fd, data.encode() if isinstance(data, str) else data)
    finally:
        _os.close(fd)

def _sent(fn):
    try:
        fn()
        return True
    except OSError:
        return False

def attempt(label, fn):
    try:
        value = fn()
    except BaseException as exc:
        code = getattr(exc, "errno", None)
        print("BLOCKED", label, type(exc).__name__, _errno.errorcode.get(code, code), flush=True)
        return False
    print("ESCAPED", label, repr(value)[:80], flush=True)
    return True
"""


@dataclass(frozen=True)
class HostileCase:
    name: str
    summary: str  # what the code tries, for docs/hostile-battery.md
    code: str
    expect: Check
    timeout: float = 3.0
    stdin: str = ""
    follow_up: str | None = None  # runs next in the same sandbox, checked by follow_expect
    follow_expect: Check | None = None

    def source(self, fill: dict[str, str], *, follow_up: bool = False) -> str:
        body = self.follow_up if follow_up else self.code
        assert body is not None
        text = PREAMBLE + textwrap.dedent(body)
        for key, value in fill.items():
            text = text.replace(f"@{key}@", value)
        return text


# -- expectations ----------------------------------------------------------------------


def timed_out(r: ExecResult, _: dict[str, str]) -> None:
    assert r.timed_out, f"expected a timeout, got exit={r.exit_code} signal={r.signal}"


def exits(code: int) -> Check:
    def check(r: ExecResult, _: dict[str, str]) -> None:
        assert r.exit_code == code and not r.timed_out, (r.exit_code, r.signal, r.stderr[-300:])

    return check


def prints(*needles: str) -> Check:
    def check(r: ExecResult, _: dict[str, str]) -> None:
        for needle in needles:
            assert needle in r.stdout, f"{needle!r} not in stdout {r.stdout[-300:]!r}"

    return check


def never_prints(*needles: str) -> Check:
    """None of `needles` (placeholders filled in) shows in stdout or stderr."""

    def check(r: ExecResult, fill: dict[str, str]) -> None:
        for needle in needles:
            for key, value in fill.items():
                needle = needle.replace(f"@{key}@", value)
            assert needle not in r.stdout + r.stderr, f"{needle!r} leaked"

    return check


def blocked(count: int | str, errnos: set[str] | None = None) -> Check:
    """Every attempt was refused (`count` may name a fill key holding the number)."""

    def check(r: ExecResult, fill: dict[str, str]) -> None:
        want = int(fill[count]) if isinstance(count, str) else count
        lines = [line.split() for line in r.stdout.splitlines()]
        escaped = [" ".join(words) for words in lines if words[:1] == ["ESCAPED"]]
        assert not escaped, f"escaped: {escaped}"
        refusals = [words for words in lines if words[:1] == ["BLOCKED"]]
        assert len(refusals) == want, f"{len(refusals)}/{want} refused; stderr {r.stderr[-300:]}"
        if errnos is not None:
            odd = [" ".join(words) for words in refusals if words[-1] not in errnos]
            assert not odd, f"refused for the wrong reason (want {sorted(errnos)}): {odd}"

    return check


def capped(stream: str) -> Check:
    def check(r: ExecResult, _: dict[str, str]) -> None:
        text, total = getattr(r, stream), getattr(r, f"{stream}_bytes")
        assert r.output_limit_hit or getattr(r, f"{stream}_truncated"), "flood not flagged"
        assert len(text) < 2 * 1024 * 1024, f"kept {len(text)} chars of {stream}"
        assert total >= 1024 * 1024, f"counted only {total} bytes"

    return check


def memory_refused(r: ExecResult, _: dict[str, str]) -> None:
    assert not r.ok
    signs = ("MemoryError", "Errno 12", "Cannot allocate memory")
    assert r.oom_killed or r.signal == 9 or any(s in r.stderr for s in signs), (
        f"no sign of a memory cap: exit={r.exit_code} signal={r.signal} {r.stderr[-200:]!r}"
    )


def crashed(*signals: int) -> Check:
    def check(r: ExecResult, _: dict[str, str]) -> None:
        assert not r.ok and not r.timed_out
        assert r.signal in signals or r.exit_code in {128 + s for s in signals}, (
            f"expected death by {signals}, got exit={r.exit_code} signal={r.signal}"
        )

    return check


def finished(r: ExecResult, _: dict[str, str]) -> None:
    """Any outcome is fine; the harness's invariants are what this case is about."""
    assert r.exit_code is not None or r.signal is not None or r.timed_out


def all_of(*checks: Check) -> Check:
    def check(r: ExecResult, fill: dict[str, str]) -> None:
        for each in checks:
            each(r, fill)

    return check


def alive_or_killed(r: ExecResult, _: dict[str, str]) -> None:
    assert "alive" in r.stdout or r.signal == 9 or r.exit_code == 137, (
        f"neither finished nor killed: {r.exit_code} {r.signal} {r.stderr[-200:]!r}"
    )


def limit_reached(label: str, maximum: int) -> Check:
    """The code printed `BLOCKED <label> ... N` before reaching `maximum` (or timed out)."""

    def check(r: ExecResult, _: dict[str, str]) -> None:
        assert "ESCAPED" not in r.stdout
        hits = [line.split() for line in r.stdout.splitlines() if line.startswith("LIMIT")]
        if not hits:
            assert r.timed_out or r.signal == 9, f"no limit hit: {r.stdout[-300:]!r}"
            return
        words = hits[-1]
        assert words[1] == label and int(words[2]) < maximum, f"{words} (max {maximum})"

    return check


def not_growing(r: ExecResult, _: dict[str, str]) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    assert "growing" not in r.stdout, "a daemon from the previous run is still writing"


def in_stderr(needle: str) -> Check:
    def check(r: ExecResult, _: dict[str, str]) -> None:
        assert needle in r.stderr, f"{needle!r} not in stderr {r.stderr[-300:]!r}"

    return check


def failed(r: ExecResult, _: dict[str, str]) -> None:
    assert not r.ok, "expected the code to fail"


C = HostileCase  # the table below reads better with a short name

RUNAWAY = [
    C(
        "infinite_loop",
        "a CPU-bound `while True: pass`",
        "while True:\n    pass\n",
        timed_out,
        timeout=1.5,
    ),
    C(
        "long_sleep",
        "prints, then sleeps for an hour",
        'import time\nprint("sleeping", flush=True)\ntime.sleep(3600)\n',
        all_of(timed_out, prints("sleeping")),
        timeout=1.5,
    ),
    C(
        "ignores_sigterm",
        "ignores SIGTERM, SIGINT and SIGHUP, then idles",
        """
        import signal, time
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            time.sleep(0.05)
        """,
        timed_out,
        timeout=1.5,
    ),
    C(
        "fork_bomb",
        "every process forks forever, retrying when refused",
        """
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
        """,
        timed_out,
        timeout=2.0,
    ),
    C(
        "thread_bomb",
        "starts sleeping threads until refused",
        """
        import threading, time
        n = 0
        try:
            while n < 100000:
                threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
                n += 1
        except BaseException as exc:
            print("LIMIT threads", n, type(exc).__name__, flush=True)
        _os._exit(0)
        """,
        limit_reached("threads", 100000),
    ),
    C(
        "cpu_burners",
        "four forked processes spinning while the parent waits",
        """
        import os
        for _ in range(4):
            if os.fork() == 0:
                while True:
                    pass
        os.wait()
        """,
        timed_out,
        timeout=2.0,
    ),
    C(
        "cpu_threads",
        "eight threads hashing without the GIL",
        """
        import hashlib, threading
        data = b"x" * (8 << 20)
        def burn():
            while True:
                hashlib.sha256(data).digest()
        for _ in range(8):
            threading.Thread(target=burn, daemon=True).start()
        threading.Event().wait()
        """,
        timed_out,
        timeout=2.0,
    ),
    C(
        "zombie_horde",
        "fifty children exit and are never reaped",
        """
        import os, time
        for _ in range(50):
            if os.fork() == 0:
                _os._exit(0)
        time.sleep(0.3)
        print("done")
        """,
        all_of(exits(0), prints("done")),
        timeout=6.0,
    ),
    C(
        "orphan_sleeper",
        "a child sleeps on after its parent exits",
        """
        import os, time
        if os.fork() == 0:
            time.sleep(600)
            _os._exit(0)
        print("parent exits", flush=True)
        """,
        all_of(finished, prints("parent exits")),
    ),
    C(
        "setsid_daemon",
        "double-forks a setsid daemon that keeps writing a file",
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    with open("/tmp/@MARKER@.daemon", "a") as fh:
                        fh.write("x")
                    time.sleep(0.05)
            _os._exit(0)
        time.sleep(0.3)
        print("detached", flush=True)
        """,
        all_of(finished, prints("detached")),
        follow_up="""
        import os, time
        path = "/tmp/@MARKER@.daemon"
        if os.path.exists(path):
            before = os.path.getsize(path)
            time.sleep(0.5)
            print("growing" if os.path.getsize(path) > before else "still")
        else:
            print("absent")
        """,
        follow_expect=not_growing,
    ),
    C(
        "exec_sleep",
        "replaces itself with `sleep 600` under a marker argv[0]",
        """
        import os, shutil
        os.execv(shutil.which("sleep"), ["@MARKER@", "600"])
        """,
        timed_out,
        timeout=1.5,
    ),
    C(
        "popen_new_session",
        "spawns a sleeping Python in a new session and returns",
        """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "@MARKER@"],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("spawned", flush=True)
        """,
        all_of(finished, prints("spawned")),
    ),
    C(
        "kill_pid1",
        "SIGKILLs PID 1 of its namespace",
        """
        import os, signal, time
        print("kill 1", "sent:", _sent(lambda: os.kill(1, signal.SIGKILL)), flush=True)
        time.sleep(0.3)
        print("alive", flush=True)
        """,
        alive_or_killed,
    ),
    C(
        "kill_parent",
        "SIGKILLs its parent process",
        """
        import os, signal, time
        print("kill parent", "sent:", _sent(lambda: os.kill(os.getppid(), signal.SIGKILL)), flush=True)
        time.sleep(0.3)
        print("alive", flush=True)
        """,
        alive_or_killed,
    ),
    C(
        "kill_everything",
        "kill(-1, SIGKILL): every process it may signal",
        """
        import os, signal, time
        print("kill -1", "sent:", _sent(lambda: os.kill(-1, signal.SIGKILL)), flush=True)
        time.sleep(0.3)
        print("alive", flush=True)
        """,
        alive_or_killed,
    ),
    C(
        "signal_host_pids",
        "SIGSTOPs a host process and SIGKILLs the test runner by pid",
        """
        import os, signal
        attempt("stop host sleeper", lambda: os.kill(@SLEEPER_PID@, signal.SIGSTOP))
        attempt("kill host runner", lambda: os.kill(@HOST_PID@, signal.SIGKILL))
        """,
        blocked(2),
    ),
    C(
        "signal_sweep",
        "SIGTERMs pids 2..4096 except itself",
        """
        import os, signal
        hits = 0
        for pid in range(2, 4096):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGTERM)
                    hits += 1
                except OSError:
                    pass
        print("alive", hits, flush=True)
        """,
        alive_or_killed,
    ),
]

RESOURCES = [
    C(
        "memory_bomb",
        "appends 64 MB buffers forever",
        """
        chunks = []
        while True:
            chunks.append(bytearray(64 << 20))
        """,
        memory_refused,
    ),
    C("memory_single_huge", "one 8 GB bytes object", 'x = b"x" * (8 << 30)\n', memory_refused),
    C(
        "memory_mmap_touch",
        "maps 4 GB anonymously and touches every page",
        """
        import mmap
        m = mmap.mmap(-1, 4 << 30)
        for i in range(0, len(m), 4096):
            m[i] = 1
        """,
        memory_refused,
        timeout=10.0,
    ),
    C(
        "stdout_200mb",
        "writes 200 MB to stdout",
        """
        import sys
        chunk = "x" * (1 << 20)
        for _ in range(200):
            sys.stdout.write(chunk)
        """,
        capped("stdout"),
        timeout=20.0,
    ),
    C(
        "stderr_200mb",
        "writes 200 MB to stderr",
        """
        import sys
        chunk = "e" * (1 << 20)
        for _ in range(200):
            sys.stderr.write(chunk)
        """,
        capped("stderr"),
        timeout=20.0,
    ),
    C(
        "line_20mb",
        "a single 20 MB line without a newline",
        """
        import sys
        sys.stdout.write("y" * (20 << 20))
        sys.stdout.flush()
        """,
        capped("stdout"),
        timeout=20.0,
    ),
    C(
        "binary_garbage",
        "1 MB of random bytes on stdout, every byte value on stderr",
        """
        import os, sys
        sys.stdout.buffer.write(os.urandom(1 << 20))
        sys.stderr.buffer.write(bytes(range(256)) * 64)
        """,
        exits(0),
        timeout=5.0,
    ),
    C(
        "invalid_utf8",
        "bytes that are not UTF-8 between readable text",
        'import sys\nsys.stdout.buffer.write(b"begin \\xff\\xfe\\xc3( end\\n")\n',
        all_of(exits(0), prints("begin", "end")),
    ),
    C(
        "file_1gb",
        "writes a 1 GB file in the working directory",
        """
        import os
        n = 0
        try:
            with open("big.bin", "wb") as fh:
                while n < 1024:
                    fh.write(b"\\0" * (1 << 20))
                    n += 1
                fh.flush()
        except OSError as exc:
            print("LIMIT file_mb", n, _errno.errorcode.get(exc.errno), flush=True)
        os.remove("big.bin")  # the cases share one sandbox: leave room for the next
        """,
        limit_reached("file_mb", 1024),
        timeout=10.0,
    ),
    C(
        "tmp_fill",
        "fills /tmp with 8 MB files",
        """
        n = 0
        try:
            while n < 128:
                with open(f"/tmp/fill{n}", "wb") as fh:
                    fh.write(b"\\1" * (8 << 20))
                n += 1
        except OSError as exc:
            print("LIMIT tmp_files", n, _errno.errorcode.get(exc.errno), flush=True)
        for path in __import__("glob").glob("/tmp/fill*"):
            _os.remove(path)  # the cases share one sandbox: leave room for the next
        """,
        limit_reached("tmp_files", 128),
        timeout=10.0,
    ),
    C(
        "devshm_fill",
        "fills /dev/shm with 8 MB files",
        """
        n = 0
        try:
            while n < 128:
                with open(f"/dev/shm/fill{n}", "wb") as fh:
                    fh.write(b"\\1" * (8 << 20))
                n += 1
        except OSError as exc:
            print("LIMIT shm_files", n, _errno.errorcode.get(exc.errno), flush=True)
        for path in __import__("glob").glob("/dev/shm/fill*"):
            _os.remove(path)  # the cases share one sandbox: leave room for the next
        """,
        limit_reached("shm_files", 128),
        timeout=10.0,
    ),
    C(
        "inode_flood",
        "creates empty files until refused",
        """
        import os, shutil
        os.makedirs("/tmp/inodes", exist_ok=True)
        n = 0
        try:
            while True:
                open(f"/tmp/inodes/{n}", "w").close()
                n += 1
        except OSError as exc:
            print("LIMIT inodes", n, _errno.errorcode.get(exc.errno), flush=True)
        shutil.rmtree("/tmp/inodes")
        """,
        limit_reached("inodes", 10**9),
        timeout=2.5,
    ),
    C(
        "fd_exhaustion",
        "opens /dev/null until refused",
        """
        n, keep = 0, []
        try:
            while n < 10**6:
                keep.append(open("/dev/null"))
                n += 1
        except OSError as exc:
            print("LIMIT fds", n, _errno.errorcode.get(exc.errno), flush=True)
        """,
        limit_reached("fds", 10**6),
    ),
    C(
        "fifo_block",
        "opens a FIFO that nobody writes",
        """
        import os
        os.mkfifo("/tmp/@MARKER@.fifo")
        open("/tmp/@MARKER@.fifo").read()
        """,
        timed_out,
        timeout=1.5,
    ),
    C(
        "pipe_deadlock",
        "writes 1 MB into its own pipe with no reader",
        "import os\nr, w = os.pipe()\nos.write(w, b'x' * (1 << 20))\n",
        timed_out,
        timeout=1.5,
    ),
    C(
        "stdin_eof",
        "reads all of stdin (none given)",
        "import sys\nprint(repr(sys.stdin.read()))\n",
        all_of(exits(0), prints("''")),
    ),
    C(
        "stdin_unread",
        "is given 1 MB on stdin, never reads it, sleeps",
        "import time\ntime.sleep(600)\n",
        timed_out,
        timeout=1.5,
        stdin="z" * (1 << 20),
    ),
    C(
        "stdin_echo",
        "echoes stdin upper-cased (a control: stdin does arrive)",
        "import sys\nprint(sys.stdin.read().upper())\n",
        all_of(exits(0), prints("HELLO\nWORLD")),
        stdin="hello\nworld\n",
    ),
    C(
        "absent_module",
        "imports a module that does not exist",
        "import conductor_no_such_module\n",
        all_of(exits(1), in_stderr("ModuleNotFoundError")),
    ),
    C(
        "import_host_project",
        "imports this project's own packages",
        "import conductor, sandbox\n",
        all_of(exits(1), in_stderr("ModuleNotFoundError")),
    ),
    C(
        "huge_recursion",
        "recurses with the recursion limit lifted",
        """
        import sys
        sys.setrecursionlimit(10**7)
        def down(n):
            return down(n + 1) + 1
        down(0)
        """,
        failed,
        timeout=3.0,
    ),
    C("abort", "os.abort()", "import os\nos.abort()\n", crashed(6)),
    C(
        "segfault",
        "dereferences NULL through ctypes",
        "import ctypes\nctypes.string_at(0)\n",
        crashed(11),
    ),
    C(
        "exit_code",
        "sys.exit(7) (a control: exit codes come through)",
        "import sys\nsys.exit(7)\n",
        exits(7),
    ),
]


PRIVILEGE = [
    C(
        "setuid_root",
        "setuid/setgid/setresuid/seteuid to root",
        """
        import os
        attempt("setuid", lambda: os.setuid(0))
        attempt("setgid", lambda: os.setgid(0))
        attempt("setresuid", lambda: os.setresuid(0, 0, 0))
        attempt("seteuid", lambda: os.seteuid(0))
        """,
        blocked(4, {"EPERM", "EINVAL"}),
    ),
    C(
        "privileges_held",
        "reports its uid, capabilities and no_new_privs",
        """
        import os, subprocess
        status = open("/proc/self/status").read()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        print("uid", os.getuid(), "shell_uid", subprocess.run(["id", "-u"],
              capture_output=True, text=True).stdout.strip())
        print("caps", fields["CapEff"].strip(), fields["CapPrm"].strip())
        print("nnp", fields["NoNewPrivs"].strip())
        """,
        lambda r, _: _privileges_dropped(r),
    ),
    C(
        "mount",
        "mounts a tmpfs and bind-mounts /",
        """
        attempt("mount tmpfs", lambda: libc("mount", b"none", b"/tmp", b"tmpfs", 0, None))
        attempt("bind /", lambda: libc("mount", b"/", b"/tmp", None, 4096, None))
        """,
        blocked(2, REFUSED),
    ),
    C(
        "umount",
        "lazily unmounts /proc",
        'attempt("umount2 /proc", lambda: libc("umount2", b"/proc", 2))\n',
        blocked(1, REFUSED | {"EINVAL"}),
    ),
    C(
        "unshare",
        "unshares user, mount, net and pid namespaces",
        """
        for flag, name in ((0x10000000, "user"), (0x00020000, "mnt"), (0x40000000, "net"),
                           (0x20000000, "pid")):
            attempt(f"unshare {name}", lambda flag=flag: libc("unshare", flag))
        """,
        blocked(4, REFUSED),
    ),
    C(
        "clone_newuser",
        "raw clone(CLONE_NEWUSER) syscall",
        """
        def clone():
            pid = syscall("clone", 0x10000000 | 17, 0, 0, 0, 0)
            if pid == 0:
                _os._exit(0)
            return pid
        attempt("clone newuser", clone)
        """,
        blocked(1, REFUSED),
    ),
    C(
        "setns",
        "joins PID 1's mount and net namespaces",
        """
        import os
        for ns in ("mnt", "net"):
            attempt(f"setns {ns}", lambda ns=ns: libc("setns", os.open(f"/proc/1/ns/{ns}", os.O_RDONLY), 0))
        """,
        blocked(2),
    ),
    C(
        "chroot",
        "chroot and pivot_root",
        """
        import os
        attempt("chroot", lambda: os.chroot("/tmp"))
        attempt("pivot_root", lambda: syscall("pivot_root", b"/tmp", b"/tmp"))
        """,
        blocked(2, REFUSED | {"EINVAL"}),
    ),
    C(
        "ptrace",
        "PTRACE_ATTACH to its parent and to PID 1",
        """
        import os
        attempt("ptrace parent", lambda: libc("ptrace", 16, os.getppid(), None, None))
        attempt("ptrace 1", lambda: libc("ptrace", 16, 1, None, None))
        """,
        blocked(2, REFUSED | {"ESRCH"}),
    ),
    C(
        "process_vm_readv",
        "reads its parent's memory with process_vm_readv",
        """
        import ctypes, os
        class IoVec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        buf = ctypes.create_string_buffer(8)
        local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
        remote = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
        attempt("process_vm_readv", lambda: syscall("process_vm_readv", os.getppid(),
                ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
        """,
        blocked(1, REFUSED | {"ESRCH"}),
    ),
    C(
        "keyrings",
        "add_key, request_key and keyctl on the session keyring",
        """
        attempt("add_key", lambda: syscall("add_key", b"user", b"conductor", b"v", 1, -3))
        attempt("request_key", lambda: syscall("request_key", b"user", b"conductor", None, -3))
        attempt("keyctl", lambda: syscall("keyctl", 0, -3, 0))
        """,
        blocked(3, REFUSED),
    ),
    C(
        "kernel_attack_surface",
        "bpf, perf_event_open, io_uring_setup, userfaultfd",
        """
        attempt("bpf", lambda: syscall("bpf", 0, None, 0))
        attempt("perf_event_open", lambda: syscall("perf_event_open", None, 0, -1, -1, 0))
        attempt("io_uring_setup", lambda: syscall("io_uring_setup", 1, None))
        attempt("userfaultfd", lambda: syscall("userfaultfd", 0))
        """,
        blocked(4, REFUSED),
    ),
    C(
        "kernel_modules",
        "init_module, finit_module, delete_module, kexec_load",
        """
        import os
        attempt("init_module", lambda: syscall("init_module", None, 0, b""))
        attempt("finit_module", lambda: syscall("finit_module", os.open("/dev/null", os.O_RDONLY), b"", 0))
        attempt("delete_module", lambda: syscall("delete_module", b"loop", 0))
        attempt("kexec_load", lambda: syscall("kexec_load", 0, 0, None, 0))
        """,
        blocked(4, REFUSED),
    ),
    C(
        "host_knobs",
        "reboot(CAD_OFF), swapoff, clock_settime, sethostname",
        """
        import ctypes, time
        now = (ctypes.c_long * 2)(int(time.time()), 0)
        attempt("reboot", lambda: libc("reboot", 0))
        attempt("swapoff", lambda: libc("swapoff", b"/nonexistent"))
        attempt("clock_settime", lambda: libc("clock_settime", 0, now))
        attempt("sethostname", lambda: libc("sethostname", b"pwned", 5))
        """,
        blocked(4, REFUSED),
    ),
    C(
        "limits_raise",
        "raises its nofile and fsize hard limits, lowers its nice value",
        """
        import os, resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        attempt("nofile", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1)))
        inf = resource.RLIM_INFINITY
        attempt("fsize", lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (inf, inf)))
        attempt("nice", lambda: os.nice(-5))
        """,
        blocked(3),
    ),
    C(
        "tty_injection",
        "opens /dev/tty and pushes input with TIOCSTI",
        """
        import fcntl
        attempt("open /dev/tty", lambda: open("/dev/tty", "wb"))
        attempt("TIOCSTI", lambda: fcntl.ioctl(0, 0x5412, b"x"))
        """,
        blocked(2),
    ),
]


def _privileges_dropped(r: ExecResult) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    words = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    uid = words["uid"].split()
    assert uid[0] != "0" and uid[2] != "0", f"runs as root: {words['uid']}"
    assert set(words["caps"].replace(" ", "")) == {"0"}, f"holds capabilities: {words['caps']}"
    assert words["nnp"] == "1", "no_new_privs is not set"


NETWORK = [
    C(
        "raw_sockets",
        "opens raw IPv4, IPv6 and packet sockets",
        """
        import socket
        attempt("raw ipv4", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
        attempt("raw ipv6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))
        attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
        """,
        blocked(3),
    ),
    C(
        "tcp_egress",
        "TCP to public addresses",
        """
        import socket
        for host, port in (("1.1.1.1", 443), ("8.8.8.8", 53), ("151.101.0.223", 443)):
            attempt(f"tcp {host}", lambda: socket.create_connection((host, port), timeout=1).close())
        """,
        blocked(3),
    ),
    C(
        "dns_egress",
        "resolves names and sends a raw DNS query",
        """
        import socket
        attempt("resolve example.com", lambda: socket.getaddrinfo("example.com", 443))
        attempt("resolve pypi.org", lambda: socket.getaddrinfo("pypi.org", 443))
        def query():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(1)
            s.sendto(bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001"),
                     ("8.8.8.8", 53))
            return s.recv(512)
        attempt("udp dns", query)
        """,
        blocked(3),
    ),
    C(
        "host_services",
        "connects to a TCP port and an abstract socket the host listens on",
        """
        import socket
        for ip in @HOST_IPS@:
            attempt(f"tcp {ip}", lambda ip=ip: socket.create_connection((ip, @HOST_PORT@), timeout=1).close())
        def abstract():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(1)
            s.connect("\\0@ABSTRACT@")
        attempt("abstract unix", abstract)
        """,
        blocked("HOST_SERVICE_COUNT"),
    ),
    C(
        "docker_socket",
        "talks HTTP to the Docker socket",
        """
        import socket
        for path in ("/var/run/docker.sock", "/run/docker.sock"):
            def talk(path=path):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(1)
                s.connect(path)
                s.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
                return s.recv(200)
            attempt(path, talk)
        """,
        blocked(2),
    ),
]

FILESYSTEM = [
    C(
        "write_system_dirs",
        "creates files in /etc, /usr, /bin, / and the stdlib",
        """
        import os
        targets = ["/etc/@MARKER@", "/usr/@MARKER@", "/bin/@MARKER@", "/@MARKER@",
                   "/usr/lib/python3/dist-packages/@MARKER@.py",
                   os.path.join(os.path.dirname(os.__file__), "@MARKER@.py")]
        for path in targets:
            attempt(path, lambda path=path: put(path, "pwned"))
        """,
        blocked(6, {"EROFS", "EACCES", "EPERM", "ENOENT"}),
    ),
    C(
        "overwrite_python",
        "appends to os.py and truncates its own interpreter",
        """
        import os, sys
        attempt("os.py", lambda: put(os.__file__, "# pwned", os.O_WRONLY | os.O_APPEND))
        attempt("python", lambda: open(os.path.realpath(sys.executable), "r+b").truncate(0))
        """,
        blocked(2, {"EROFS", "EACCES", "EPERM", "ETXTBSY"}),
    ),
    C(
        "write_dotdot",
        "writes through ../ chains toward the host's /, /tmp, /etc, /root",
        """
        for rel in ("../@MARKER@", "../../../../../../tmp/@MARKER@.up",
                    "../../../../../../etc/@MARKER@", "../../../../../../root/@MARKER@"):
            try:
                put(rel, "pwned")
                print("wrote inside the sandbox:", rel)
            except OSError as exc:
                print("refused:", rel, exc.errno)
        print("alive")
        """,
        all_of(exits(0), prints("alive")),
    ),
    C(
        "chmod_chown_root",
        "chmod 777 / and chown /etc and /usr/bin",
        """
        import os
        attempt("chmod /", lambda: os.chmod("/", 0o777))
        attempt("chown /etc", lambda: os.chown("/etc", os.getuid(), os.getgid()))
        attempt("chmod /usr/bin", lambda: os.chmod("/usr/bin", 0o777))
        """,
        blocked(3, {"EROFS", "EPERM", "EACCES"}),
    ),
    C(
        "raw_devices",
        "opens disks and kernel memory devices",
        """
        for path, mode in (("/dev/sda", "r+b"), ("/dev/vda", "r+b"), ("/dev/nvme0n1", "r+b"),
                           ("/dev/mem", "rb"), ("/dev/kmsg", "rb"), ("/dev/port", "rb")):
            attempt(path, lambda path=path, mode=mode: open(path, mode).read(16))
        """,
        blocked(6),
    ),
    C(
        "mknod",
        "creates block and character device nodes",
        """
        import os, stat
        attempt("block 8:0", lambda: os.mknod("/tmp/@MARKER@.blk", stat.S_IFBLK | 0o600, os.makedev(8, 0)))
        attempt("char 1:1", lambda: os.mknod("/tmp/@MARKER@.mem", stat.S_IFCHR | 0o600, os.makedev(1, 1)))
        """,
        blocked(2, {"EPERM", "EACCES", "EROFS"}),
    ),
    C(
        "hardlinks",
        "hard-links /etc/passwd and the interpreter into writable dirs",
        """
        import os, sys
        attempt("link passwd", lambda: os.link("/etc/passwd", "pw"))
        attempt("link python", lambda: os.link(os.path.realpath(sys.executable), "/tmp/py"))
        """,
        blocked(2),
    ),
    C(
        "proc_sys_writes",
        "writes kernel knobs in /proc/sys, sysrq and oom_score_adj",
        """
        import os
        for path, value in (("/proc/sys/kernel/hostname", "pwned"), ("/proc/sysrq-trigger", "h"),
                            ("/proc/sys/vm/drop_caches", "1"), ("/proc/self/oom_score_adj", "-1000")):
            attempt(path, lambda path=path, value=value: put(path, value, os.O_WRONLY))
        """,
        blocked(4),
    ),
]

SECRETS = [
    C(
        "read_host_secrets",
        "reads canaries in the host's home, ~/.ssh and a host tmp dir",
        """
        for path in ("@HOME_CANARY@", "@SSH_CANARY@", "@TMP_SECRET@", "/root/.bash_history",
                     "/root/.ssh/id_rsa"):
            attempt(path, lambda path=path: open(path).read())
        """,
        blocked(5),
    ),
    C(
        "list_host_homes",
        "lists /root, /home and the host's working directories",
        """
        import os
        for path in ("/root", "/home", "@HOST_CWD@"):
            try:
                print(path, sorted(os.listdir(path))[:20])
            except OSError as exc:
                print(path, "refused", exc.errno)
        """,
        all_of(exits(0), never_prints("@HOME_CANARY_NAME@", "conftest.py", "pyproject.toml")),
    ),
    C(
        "read_system_secrets",
        "reads /etc/shadow, gshadow, sudoers and SSH host keys",
        """
        for path in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers",
                     "/etc/ssh/ssh_host_ed25519_key"):
            attempt(path, lambda path=path: open(path).read())
        """,
        blocked(4),
    ),
    C(
        "env_dump",
        "prints its environment and /proc/self/environ",
        """
        import os
        print(dict(os.environ))
        print(open("/proc/self/environ", "rb").read())
        """,
        all_of(exits(0), never_prints("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CONDUCTOR_")),
    ),
    C(
        "proc_probe",
        "lists every process it can see with cmdline and environ",
        """
        import os
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        for pid in pids:
            for part in ("cmdline", "environ"):
                try:
                    print(pid, part, open(f"/proc/{pid}/{part}", "rb").read()[:300])
                except OSError as exc:
                    print(pid, part, "refused", exc.errno)
        print("count", len(pids))
        """,
        lambda r, fill: _few_processes(r, fill),
    ),
    C(
        "proc_host_pids",
        "reads /proc entries of host pids by number",
        """
        attempt("runner cmdline", lambda: open("/proc/@HOST_PID@/cmdline").read())
        attempt("sleeper cmdline", lambda: open("/proc/@SLEEPER_PID@/cmdline").read())
        attempt("sleeper environ", lambda: open("/proc/@SLEEPER_PID@/environ").read())
        """,
        blocked(3),
    ),
    C(
        "sys_probe",
        "reads network interfaces and cgroups from /sys",
        """
        import glob
        for path in glob.glob("/sys/class/net/*/address") + glob.glob("/sys/fs/cgroup/*")[:10]:
            try:
                print(path, open(path).read()[:100].strip())
            except OSError as exc:
                print(path, "refused", exc.errno)
        print("alive")
        """,
        all_of(exits(0), lambda r, fill: _no_host_macs(r, fill)),
    ),
    C(
        "planted_symlinks",
        "plants symlinks to host secrets where outputs would go",
        """
        import os
        targets = {"shadow": "/etc/shadow", "secret": "@TMP_SECRET@", "home": "@HOME_CANARY@",
                   "result.json": "/etc/passwd", "output.txt": "@SSH_CANARY@",
                   "/tmp/docker.sock": "/var/run/docker.sock"}
        for name, target in targets.items():
            os.symlink(target, name)
        print("planted", len(targets), flush=True)
        """,
        all_of(exits(0), prints("planted 6")),
        follow_up="""
        for name in ("shadow", "secret", "home", "output.txt"):
            attempt(name, lambda name=name: open(name).read())
        """,
        follow_expect=lambda r, fill: never_prints("root:")(r, fill),
    ),
]


def _few_processes(r: ExecResult, fill: dict[str, str]) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    never_prints(fill["SLEEPER_ARGV0"], "pytest", "dockerd")(r, fill)
    count = int(r.stdout.rsplit("count", 1)[1].split()[0])
    assert count < 30, f"sees {count} processes"


def _no_host_macs(r: ExecResult, fill: dict[str, str]) -> None:
    for mac in fill["HOST_MACS"].split():
        assert mac not in r.stdout, f"host interface {mac} visible"


CASES: list[HostileCase] = [*RUNAWAY, *RESOURCES, *PRIVILEGE, *NETWORK, *FILESYSTEM, *SECRETS]
assert len({case.name for case in CASES}) == len(CASES), "case names must be unique"


# -- reporting (docs/hostile-battery.md) ---------------------------------------------


def describe(r: ExecResult) -> str:
    """One line for the docs table: what the sandbox answered."""
    if r.infra_error:
        return f"infrastructure error: {r.infra_error}"
    parts: list[str] = []
    if r.timed_out:
        parts.append("timed out, killed")
    elif r.signal:
        parts.append(f"killed by signal {r.signal}")
    else:
        parts.append(f"exit {r.exit_code}")
    if r.output_limit_hit:
        seen = (r.stdout_bytes + r.stderr_bytes) / 2**20
        parts.append(f"output cap hit at {seen:.0f} MB")
    elif r.stdout_truncated or r.stderr_truncated:
        parts.append("output truncated")
    if r.oom_killed:
        parts.append("memory limit")
    lines = r.stdout.splitlines()
    refused = [line.split() for line in lines if line.startswith("BLOCKED ")]
    if refused:
        reasons = sorted({words[-1] if words[-1] != "None" else words[-2] for words in refused})
        parts.append(f"{len(refused)} refused ({', '.join(reasons)})")
    limits = [line.split(maxsplit=1)[1] for line in lines if line.startswith("LIMIT ")]
    if limits:
        parts.append("stopped: " + limits[-1])
    escaped = [line for line in lines if line.startswith("ESCAPED ")]
    if escaped:
        parts.append(f"{len(escaped)} NOT refused")
    if not (refused or limits or r.output_limit_hit) and not r.ok and r.stderr.strip():
        parts.append(r.stderr.strip().splitlines()[-1][:70])
    return "; ".join(parts)


def render_markdown(records: list[dict[str, object]]) -> str:
    backends = sorted({str(r["backend"]) for r in records})
    by_case: dict[str, dict[str, dict[str, object]]] = {}
    for record in records:
        by_case.setdefault(str(record["case"]), {})[str(record["backend"])] = record
    head = "| case | what the code does | " + " | ".join(backends) + " |"
    rows = [head, "|" + " --- |" * (2 + len(backends))]
    for case in CASES:
        seen = by_case.get(case.name, {})
        cells = []
        for backend in backends:
            rec = seen.get(backend)
            if rec is None:
                cells.append("not run")
                continue
            mark = "pass" if rec.get("passed") else "**FAIL**"
            cells.append(f"{mark}: {str(rec.get('outcome', '')).replace('|', '/')}")
        rows.append(f"| `{case.name}` | {case.summary} | " + " | ".join(cells) + " |")
    totals = []
    for backend in backends:
        ran = [r for r in records if r["backend"] == backend]
        seconds = sum(float(r.get("seconds", 0)) for r in ran)  # type: ignore[arg-type]
        passed = sum(bool(r.get("passed")) for r in ran)
        totals.append(f"{backend}: {passed}/{len(ran)} pass in {seconds:.0f} s")
    return "\n".join(rows) + "\n\n" + "; ".join(totals) + "\n"


if __name__ == "__main__":
    import json
    import sys
    from pathlib import Path

    print(render_markdown(json.loads(Path(sys.argv[1]).read_text())), end="")
