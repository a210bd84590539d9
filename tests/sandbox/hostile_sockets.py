"""Hostile cases: sockets, by class: families, protocols, and options the kernel keeps.

The round this answers queued 407 MiB beyond the memory bound in netlink acknowledgements
(netlink buffers are charged to no cgroup), raised socket buffers past what the cgroup
charges, attached classic BPF programs and opened ICMP ping sockets. Each case sweeps a
whole class (every netlink protocol, every internet protocol but TCP and UDP, every
option outside the short list the standard library sets) on every kind of socket a
cell can open, and checks that plain TCP, UDP and unix sockets still work.
"""

from __future__ import annotations

from hostile_base import C

from conductor_kernel.interfaces import ExecResult
from sandbox.policy.seccomp import SOCKET_OPTIONS

# Counts refusals and prints only what was let through (a sweep of thousands of calls
# would otherwise overflow the captured output).
SWEEP = r"""
import errno, socket
refused, reasons = 0, set()
def tally(label, fn):
    global refused
    try:
        fn()
    except OSError as exc:
        refused += 1
        reasons.add(errno.errorcode.get(exc.errno, str(exc.errno)))
        return False
    print("ESCAPED", label, flush=True)
    return True
def opened(family, kind, proto=0):
    s = socket.socket(family, kind, proto)
    s.close()
"""

SOCKET_KINDS = r"""
def kinds():
    # Every kind of socket a cell may open, each fresh (name, socket, level family).
    made = []
    for name, args in (("unix-stream", (1, 1)), ("unix-dgram", (1, 2)), ("unix-seqpacket", (1, 5)),
                       ("tcp4", (2, 1)), ("udp4", (2, 2)), ("tcp6", (10, 1)), ("udp6", (10, 2))):
        try:
            made.append((name, socket.socket(*args)))
        except OSError as exc:
            print("UNAVAILABLE", name, exc, flush=True)
    return made
"""


def swept(minimum: int) -> object:
    """Nothing escaped, at least `minimum` attempts were refused, and the positive
    controls (`WORKS ...`) printed."""

    def check(r: ExecResult, _: dict[str, str]) -> None:
        assert r.exit_code == 0, (r.exit_code, r.signal, r.stderr[-400:])
        lines = r.stdout.splitlines()
        escaped = [line for line in lines if line.startswith("ESCAPED")]
        assert not escaped, f"let through: {escaped[:10]} ({len(escaped)} in all)"
        counts = [line.split() for line in lines if line.startswith("REFUSED")]
        assert counts and int(counts[-1][1]) >= minimum, f"refused {counts}: {r.stdout[-300:]}"
        assert "WORKS" in r.stdout, f"the allowed sockets broke: {r.stdout[-300:]}"

    return check


SOCKETS = [
    C(
        "netlink_every_protocol",
        "opens netlink sockets of every protocol number 0-31 as raw and datagram sockets "
        "(route and sock_diag included: name resolution must work without them)",
        SWEEP
        + """
for proto in range(32):
    for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
        tally(f"netlink{proto}/{kind}", lambda: opened(16, kind, proto))
print("REFUSED", refused, sorted(reasons), flush=True)
# AI_ADDRCONFIG makes glibc ask netlink which address families are configured; refused,
# it falls back. (Docker's /etc/hosts is empty without a network: no name to look up.)
print("WORKS", socket.getaddrinfo("127.0.0.1", 80, flags=socket.AI_ADDRCONFIG)[0][4])
""",
        swept(64),
    ),
    C(
        "inet_protocols_beyond_tcp_udp",
        "opens internet sockets of every protocol number but TCP and UDP (ICMP ping, "
        "ICMPv6, SCTP, UDP-Lite, MPTCP, raw...) and every socket type, over IPv4 and IPv6",
        SWEEP
        + """
protocols = [p for p in range(1, 256) if p not in (6, 17)] + [262]
for family in (socket.AF_INET, socket.AF_INET6):
    for proto in protocols:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
            tally(f"{family}/{kind}/{proto}", lambda: opened(family, kind, proto))
    tally(f"{family}/raw/0", lambda: opened(family, socket.SOCK_RAW, 0))
print("REFUSED", refused, sorted(reasons), flush=True)
ok = [socket.socket(f, k, p) for f in (2, 10) for k, p in ((1, 0), (2, 0), (1, 6), (2, 17))]
print("WORKS", len(ok))
""",
        swept(2 * 254 * 4),
    ),
    C(
        "socket_options_the_kernel_keeps",
        "on every kind of socket, sets every option outside the standard library's "
        "(buffer sizes and their FORCE variants, classic and eBPF filters, zero-copy, "
        "multicast groups, kTLS, MD5 keys, fast open...) for levels socket, IP, IPv6, "
        "TCP and UDP, option numbers 0-80; buffers must stay at their defaults",
        SWEEP
        + SOCKET_KINDS
        + """
import struct
allowed = @ALLOWED_OPTIONS@  # the short list the standard library and servers set
payloads = (struct.pack("i", 1 << 30), bytes(64))
for name, sock in kinds():
    before = (sock.getsockopt(1, 7), sock.getsockopt(1, 8))  # SO_SNDBUF, SO_RCVBUF
    for level in (1, 0, 41, 6, 17):
        for option in range(81):
            if (level, option) in allowed:
                continue
            for payload in payloads:
                tally(f"{name}:{level}/{option}", lambda: sock.setsockopt(level, option, payload))
    after = (sock.getsockopt(1, 7), sock.getsockopt(1, 8))
    if after != before:
        print("ESCAPED buffers of", name, before, "->", after, flush=True)
print("REFUSED", refused, sorted(reasons), flush=True)
server = socket.create_server(("127.0.0.1", 0))  # SO_REUSEADDR: the standard library's own
client = socket.create_connection(server.getsockname())
client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
peer, _ = server.accept()
client.sendall(b"ping")
print("WORKS", peer.recv(4))
""",
        swept(7 * 5 * 60),
        timeout=20,
    ),
]
_ALLOWED = repr({(level, option) for level, option, _ in SOCKET_OPTIONS})
SOCKETS = [
    C(**{**case.__dict__, "code": case.code.replace("@ALLOWED_OPTIONS@", _ALLOWED)})
    for case in SOCKETS
]
