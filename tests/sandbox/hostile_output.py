"""Hostile cases, second round: output built to break the host's reader, and leaks of
the host's identity, paths and keys. Each must come back as data.
"""

from __future__ import annotations

from hostile_base import C, all_of, capped, exits, never_prints

from conductor_kernel.interfaces import ExecResult


def _decoded(r: ExecResult, _: dict[str, str]) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    assert "\ufffd" in r.stdout and "\ufffd" in r.stderr, "invalid UTF-8 not replaced"
    assert r.stdout.endswith("end\n"), repr(r.stdout[-80:])


def _no_key_names(r: ExecResult, _: dict[str, str]) -> None:
    assert r.exit_code == 0, r.stderr[-300:]
    assert "KEYVAR" not in r.stdout, f"a key-like variable reached the cell: {r.stdout!r}"


def _ends_with_end(r: ExecResult, _: dict[str, str]) -> None:
    assert r.stdout.endswith("end\n"), repr(r.stdout[-40:])


OUTPUT = [
    C(
        "invalid_utf8_streams",
        "writes invalid UTF-8, lone surrogates, NULs and split multibyte characters",
        """
import sys
junk = b"\\xff\\xfe\\xc3\\x28\\xed\\xa0\\x80\\x00\\xf0\\x9f\\x98" + "é".encode()[:1]
for stream in (1, 2):
    _os.write(stream, junk * 1000 + b"\\xe2\\x82")
    _os.write(stream, b"\\xac\\n")
_os.write(1, "😀".encode() * 40000 + b"end\\n")
""",
        _decoded,
    ),
    C(
        "huge_single_line",
        "writes 40 MB on stdout without a newline, in one write per MB",
        """
chunk = b"y" * (1 << 20)
for _ in range(40):
    _os.write(1, chunk)
""",
        capped("stdout"),
        timeout=10.0,
    ),
    C(
        "frame_headers_in_output",
        "prints frame headers that claim 4 GiB and Docker stream headers, split across writes",
        """
import struct, time
for header in (struct.pack(">I", 0xFFFFFFFF), b"\\x01\\x00\\x00\\x00" + struct.pack(">I", 1 << 31)):
    for byte in header:
        _os.write(1, bytes([byte]))
        time.sleep(0.001)
    _os.write(2, header)
print("end")
""",
        all_of(exits(0), _ends_with_end),
    ),
    C(
        "key_like_environment",
        "looks for any variable naming a key, token or secret in its environment and init's",
        """
import re
env = dict(_os.environ)
for path in ("/proc/self/environ", "/proc/1/environ"):
    try:
        for item in open(path, "rb").read().split(b"\\0"):
            name, _, value = item.decode(errors="replace").partition("=")
            env[name] = value
    except OSError:
        pass
for name in env:
    if re.search("KEY|TOKEN|SECRET|PASSWORD|ANTHROPIC|OPENAI|AWS|CONDUCTOR", name.upper()):
        print("KEYVAR", name)
print("done")
""",
        _no_key_names,
    ),
    C(
        "host_paths_in_proc",
        "looks for the host's home, working dir and euid in its cgroup, mounts, maps and fds",
        """
import glob
text = ""
for path in ["/proc/self/cgroup", "/proc/1/cgroup", "/proc/self/mountinfo", "/proc/self/maps",
             "/proc/self/uid_map", "/proc/self/status", *glob.glob("/proc/self/fd/*")]:
    try:
        text += path + " " + (_os.readlink(path) if "/fd/" in path else open(path).read())
    except OSError:
        pass
print(text)
""",
        all_of(exits(0), never_prints("@HOST_CWD@", "@HOST_HOME@/")),
    ),
]
