"""The hostile-code battery's shared parts: the preamble, the case type, expectations.

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

from conductor_kernel.interfaces import ExecResult

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


C = HostileCase  # the tables read better with a short name


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
    sweeps = [line.split(maxsplit=2) for line in lines if line.startswith("REFUSED ")]
    if sweeps and len(sweeps[-1]) == 3:
        parts.append(f"{sweeps[-1][1]} refused {sweeps[-1][2]}".replace("'", ""))
    limits = [line.split(maxsplit=1)[1] for line in lines if line.startswith("LIMIT ")]
    if limits:
        parts.append("stopped: " + limits[-1])
    escaped = [line for line in lines if line.startswith("ESCAPED ")]
    if escaped:
        parts.append(f"{len(escaped)} NOT refused")
    if not (refused or sweeps or limits or r.output_limit_hit) and not r.ok and r.stderr.strip():
        parts.append(r.stderr.strip().splitlines()[-1][:70])
    return "; ".join(parts)
