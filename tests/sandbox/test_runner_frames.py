"""The host's checks on runner frames, byte by byte (no sandbox needed).

The live fuzzing from inside real sandboxes is tests/sandbox/test_protocol_fuzz.py;
this pins down the rules themselves: where a frame is refused, and that a refusal
never needs the frame's body.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from sandbox.protocol import FrameReader, ProtocolError, reply_limit, result_from_reply


def frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body


def result(**changes: object) -> dict:
    stream = {"head": base64.b64encode(b"hi\n").decode(), "tail": "", "bytes": 3}
    empty = {"head": "", "tail": "", "bytes": 0}
    return {
        "op": "result",
        "id": 1,
        "stdout": stream,
        "stderr": empty,
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "oom_killed": False,
        "output_limit_hit": False,
        "duration_s": 0.1,
        **changes,
    }


def test_frames_arrive_whole_from_any_split() -> None:
    data = frame({"op": "pong", "id": 1}) + frame({"op": "pong", "id": 2})
    reader = FrameReader()
    got = []
    for byte in data:
        reader.feed(bytes([byte]))
        while (message := reader.next()) is not None:
            got.append(message["id"])
    assert got == [1, 2] and reader.pending == 0


def test_an_oversized_header_is_refused_before_its_body() -> None:
    reader = FrameReader(limit=1024)
    with pytest.raises(ProtocolError, match="announced"):
        reader.feed(struct.pack(">I", 2**31))  # nothing of the body needed
    assert reader.pending == 0


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b'"result"', b"\xff\xfe", b"[" * 100000 + b"]" * 100000],
    ids=["invalid", "list", "string", "not-utf8", "deep"],
)
def test_a_body_that_is_not_an_object_is_refused(body: bytes) -> None:
    reader = FrameReader(limit=1 << 20)
    reader.feed(struct.pack(">I", len(body)) + body)
    with pytest.raises(ProtocolError):
        reader.next()


def test_a_valid_result_becomes_an_exec_result() -> None:
    got = result_from_reply(result(), keep_bytes=1024, backend="test")
    assert (got.stdout, got.exit_code, got.ok, got.sandbox_error) == ("hi\n", 0, True, None)


@pytest.mark.parametrize(
    "changes",
    [
        {"op": "pong"},
        {"stdout": None},
        {"stdout": [1, 2]},
        {"stdout": {"head": "!!", "tail": "", "bytes": 2}},
        {"stdout": {"head": "", "tail": "", "bytes": -1}},
        {"stdout": {"head": base64.b64encode(b"x" * 4096).decode(), "tail": "", "bytes": 4096}},
        {"exit_code": "0"},
        {"exit_code": 256},
        {"exit_code": True},
        {"exit_code": None, "signal": None},
        {"signal": 99, "exit_code": None},
        {"timed_out": 1},
        {"duration_s": float("nan")},
        {"duration_s": "fast"},
        {"extra": 1},
    ],
)
def test_a_malformed_result_is_refused(changes: dict) -> None:
    with pytest.raises(ProtocolError):
        result_from_reply(result(**changes), keep_bytes=1024, backend="test")


def test_the_reply_limit_fits_an_honest_reply() -> None:
    keep = 65536
    stream = {"head": base64.b64encode(b"x" * (keep // 2)).decode(), "bytes": 10**9}
    stream["tail"] = stream["head"]
    honest = frame(result(stdout=stream, stderr=stream, signal=None))
    assert len(honest) < reply_limit(keep) < 4 * keep
