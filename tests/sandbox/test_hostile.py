"""The hostile-code battery, run against every sandbox backend (bubblewrap and Docker).

Each case asserts its own expected outcome (tests/sandbox/hostile_cases.py) and then the
invariants that hold for every case: the result arrives within the timeout plus 60 s and
as data (no exception, no infrastructure error); the host survives (its canary files,
processes, listeners, hostname and system files are untouched, and no file named after
the run's marker appeared on it); no secret of the host shows in the output; nothing of
the run is left running; and the same sandbox still runs the next piece of code.

A backend that cannot run here skips, and fails under CONDUCTOR_REQUIRE_DOCKER=1.
With CONDUCTOR_HOSTILE_REPORT=path the outcomes are written there as JSON, from which
`python tests/sandbox/hostile_cases.py path` prints the table of docs/hostile-battery.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hostile_cases import CASES, FAST, SERIAL, HostileCase, describe
from hostile_hostfacts import fill_host_facts

from conductor_kernel.interfaces import ExecResult, Sandbox
from sandbox.registry import backend_class, probe
from support import skip_or_fail

# One worker runs the whole battery: its witness plants canaries in the host's home and
# watches the home for changes, which a second worker's witness would make.
pytestmark = pytest.mark.xdist_group("hostile")

BACKENDS = ("bwrap", "docker")
# Generous: the waits below end as soon as the sandbox is done, and a busy machine
# must not fail a case (the timeout's precision is bench/stops.py's figure).
GRACE_SECONDS = 60.0
# Read at import: the autouse fixture of conftest clears CONDUCTOR_* variables per test.
REPORT_PATH = os.environ.get("CONDUCTOR_HOSTILE_REPORT")
RECORDS: list[dict[str, object]] = []


@pytest.fixture(scope="module")
def witness() -> Iterator[HostWitness]:
    host = HostWitness.create()
    try:
        yield host
    finally:
        host.close()


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, witness: HostWitness) -> Iterator[Sandbox]:
    """One sandbox per backend for the whole battery, as for one long conductor run."""
    name = request.param
    reason = probe(name)
    if reason is not None:
        skip_or_fail(
            f"sandbox backend {name!r} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER"
        )
    # The host's keys are in the environment while the sandbox is made (and used: below).
    with pytest.MonkeyPatch.context() as patch:
        for key, value in witness.env_canaries.items():
            patch.setenv(key, value)
        box = backend_class(name)()
    try:
        yield box
    finally:
        box.close()
        if REPORT_PATH:
            Path(REPORT_PATH).write_text(json.dumps(RECORDS, indent=1))


@pytest.fixture
def host_keys(witness: HostWitness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the canary keys back after conftest's autouse fixture removed them."""
    for key, value in witness.env_canaries.items():
        monkeypatch.setenv(key, value)


def _marks(case: HostileCase) -> list[pytest.MarkDecorator]:
    marks = [] if case.name in FAST else [pytest.mark.slow]
    return [*marks, pytest.mark.serial] if case.name in SERIAL else marks


@pytest.mark.usefixtures("host_keys")
@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.name, marks=_marks(case)) for case in CASES]
)
def test_hostile_case(case: HostileCase, sandbox: Sandbox, witness: HostWitness) -> None:
    started = time.monotonic()
    marker = "hx" + uuid.uuid4().hex[:10]
    fill = witness.fill(marker)
    record: dict[str, object] = {
        "backend": sandbox.name,
        "case": case.name,
        "summary": case.summary,
    }
    RECORDS.append(record)
    result = _run_bounded(sandbox, case.source(fill), case.timeout, case.stdin)
    record["outcome"] = describe(result)
    record["passed"] = False
    case.expect(result, fill)
    outputs = [result]
    if case.follow_up is not None:
        follow = _run_bounded(sandbox, case.source(fill, follow_up=True), 10.0, "")
        record["outcome"] = f"{record['outcome']}; then {describe(follow)}"
        assert case.follow_expect is not None
        case.follow_expect(follow, fill)
        outputs.append(follow)
    for each in outputs:
        witness.assert_no_secrets(each)
    leftovers = _wait_for_no_strays(marker)
    assert not leftovers, f"processes of the run outlived it: {leftovers}"
    witness.assert_host_untouched(marker)
    if sandbox.name == "docker":
        extra = _wait_for_container_count(int(getattr(sandbox, "pool_size", 1)) + 1)
        assert not extra, f"containers beyond the pool and the run's own: {extra}"
    health = sandbox.run("print(6 * 7)", timeout=15.0)
    assert health.ok and health.stdout.strip() == "42", f"sandbox broken afterwards: {health}"
    record["passed"] = True
    record["seconds"] = round(time.monotonic() - started, 2)


