"""The hostile-code battery: every table of cases, and the report of docs/hostile-battery.md.

Each class of attack has its own file (hostile_*.py); the preamble, the case type and
the expectations are in hostile_base.py. Expectations are backend-neutral: they state
what must hold on any sandbox (a timeout, a denial, a capped stream), not how a
particular backend gets there.
"""

from __future__ import annotations

from hostile_base import HostileCase, describe  # noqa: F401 (test_hostile imports them here)
from hostile_filesystem import FILESYSTEM, SECRETS
from hostile_hardening import HARDENING
from hostile_hostfacts import HOSTFACTS
from hostile_identity import IDENTITY
from hostile_later_cells import LATER_CELLS
from hostile_memory import MEMORY
from hostile_output import OUTPUT
from hostile_privilege import NETWORK, PRIVILEGE
from hostile_reach import REACH
from hostile_reaping import CAPABILITIES, REAPING
from hostile_resources import RESOURCES
from hostile_runaway import RUNAWAY
from hostile_sockets import SOCKETS
from hostile_supervisor import SUPERVISOR

CASES: list[HostileCase] = [
    *RUNAWAY,
    *RESOURCES,
    *PRIVILEGE,
    *NETWORK,
    *FILESYSTEM,
    *SECRETS,
    *SUPERVISOR,
    *MEMORY,
    *IDENTITY,
    *HARDENING,
    *REACH,
    *OUTPUT,
    *SOCKETS,
    *REAPING,
    *CAPABILITIES,
    *LATER_CELLS,
    *HOSTFACTS,
]
assert len({case.name for case in CASES}) == len(CASES), "case names must be unique"

# The fast tier's share of the battery: one quick case of each class (the full tier runs
# them all). Chosen for speed, not for being the hardest of their class.
FAST = frozenset(
    {
        "long_sleep",  # runaway code meets the timeout
        "fd_exhaustion",  # resources
        "read_host_secrets",  # the host's files
        "sigkill_supervisors",  # the runner is out of reach
        "sysv_shm",  # memory outside address spaces
        "uid_separation",  # identity
        "netlink_uevent",  # the allowlist
        "forged_frame_on_stdout",  # output and protocol
        "netlink_every_protocol",  # sockets by family and protocol
        "children_for_the_parent",  # processes nobody reaps
        "capability_sets_and_bounding_set",  # no capability to hold or gain
        "home_is_no_shared_place",  # cells that shape later cells
        "host_cmdline",  # host facts
        "write_system_dirs",  # the filesystem
        "sandbox_uid",  # identity
        "frame_headers_in_output",  # output
        "tcp_egress",  # network
        "setuid_root",  # privilege
        "process_vm_writev_supervisors",  # reach into the supervisors
    }
)
# Classes whose cases run in the full tier only, and why.
FULL_TIER_ONLY = {
    # Without the image's root file system (CONDUCTOR_SANDBOX_CACHE unset, as in a plain
    # `make test`), bubblewrap shows the host's /proc/mounts device names: a known leak,
    # caught in the full tier, which CI runs with the image's root.
    "HOSTFACTS": "needs the image's root file system for bubblewrap",
}
# Cases that fill the machine's memory or processes: not beside other heavy tests.
SERIAL = frozenset(case.name for case in MEMORY) | {"memory_bomb", "fork_bomb", "thread_bomb"}
_NAMES = {case.name for case in CASES}
assert not (FAST | SERIAL) - _NAMES, f"unknown case names: {(FAST | SERIAL) - _NAMES}"


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
