"""The in-sandbox runner, driven over its real framed pipe protocol on this host.

No Docker needed: the runner is a standard-library program, so the same frames the
Docker backend sends through the attach stream go here through a subprocess's pipes.
(Stray-killing stays off outside a container; the Docker tests cover it.)
"""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "sandbox" / "runner" / "main.py"


class RunnerProcess:
    def __init__(self, workdir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(RUNNER), "--no-preload", "--workdir", str(workdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.next_id = 0

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = json.dumps({**message, "id": self.next_id}).encode()
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(struct.pack(">I", len(body)) + body)
        self.proc.stdin.flush()
        (size,) = struct.unpack(">I", self.proc.stdout.read(4))
        reply = json.loads(self.proc.stdout.read(size))
        assert reply["id"] == self.next_id
        return reply

    def run(self, code: str, **options: Any) -> dict[str, Any]:
        reply = self.call({"op": "run", "code": code, "timeout": 5.0, **options})
        for name in ("stdout", "stderr"):
            stream = reply[name]
            text = base64.b64decode(stream["head"]) + base64.b64decode(stream["tail"])
            reply[name] = text.decode("utf-8", "replace")
            reply[name + "_bytes"] = stream["bytes"]
        return reply


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunnerProcess]:
    process = RunnerProcess(tmp_path_factory.mktemp("runner-work"))
    assert process.call({"op": "ping"})["op"] == "pong"
    yield process
    assert process.proc.stdin is not None
    process.proc.stdin.close()  # EOF on its protocol input ends the runner
    assert process.proc.wait(timeout=10) == 0


def test_stdout_stderr_and_exit_code_are_separate(runner: RunnerProcess) -> None:
    reply = runner.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (reply["stdout"], reply["stderr"], reply["exit_code"]) == ("out\n", "err\n", 3)
    assert reply["signal"] is None and not reply["timed_out"]


def test_each_execution_starts_from_clean_interpreter_state(runner: RunnerProcess) -> None:
    runner.run("import math\nleaked = 42\nmath.pi = 3")
    reply = runner.run("import math\nprint('leaked' in globals(), math.pi > 3.14, __name__)")
    assert reply["stdout"] == "False True __main__\n"


def test_tracebacks_start_in_the_cell_like_a_script(runner: RunnerProcess) -> None:
    reply = runner.run("x = 1\n1 / 0")
    assert reply["exit_code"] == 1
    assert reply["stderr"].startswith('Traceback (most recent call last):\n  File "<cell>"')
    assert "runner.py" not in reply["stderr"]
    assert reply["stderr"].rstrip().endswith("ZeroDivisionError: division by zero")
    syntax = runner.run("def (")
    assert syntax["exit_code"] == 1 and "SyntaxError" in syntax["stderr"]


def test_system_exit_follows_python_semantics(runner: RunnerProcess) -> None:
    assert runner.run("raise SystemExit")["exit_code"] == 0
    message = runner.run("raise SystemExit('bye')")
    assert (message["exit_code"], message["stderr"]) == (1, "bye\n")


def test_stdin_is_delivered_and_otherwise_at_eof(runner: RunnerProcess) -> None:
    assert runner.run("import sys; print(sys.stdin.read()[::-1])", stdin="abc")["stdout"] == (
        "cba\n"
    )
    empty = runner.run("print(repr(input()))")
    assert empty["exit_code"] == 1 and "EOFError" in empty["stderr"]


def test_timeout_kills_the_whole_process_group(runner: RunnerProcess) -> None:
    # The forked child never ends by itself: had it outlived the kill, holding the
    # output pipe, no reply would come (and the test's timeout would fail it).
    code = "import os, time\nos.fork()\nwhile True: time.sleep(0.01)"
    reply = runner.run(code, timeout=0.5)
    assert reply["timed_out"] and reply["signal"] == 9 and reply["exit_code"] is None
    assert runner.run("print('next')")["stdout"] == "next\n"  # the runner lives on


def test_output_is_capped_head_and_tail_with_every_byte_counted(runner: RunnerProcess) -> None:
    reply = runner.run("print('A' * 5000 + 'Z' * 5000)", keep_bytes=100)
    assert reply["stdout_bytes"] == 10001
    assert reply["stdout"] == "A" * 50 + "Z" * 49 + "\n"


def test_runaway_output_is_killed_past_the_hard_cap(runner: RunnerProcess) -> None:
    reply = runner.run("while True: print('x' * 1000)", hard_cap_bytes=1_000_000)
    assert reply["output_limit_hit"] and not reply["timed_out"]  # the cap, before the timeout
    assert reply["signal"] == 9
    assert 1_000_000 < reply["stdout_bytes"] < 3_000_000


def test_the_cell_cannot_reach_the_protocol_pipes(runner: RunnerProcess) -> None:
    # Only 0, 1, 2 and the runner's completion pipe are open in the cell; writing
    # to fds 5.. (where the protocol copies live in the runner) fails.
    code = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd') if int(fd) > 4))"
    reply = runner.run(code)
    assert reply["exit_code"] == 0
    # The listing itself opens one fd for the directory; nothing else is inherited.
    assert len(json.loads(reply["stdout"])) <= 1


def test_a_cell_killing_itself_reports_the_signal(runner: RunnerProcess) -> None:
    reply = runner.run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert reply["signal"] == 9 and reply["exit_code"] is None and not reply["timed_out"]
