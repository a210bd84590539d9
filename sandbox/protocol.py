"""The host's end of the runner protocol: nothing from the sandbox is trusted.

The runner (sandbox/runner/main.py) answers each request with one length-prefixed JSON
frame. Whatever arrives is checked before use: a frame announcing more bytes than the
request can need is refused at its header (never buffered), the body must be a JSON
object of the expected shape, and at most a few stray frames are skipped. Any breach
raises `ProtocolError`, which the backends turn into an `ExecResult` carrying a
`sandbox_error` before replacing the sandbox. Both backends share `FramedConversation`;
each supplies how bytes are sent and received (Docker's attach socket, bwrap's pipes).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import struct
import time
from typing import Any

from conductor_kernel.interfaces import ExecResult
from conductor_kernel.text.display import visible_line
from conductor_kernel.text.output import CappedBuffer
from sandbox import preload

log = logging.getLogger("conductor.sandbox")

PING_REPLY_LIMIT = 64 * 1024
MAX_STRAY_FRAMES = 4
RUNNER_STDERR_KEEP = 4096
RESULT_FIELDS = {
    "op",
    "id",
    "stdout",
    "stderr",
    "exit_code",
    "signal",
    "timed_out",
    "oom_killed",
    "output_limit_hit",
    "duration_s",
}


class ProtocolError(Exception):
    """The runner's stream broke the protocol (size, JSON, shape): the sandbox is suspect."""


class RunnerGone(Exception):
    """The runner's stream ended: the sandbox stopped or the runner died."""


class DeadlineExceeded(Exception):
    """No reply before the host-side deadline."""


