"""Hostile cases: privilege, kernel attack surface and the network."""

from __future__ import annotations

from hostile_base import REFUSED, C, blocked

from conductor_kernel.interfaces import ExecResult

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
