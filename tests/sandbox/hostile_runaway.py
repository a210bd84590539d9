"""Hostile cases: runaway processes (loops, bombs, daemons, signals)."""

from __future__ import annotations

from hostile_base import (
    C,
    alive_or_killed,
    all_of,
    blocked,
    exits,
    finished,
    limit_reached,
    not_growing,
    prints,
    timed_out,
)

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