def reply_limit(keep_bytes: int) -> int:
    """The largest honest reply to a run: two base64 streams of `keep_bytes` plus fields."""
    return 2 * (4 * (keep_bytes + 3) // 3 + 256) + 4096


class FrameReader:
    """Cuts a byte stream into frames of at most `limit` bytes each."""

    def __init__(self, limit: int = PING_REPLY_LIMIT) -> None:
        self.limit = limit
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        self._buffer += data
        self._check_header()

    def next(self) -> dict[str, Any] | None:
        """The next whole frame as a dict, None when more bytes are needed."""
        if len(self._buffer) < 4:
            return None
        size = self._check_header()
        if len(self._buffer) < 4 + size:
            return None
        body = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise ProtocolError(f"the runner sent a frame that is not JSON ({exc})") from None
        if not isinstance(message, dict):
            raise ProtocolError(f"the runner sent a {type(message).__name__}, not an object")
        return message

    def _check_header(self) -> int:
        if len(self._buffer) < 4:
            return 0
        (size,) = struct.unpack(">I", self._buffer[:4])
        if size > self.limit:
            self._buffer.clear()
            raise ProtocolError(f"the runner announced a {size}-byte frame; at most {self.limit}")
        return size


class FramedConversation:
    """Request/reply over frames; subclasses provide `_send` and `_receive`."""

    def __init__(self) -> None:
        self.frames = FrameReader()
        self.runner_stderr = bytearray()  # the runner's own diagnostics, last 4 KB
        self._next_id = 0

    def request(
        self, message: dict[str, Any], deadline: float, *, limit: int = PING_REPLY_LIMIT
    ) -> dict[str, Any]:
        """Send one frame and return the reply with the same id (checked only for shape)."""
        self._next_id += 1
        body = json.dumps({**message, "id": self._next_id}).encode()
        self.frames.limit = limit
        self._send(struct.pack(">I", len(body)) + body, deadline)
        strays = 0
        while True:
            reply = self.frames.next()
            if reply is None:
                self._receive(deadline)
                continue
            if reply.get("id") == self._next_id:
                return reply
            strays += 1
            if strays > MAX_STRAY_FRAMES:
                raise ProtocolError(f"the runner sent {strays} frames answering nothing")
            log.warning("dropping an unexpected runner frame: %s", visible_line(repr(reply)[:200]))

    def note_stderr(self, data: bytes) -> None:
        self.runner_stderr += data
        del self.runner_stderr[:-RUNNER_STDERR_KEEP]

    def last_words(self) -> str:
        """The runner's last diagnostics, safe to print or log."""
        return visible_line(self.runner_stderr.decode("utf-8", "replace").strip()[-500:])

    @staticmethod
    def remaining(deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("no reply from the runner in time")
        return left

    def _send(self, data: bytes, deadline: float) -> None:
        raise NotImplementedError

    def _receive(self, deadline: float) -> None:
        """Block until some bytes arrive (feeding `self.frames`), or raise."""
        raise NotImplementedError


# --- checking replies ------------------------------------------------------------


def check_pong(reply: dict[str, Any]) -> dict[str, Any]:
    if reply.get("op") != "pong":
        raise ProtocolError(f"the runner answered a ping with {visible_line(repr(reply)[:200])}")
    modules = reply.get("modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise ProtocolError("the runner's module list is malformed")
    for key in ("runner_uid", "cell_uid"):
        if not _is_int(reply.get(key, 0)):
            raise ProtocolError(f"the runner's {key} is not an integer")
    return reply


def result_from_reply(reply: dict[str, Any], *, keep_bytes: int, backend: str) -> ExecResult:
    """The runner's result frame as an `ExecResult`, every field checked first."""
    if reply.get("op") != "result":
        raise ProtocolError(f"the runner answered {visible_line(repr(reply)[:200])}")
    unknown = set(reply) - RESULT_FIELDS
    if unknown:
        raise ProtocolError(f"unknown fields in the result: {visible_line(str(sorted(unknown)))}")
    out = _stream(reply.get("stdout"), "stdout", keep_bytes)
    err = _stream(reply.get("stderr"), "stderr", keep_bytes)
    exit_code = _optional_int(reply, "exit_code", 0, 255)
    signum = _optional_int(reply, "signal", 1, 64)
    if (exit_code is None) == (signum is None) and not reply.get("timed_out"):
        raise ProtocolError("a result must carry either an exit code or a signal")
    flags = {key: reply.get(key, False) for key in ("timed_out", "oom_killed", "output_limit_hit")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ProtocolError(f"{key} is not a boolean")
    duration = reply.get("duration_s", 0.0)
    if not isinstance(duration, int | float) or isinstance(duration, bool):
        raise ProtocolError("duration_s is not a number")
    if not math.isfinite(duration) or not 0 <= duration < 86400:
        raise ProtocolError("duration_s is out of range")
    return ExecResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=exit_code,
        signal=signum,
        duration_s=float(duration),
        backend=backend,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        **flags,
    )


def _stream(data: Any, name: str, keep: int) -> CappedBuffer:
    """Rebuild the runner's head/tail capture, refusing anything it could not have sent."""
    if not isinstance(data, dict) or set(data) != {"head", "tail", "bytes"}:
        raise ProtocolError(f"{name} is not a head/tail/bytes object")
    parts = []
    for part in ("head", "tail"):
        text = data[part]
        if not isinstance(text, str) or len(text) > 4 * (keep + 3) // 3:
            raise ProtocolError(f"{name}.{part} is not a string of the allowed size")
        try:
            parts.append(base64.b64decode(text.encode("ascii"), validate=True))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise ProtocolError(f"{name}.{part} is not base64") from None
    total = data["bytes"]
    if not _is_int(total) or not sum(map(len, parts)) <= total < 2**53:
        raise ProtocolError(f"{name}.bytes does not fit what was sent")
    if sum(map(len, parts)) > keep:
        raise ProtocolError(f"{name} holds more than the {keep} bytes asked for")
    buffer = CappedBuffer(keep)
    for chunk in parts:
        buffer.feed(chunk)
    buffer.total = total
    return buffer


def _optional_int(reply: dict[str, Any], key: str, low: int, high: int) -> int | None:
    value = reply.get(key)
    if value is None:
        return None
    if not _is_int(value) or not low <= value <= high:
        raise ProtocolError(f"{key} is not an integer in {low}..{high}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def cancelled_result(backend: str, started: float) -> ExecResult:
    """What a cell the host killed before it finished comes back as."""
    return ExecResult(
        stderr="[sandbox: the cell was stopped: the run was cancelled or the sandbox closed]",
        signal=9,
        cancelled=True,
        duration_s=time.monotonic() - started,
        backend=backend,
    )


def run_guarded(
    sandbox: Any,
    code: str,
    timeout: float,
    stdin: str,
    *,
    what: str,
    replaced: str,
) -> ExecResult:
    """`sandbox._run_locked` under its lock; anything it raises retires the sandbox and
    comes back as an `ExecResult` with a `sandbox_error`, never as an exception."""
    preload.DEMAND.note(code)  # what the next sandboxes preload (sandbox/preload.py)
    with sandbox._lock:
        started = time.monotonic()
        try:
            result: ExecResult = sandbox._run_locked(code, timeout, stdin, started)
            return result
        except Exception as exc:  # never raise for the code: replace the sandbox
            log.exception("the %s sandbox failed unexpectedly", what)
            sandbox._retire()
            return ExecResult(
                backend=sandbox.name,
                duration_s=time.monotonic() - started,
                sandbox_error=f"the sandbox failed ({type(exc).__name__}: {exc}); {replaced}",
            )
