"""A stand-in for sandbox/runner/main.py that answers the host with adversarial frames.

Started inside a real sandbox (Docker or bubblewrap) in place of the runner by
tests/sandbox/test_protocol_fuzz.py. It answers a ping properly, then treats each run
request's `code` as a JSON instruction saying what to send back: a valid result, or
one of many malformed, oversized, flooding or silent answers (seeded, so a failure
can be replayed). Standard library only: it runs on the sandbox's Python.
"""

import base64
import json
import os
import random
import struct
import sys
import time


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def send(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def read_exactly(size: int) -> bytes | None:
    parts = []
    while size:
        chunk = os.read(0, size)
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def valid(rid: object, text: str = "ok\n") -> dict:
    encoded = base64.b64encode(text.encode()).decode()
    empty = {"head": "", "tail": "", "bytes": 0}
    return {
        "op": "result",
        "id": rid,
        "stdout": {"head": encoded, "tail": "", "bytes": len(text)},
        "stderr": empty,
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "oom_killed": False,
        "output_limit_hit": False,
        "duration_s": 0.01,
    }


WEIRD_VALUES = [None, True, -1, 2**70, 1e308, float("nan"), "", "\x00\udc80", [], {}, [1, 2]]


def mutated(rid: object, rng: random.Random) -> bytes:
    """A valid result with one to three fields broken, or removed, or added."""
    message = valid(rid)
    for _ in range(rng.randint(1, 3)):
        key = rng.choice([*message, "extra", "stdout.head", "stdout.bytes", "stderr.tail"])
        if "." in key:
            outer, inner = key.split(".")
            message[outer] = dict(message[outer], **{inner: rng.choice(WEIRD_VALUES)})
        elif key != "id" and rng.random() < 0.3:
            message.pop(key, None)
        elif key != "id":
            message[key] = rng.choice(WEIRD_VALUES)
    return frame(json.dumps(message).encode("utf-8", "surrogatepass"))


def answer(request: dict) -> None:
    rid = request.get("id")
    if request.get("op") == "ping":
        send(frame(json.dumps({"op": "pong", "id": rid, "modules": []}).encode()))
        return
    spec = json.loads(request.get("code") or "{}")
    kind, rng = spec.get("kind", "valid"), random.Random(spec.get("seed", 0))
    if kind == "valid":
        send(frame(json.dumps(valid(rid)).encode()))
    elif kind == "mutated":
        send(mutated(rid, rng))
    elif kind == "random_bytes":
        send(rng.randbytes(rng.randint(1, 4096)))
    elif kind == "random_frame":
        send(frame(rng.randbytes(rng.randint(0, 4096))))
    elif kind == "not_an_object":
        send(frame(json.dumps(rng.choice([[1, 2], "result", 42, None, True])).encode()))
    elif kind == "invalid_json":
        send(frame(b'{"op": "result", "id": ' + str(rid).encode() + b', "stdout": {'))
    elif kind == "deep_json":
        send(frame(b"[" * 200000 + b"]" * 200000))
    elif kind == "missing_stdout":
        message = valid(rid)
        del message["stdout"]
        send(frame(json.dumps(message).encode()))
    elif kind == "oversized_stream":
        message = valid(rid)
        message["stdout"]["head"] = base64.b64encode(b"x" * (1 << 20)).decode()
        send(frame(json.dumps(message).encode()))
    elif kind == "stray_frames":
        for n in range(spec.get("count", 1000)):
            send(frame(json.dumps(valid(f"not-{n}")).encode()))
    elif kind == "huge_header":
        # Promise 2 GiB, then push `flood_mb` MiB as fast as the pipe takes it.
        send(struct.pack(">I", 2**31))
        block = b"\x00" * (1 << 20)
        for _ in range(spec.get("flood_mb", 16)):
            send(block)
    elif kind == "truncated":
        send(struct.pack(">I", 100) + b'{"op": "res')
        sys.exit(0)
    elif kind == "exit":
        os._exit(spec.get("code", 3))
    elif kind == "silence":
        time.sleep(3600)
    elif kind == "stderr_flood":
        for _ in range(spec.get("mb", 8)):
            os.write(2, b"\x1b]52;c;AAAA\x07 noise " * 40000)
        send(frame(json.dumps(valid(rid)).encode()))


def main() -> None:
    while True:
        header = read_exactly(4)
        if header is None:
            return
        body = read_exactly(struct.unpack(">I", header)[0])
        if body is None:
            return
        answer(json.loads(body))


main()
