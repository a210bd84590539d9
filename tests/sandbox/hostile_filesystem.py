"""Hostile cases: the file system and the host's secrets."""

from __future__ import annotations

from hostile_base import C, all_of, blocked, exits, never_prints, prints

from conductor_kernel.interfaces import ExecResult

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
