"""Hostile cases: exhausting memory, disk, descriptors, streams."""

from __future__ import annotations

from hostile_base import (
    C,
    all_of,
    capped,
    crashed,
    exits,
    failed,
    in_stderr,
    limit_reached,
    memory_refused,
    prints,
    timed_out,
)

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