def test_the_fast_tier_holds_a_case_of_every_class() -> None:
    """Each class of attack is a list in hostile_cases.py: one added later without a
    fast-tier case would go unseen by `make test`."""
    import hostile_cases

    classes = {
        name: cases
        for name, cases in vars(hostile_cases).items()
        if name.isupper() and name != "CASES" and isinstance(cases, list)
    }
    assert set(hostile_cases.FULL_TIER_ONLY) <= set(classes)
    assert sum(len(cases) for cases in classes.values()) == len(CASES)
    missing = [
        name
        for name, cases in classes.items()
        if not FAST & {c.name for c in cases} and name not in hostile_cases.FULL_TIER_ONLY
    ]
    assert not missing, f"no fast-tier case for {missing}: add one to FAST"
    gone = FAST - {case.name for case in CASES}
    assert not gone, f"FAST names cases that are gone: {sorted(gone)}"


def _wait_for_container_count(allowed: int) -> list[str]:
    """Our running containers beyond `allowed` (the warm pool plus the run's own)."""
    from sandbox.docker import sweeper
    from sandbox.docker.backend import docker_client

    labels = [f"{sweeper.LABEL}=1", f"{sweeper.OWNER_PID}={os.getpid()}"]
    deadline = time.monotonic() + GRACE_SECONDS
    while True:
        running = docker_client().api.containers(filters={"label": labels})
        if len(running) <= allowed or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return [c["Id"][:12] for c in running] if len(running) > allowed else []


def _run_bounded(sandbox: Sandbox, code: str, timeout: float, stdin: str) -> ExecResult:
    started = time.monotonic()
    result = sandbox.run(code, timeout=timeout, stdin=stdin)
    elapsed = time.monotonic() - started
    assert isinstance(result, ExecResult)
    assert result.infra_error is None, f"the sandbox itself failed: {result.infra_error}"
    assert elapsed <= timeout + GRACE_SECONDS, f"took {elapsed:.1f}s for a {timeout}s timeout"
    return result


