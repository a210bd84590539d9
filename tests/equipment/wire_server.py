"""A local HTTP server on 127.0.0.1 that speaks the Anthropic and OpenAI wire formats.

Tests and benchmarks point the real `anthropic` and `openai` SDKs at it, so everything
from request building to SSE parsing runs for real with no network and no key:

    with WireServer(["Hello!"]) as server:
        model = AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="test")

It answers `POST /v1/messages` (Anthropic Messages) and `POST /v1/chat/completions`
(OpenAI Chat Completions), each plain or streamed as server-sent events with the event
sequence the real services send. Replies come from a script (played in order) or from a
`responder(request_json)`; faults queued with `inject` (429 with retry-after, 500, 529,
a body that is not JSON, a delay past the client's timeout, 401) are served first, one
per request. Every request is recorded. Token counts are estimated (four characters a
token) and prompt caching is simulated: Anthropic prefixes up to a `cache_control`
breakpoint, OpenAI prefixes at message boundaries, are remembered and reported as cache
reads when a later request repeats them.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from equipment import wire_formats as fmt
from equipment.wire_faults import FILLER, Answer, Fault, Reply, Responder, WireCall

Api = Literal["anthropic", "openai"]
NO_TOOLS = "no_tools"  # the fault recorded on a request refused for offering tools
ROUTES: dict[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
}


__all__ = ["Answer", "Fault", "RecordedRequest", "Reply", "Responder", "WireCall", "WireServer"]


@dataclass
class RecordedRequest:
    """One request as the server saw it; headers are lower-cased."""

    method: str
    path: str
    api: Api | None
    headers: dict[str, str]
    body: Any  # the parsed JSON, or None when the body was not JSON
    raw: bytes
    ts: float = field(default_factory=time.time)
    fault: str | None = None  # the fault served, if any
    status: int = 200


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # benchmarks open many connections at once
    owner: WireServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping its keep-alive connection (a test closing its SDK client) is
        # normal here; anything else is still printed.
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


class WireServer:
    """Threaded fake provider; use as a context manager (or `start`/`close`)."""

    def __init__(
        self,
        script: Iterable[Answer] = (),
        *,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        chunk_chars: int = 8,
        api_key: str | None = None,
        cache_min_tokens: int = 0,
        models: Iterable[str] = ("wire-model",),
        stream_usage: bool = True,
        chunk_delay_s: float = 0.0,
        tools: bool = False,
    ) -> None:
        """`latency_s` is waited before every answer; `chunk_chars` sizes streamed text
        pieces; with `api_key` set, requests without it get a 401; prompts shorter than
        `cache_min_tokens` are never cached (the real services need 1024 or more);
        `models` is what `GET /v1/models` lists; `stream_usage=False` plays a server that
        ignores `stream_options.include_usage` (usage never sent while streaming);
        `tools=True` plays a server that takes tool definitions: without it, a request
        that offers tools is refused with a 400 and recorded in `refused_tools`."""
        self.tools = tools
        self.models = list(models)
        self.stream_usage = stream_usage
        self.chunk_delay_s = chunk_delay_s  # between text pieces: a model generating
        self.responder = responder
        self.latency_s = latency_s
        self.chunk_chars = max(1, chunk_chars)
        self.api_key = api_key
        self.cache_min_tokens = cache_min_tokens
        self._script: deque[Answer] = deque(script)
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._refusals: list[RecordedRequest] = []
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> WireServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()  # cuts injected delays and latency short
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The Anthropic base URL (the SDK adds `/v1/messages`)."""
        if self._httpd is None:
            raise RuntimeError("the wire server is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str), "an AF_INET server's address is a str"
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI base URL (the SDK adds `/chat/completions`)."""
        return f"{self.url}/v1"

    # -- scripting -----------------------------------------------------------------
    def add(self, *answers: Answer) -> None:
        with self._lock:
            self._script.extend(answers)

    def inject(self, *faults: Fault) -> None:
        """Serve these faults, in order, to the next requests (before any script)."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def refused_tools(self) -> list[RecordedRequest]:
        """Requests refused for offering tools (a server made without `tools=True`)."""
        with self._lock:
            return list(self._refusals)

    def _refused(self, request: RecordedRequest) -> None:
        with self._lock:
            self._refusals.append(request)

    def _next_answer(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        # Nothing scripted: a clear error that clients do not retry.
        return Fault(400, message="the wire server has no reply scripted for this request")

    def _cached_tokens(self, api: Api, body: dict[str, Any]) -> tuple[int, int, int]:
        """(total prompt tokens, cache-read tokens, cache-write tokens) for a request."""
        segments = fmt.prompt_segments(api, body)
        model = str(body.get("model", ""))
        digest = hashlib.sha256(f"{api}\0{model}".encode())
        keys, sums, total = [], [], 0
        for text, _ in segments:
            digest.update(text.encode() + b"\0")
            keys.append(digest.hexdigest())
            total += fmt.estimate_tokens(text)
            sums.append(total)
        if api == "anthropic":
            marks = [i for i, (_, mark) in enumerate(segments) if mark]
            if body.get("cache_control") and segments:  # automatic caching: the whole prompt
                marks.append(len(segments) - 1)
            if not marks or sums[max(marks)] < self.cache_min_tokens:
                return total, 0, 0
            last = max(marks)
            with self._lock:
                hit = max((i for i in range(last + 1) if keys[i] in self._cache), default=None)
                self._cache.update(keys[i] for i in marks)
            read = sums[hit] if hit is not None else 0
            return total, read, sums[last] - read
        # OpenAI caches every long-enough prefix by itself; no writes are billed.
        with self._lock:
            hit = max((i for i in range(len(keys)) if keys[i] in self._cache), default=None)
            self._cache.update(
                k for k, s in zip(keys, sums, strict=True) if s >= self.cache_min_tokens
            )
        read = sums[hit] if hit is not None and sums[hit] >= self.cache_min_tokens else 0
        return total, read, 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked bodies for streams
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and benchmarks read `requests`, not a log."""

    def do_POST(self) -> None:
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to answer

    def do_GET(self) -> None:
        # The model list, as clients probe it to find what a server serves.
        if self.path.split("?", 1)[0] != "/v1/models":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        names = self.server.owner.models
        if "anthropic-version" in self.headers:
            data = [
                {"type": "model", "id": n, "display_name": n, "created_at": "2025-01-01T00:00:00Z"}
                for n in names
            ]
            first, last = (names[0], names[-1]) if names else (None, None)
            self._send_json(
                200, {"data": data, "has_more": False, "first_id": first, "last_id": last}
            )
            return
        listing = [
            {"id": n, "object": "model", "created": 0, "owned_by": "wire-server"} for n in names
        ]
        self._send_json(200, {"object": "list", "data": listing})

    def _serve(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        api = ROUTES.get(path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest("POST", path, api, headers, body, raw)
        if isinstance(body, dict) and body.get("tools") and not owner.tools and api is not None:
            # A server that takes no tools (llama-server without --jinja, an old vLLM):
            # refused before any fault or scripted reply is spent on it, and kept apart
            # from `requests`, which are the model calls the script answers.
            record.status, record.fault = 400, NO_TOOLS
            owner._refused(record)
            self._send_json(400, fmt.error_body(api, 400, "this server takes no tools"))
            return
        owner._record(record)
        if api is None:
            record.status = 404
            self._send_json(404, {"error": {"message": f"no route {path}"}})
            return
        if not isinstance(body, dict):
            record.status = 400
            self._send_json(400, fmt.error_body(api, 400, "request body is not a JSON object"))
            return
        if owner.api_key is not None and fmt.presented_key(api, headers) != owner.api_key:
            record.status, record.fault = 401, "401"
            self._send_json(401, fmt.error_body(api, 401, "invalid x-api-key"))
            return
        answer = owner._next_answer(body)
        if owner.latency_s:
            owner._stopping.wait(owner.latency_s)
        if isinstance(answer, Fault):
            record.fault = answer.name
            if answer.reset:
                # SO_LINGER 0: closing sends a TCP reset instead of an orderly FIN.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                self.connection.close()
                return
            if answer.delay_s:
                owner._stopping.wait(answer.delay_s)
                answer = Reply("(a reply sent after the injected delay)")
            elif answer.cut_after is not None:
                self._send_reply(
                    owner,
                    api,
                    body,
                    Reply(FILLER if answer.text is None else answer.text),
                    cut_after=answer.cut_after,
                    stream_error=answer.stream_error,
                    ends_cleanly=answer.ends_cleanly,
                    insert=answer.insert,
                    stall_s=answer.stall_s,
                )
                return
            else:
                record.status = answer.status
                self._send_fault(api, answer)
                return
        reply = answer if isinstance(answer, Reply) else Reply(str(answer))
        self._send_reply(owner, api, body, reply)

    def _send_fault(self, api: Api, fault: Fault) -> None:
        if fault.raw_body is not None:
            self._send_bytes(200, fault.raw_body.encode(), "application/json")
            return
        extra = {}
        if fault.retry_after is not None:
            if fault.retry_after_ms:
                extra["retry-after-ms"] = str(int(fault.retry_after * 1000))
            else:
                extra["retry-after"] = f"{fault.retry_after:g}"
        self._send_json(fault.status, fmt.error_body(api, fault.status, fault.message), extra)

    def _send_reply(
        self,
        owner: WireServer,
        api: Api,
        body: dict[str, Any],
        reply: Reply,
        cut_after: int | None = None,
        stream_error: str | None = None,
        ends_cleanly: bool = False,
        insert: bytes | None = None,
        stall_s: float = 0.0,
    ) -> None:
        total, read, write = owner._cached_tokens(api, body)
        text, stop = fmt.apply_max_tokens(api, body, reply)
        said = text + "".join(c.name + c.arguments for c in reply.tool_calls)
        usage = fmt.UsageCounts(total, fmt.estimate_tokens(said), read, write)
        model = str(body.get("model", "unknown"))
        msg_id = uuid.uuid4().hex[:24]
        if not body.get("stream"):
            data = json.dumps(
                fmt.full_reply(
                    api, msg_id, model, text, stop, usage, reply.reasoning, reply.tool_calls
                )
            ).encode()
            if cut_after is not None:  # promise the whole body, send half, hang up
                self._send_bytes(200, data[: len(data) // 2], "application/json", length=len(data))
                self.close_connection = True
                return
            self._send_bytes(200, data, "application/json")
            return
        pieces = [text[i : i + owner.chunk_chars] for i in range(0, len(text), owner.chunk_chars)]
        include_usage = owner.stream_usage and bool(
            (body.get("stream_options") or {}).get("include_usage")
        )
        thought = reply.reasoning
        thoughts = [
            thought[i : i + owner.chunk_chars] for i in range(0, len(thought), owner.chunk_chars)
        ]
        events = fmt.stream_events(
            api,
            msg_id,
            model,
            pieces,
            stop,
            usage,
            include_usage,
            thoughts,
            reply.tool_calls,
            owner.chunk_chars,
        )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        preamble = 3 if api == "anthropic" else 1  # events before the first text piece
        for sent, event in enumerate(events):
            if insert is not None:
                if sent == cut_after:
                    self._write_chunk(insert)  # an odd event, then the reply goes on
            elif cut_after is not None and sent >= cut_after:
                if stall_s:
                    owner._stopping.wait(stall_s)
                if stream_error is not None:  # an error event, then an orderly end
                    self._write_chunk(fmt.stream_error_event(api, stream_error).encode())
                if stream_error is not None or ends_cleanly:
                    self._write_chunk(b"")
                    return
                self.close_connection = True  # no final chunk: the client sees a cut stream
                return
            if owner.chunk_delay_s and sent > preamble:  # the first piece comes at once
                owner._stopping.wait(owner.chunk_delay_s)
            self._write_chunk(event.encode())
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", extra)

    def _send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        extra: dict[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data) if length is None else length))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:16])
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