def _wait_for_no_strays(marker: str) -> list[str]:
    """Processes carrying the marker, once teardown had up to GRACE_SECONDS to finish."""
    deadline = time.monotonic() + GRACE_SECONDS
    while (found := stray_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


# -- the host's side: canaries planted before, checked after every case -----------------


@dataclass
class HostWitness:
    """Canaries on the host (files, keys, a process, listeners) and how to check them."""

    secret: str
    env_canaries: dict[str, str]
    home_canary: Path
    ssh_canary: Path
    tmp_secret: Path
    sleeper: subprocess.Popen[bytes]
    sleeper_argv0: str
    listener: socket.socket
    abstract_listener: socket.socket
    abstract_name: str
    hostname: str
    host_ips: list[str]
    host_macs: list[str]
    snapshots: dict[Path, tuple[int, ...]] = field(default_factory=dict)
    cleanup: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls) -> HostWitness:
        token = uuid.uuid4().hex[:12]
        # Secrets get tokens of their own: the paths that name the canaries may show.
        secret = f"CANARY-SECRET-{uuid.uuid4().hex}"
        key_token = uuid.uuid4().hex
        home = Path.home()
        ssh_dir = home / ".ssh"
        cleanup: list[Path] = []
        try:  # another xdist worker's battery may make it first: then it is theirs
            ssh_dir.mkdir(mode=0o700)
            cleanup.append(ssh_dir)
        except FileExistsError:
            pass
        home_canary = home / f".conductor-canary-{token}"
        ssh_canary = ssh_dir / f"id_conductor_canary_{token}"
        tmp_dir = Path(tempfile.mkdtemp(prefix="conductor-host-secret-"))
        tmp_secret = tmp_dir / "secret.txt"
        for path in (home_canary, ssh_canary, tmp_secret):
            path.write_text(secret + "\n")
            path.chmod(0o600)
        cleanup = [home_canary, ssh_canary, tmp_secret, tmp_dir, *cleanup]
        argv0 = f"hostcanary{token}"
        # Alive for the whole battery, however slow the machine (it is killed at the end).
        sleeper = subprocess.Popen([argv0, "86400"], executable=shutil.which("sleep"))
        listener = socket.create_server(("0.0.0.0", 0))
        listener.setblocking(False)
        abstract_name = f"conductor-canary-{token}"
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind("\0" + abstract_name)
        abstract.listen()
        abstract.setblocking(False)
        witness = cls(
            secret=secret,
            env_canaries={
                "ANTHROPIC_API_KEY": f"sk-ant-canary-{key_token}",
                "OPENAI_API_KEY": f"sk-canary-{key_token}",
                "CONDUCTOR_CANARY_TOKEN": f"token-canary-{key_token}",
            },
            home_canary=home_canary,
            ssh_canary=ssh_canary,
            tmp_secret=tmp_secret,
            sleeper=sleeper,
            sleeper_argv0=argv0,
            listener=listener,
            abstract_listener=abstract,
            abstract_name=abstract_name,
            hostname=socket.gethostname(),
            host_ips=_host_ipv4_addresses(),
            host_macs=_host_macs(),
            cleanup=cleanup,
        )
        witness.snapshots = {path: _fingerprint(path) for path in witness._watched()}
        return witness

    def fill(self, marker: str) -> dict[str, str]:
        return {
            "COMM": marker[:15],
            "MARKER": marker,
            "HOME_CANARY": str(self.home_canary),
            "HOME_CANARY_NAME": self.home_canary.name,
            "SSH_CANARY": str(self.ssh_canary),
            "TMP_SECRET": str(self.tmp_secret),
            "HOST_PID": str(os.getpid()),
            "HOST_CWD": str(Path.cwd()),
            "SLEEPER_PID": str(self.sleeper.pid),
            "SLEEPER_ARGV0": self.sleeper_argv0,
            "HOST_PORT": str(self.listener.getsockname()[1]),
            "HOST_IPS": repr(self.host_ips),
            "HOST_SERVICE_COUNT": str(len(self.host_ips) + 1),
            "ABSTRACT": self.abstract_name,
            "HOST_MACS": " ".join(self.host_macs),
            "HOST_EUID": str(os.geteuid()),
            "HOST_HOME": str(Path.home()),
            "HOST_CMDLINE": _read("/proc/cmdline")[:80],
            "HOST_BOOT_ID": _read("/proc/sys/kernel/random/boot_id"),
            "HOST_MEMTOTAL": _read("/proc/meminfo").split("\n", 1)[0].split(":")[-1],
            **fill_host_facts(),
        }

    def assert_no_secrets(self, result: ExecResult) -> None:
        text = result.stdout + result.stderr
        for secret in (self.secret, *self.env_canaries.values()):
            assert secret not in text, "a host secret reached the sandbox's output"

    def assert_host_untouched(self, marker: str) -> None:
        assert self.sleeper.poll() is None, "the host canary process died"
        state = Path(f"/proc/{self.sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state not in ("T", "t"), "the host canary process was stopped"
        for sock in (self.listener, self.abstract_listener):
            with contextlib.suppress(BlockingIOError):
                sock.accept()[0].close()
                raise AssertionError(f"the sandbox reached a host listener {sock}")
        assert socket.gethostname() == self.hostname, "the host's hostname changed"
        for path, before in self.snapshots.items():
            assert _fingerprint(path) == before, f"host file {path} changed"
        assert self.secret in self.tmp_secret.read_text(), "a host canary file was altered"
        planted = [str(hit) for folder in self._marker_dirs() for hit in folder.glob(f"*{marker}*")]
        assert not planted, f"the run created files on the host: {planted}"

    def close(self) -> None:
        self.sleeper.kill()
        self.sleeper.wait()
        self.listener.close()
        self.abstract_listener.close()
        for path in self.cleanup:
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()

    def _watched(self) -> list[Path]:
        files = [Path("/etc/passwd"), Path(os.__file__), Path(os.path.realpath(sys.executable))]
        files += [Path("/usr/bin/python3").resolve(), Path("/etc/hostname")]
        dirs = [Path("/"), Path("/etc"), Path("/usr"), Path("/usr/bin"), Path.home()]
        canaries = [self.home_canary, self.ssh_canary, self.tmp_secret]
        return [p for p in [*files, *dirs, *canaries] if p.exists()]

    def _marker_dirs(self) -> list[Path]:
        home = Path.home()
        candidates = [Path("/"), Path("/etc"), Path("/usr"), Path("/bin"), Path("/tmp")]
        candidates += [Path("/var/tmp"), home, home / ".ssh", Path.cwd(), Path("/root")]
        candidates += [Path("/usr/lib/python3/dist-packages"), Path(os.__file__).parent]
        return [p for p in candidates if p.is_dir()]


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _fingerprint(path: Path) -> tuple[int, ...]:
    """Mode and owner of a directory (others may add files); content stamps of a file."""
    st = path.stat()
    if path.is_dir():
        return (st.st_mode, st.st_uid, st.st_gid)
    return (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)


def stray_processes(marker: str) -> list[str]:
    """Host processes named after the marker (inherited comm) or carrying it in argv."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            comm = Path(entry.path, "comm").read_text().strip()
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if comm == marker[:15] or marker.encode() in cmdline:
            found.append(f"{entry.name}:{comm}:{cmdline[:80]!r}")
    return found


def _host_ipv4_addresses() -> list[str]:
    """Every IPv4 address of this host's interfaces (the sandbox must reach none)."""
    addresses = {"127.0.0.1"}
    for _, name in socket.if_nameindex():
        probe_socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            packed = struct.pack("256s", name.encode()[:15])
            info = fcntl.ioctl(probe_socket.fileno(), 0x8915, packed)  # SIOCGIFADDR
            addresses.add(socket.inet_ntoa(info[20:24]))
        except OSError:
            pass
        finally:
            probe_socket.close()
    return sorted(addresses)


def _host_macs() -> list[str]:
    macs = set()
    for path in Path("/sys/class/net").glob("*/address"):
        with contextlib.suppress(OSError):
            mac = path.read_text().strip()
            if mac and mac != "00:00:00:00:00:00":
                macs.add(mac)
    return sorted(macs)
