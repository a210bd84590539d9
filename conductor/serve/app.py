"""The HTTP application: `/v1/models` and `/v1/chat/completions`, OpenAI's shapes.

Each chat request is one conductor run (runs.py). The response's headers carry the run's
id, so headers wait for the run to start; a streamed reply then sends the run's progress
as it happens and its answer at the end, with a keep-alive comment while the run is
quiet, so a client that went away is noticed and its run cancelled (it ends
`interrupted`, recorded). A reply that is not streamed watches for the client going away
the same way.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conductor.serve import wire
from conductor.serve.body import json_object
from conductor.serve.conversation import MAX_QUESTION_CHARS, question_from
from conductor.serve.guard import Access, ASGIApp, Guard, log_refusal
from conductor.serve.limits import capped, lowered, requested_limits
from conductor.serve.names import ServedModel, UnknownServedModel, resolve, served_ids
from conductor.serve.runs import ServedRun, SessionFactory, _End, default_factory
from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import Event, RunFinished, RunScored, RunStarted
from conductor_kernel.text.counts import plural
from record.ending import Ending, ending
from record.fold import outline

if TYPE_CHECKING:
    from conductor.config.settings import Settings

log = logging.getLogger("conductor.serve")

VERDICT_WAIT_S = 2.0  # at most this long for the verdict after a run finishes


@dataclass
class ServeOptions:
    settings: Settings  # the configured settings: every run's limits come from here
    models: tuple[str, ...]  # the underlying models offered (`model` setting specs)
    access: Access = field(default_factory=Access)  # whom it answers: a fresh key by default
    max_question_chars: int = MAX_QUESTION_CHARS
    max_concurrent: int = 4  # runs at once (learning included); more are told to retry
    quiet_s: float = 2.0  # seconds of silence before a keep-alive (and a disconnect check)
    factory: SessionFactory = default_factory
    runs: set[ServedRun] = field(default_factory=set)


def create_app(options: ServeOptions) -> ASGIApp:
    """The application behind its guard (guard.py): nothing reaches a route unless the
    guard let it through."""
    api = _Api(options)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        api.stop_all()

    app = Starlette(
        routes=[
            Route("/v1/models", api.models, methods=["GET"]),
            Route("/v1/chat/completions", api.chat, methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    return Guard(app, options.access)


class _Api:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options

    async def models(self, request: Request) -> Response:
        data = [
            {"id": served.id, "object": "model", "created": 0, "owned_by": "conductor"}
            for served in served_ids(self.options.models)
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat(self, request: Request) -> Response:
        try:
            body = json_object(await request.body())
            served = resolve(str(body.get("model", "")), self.options.models)
            question = question_from(body.get("messages"), self.options.max_question_chars)
            asked = requested_limits(body)
            if body.get("n", 1) != 1:
                raise UserFacingError("`n` must be 1: a request is one run with one answer")
        except UnknownServedModel as exc:
            log_refusal(request.scope, str(exc))
            return _refuse(404, str(exc), code="model_not_found")
        except UserFacingError as exc:
            log_refusal(request.scope, str(exc))
            return _refuse(400, str(exc))
        self._forget_finished()
        if len(self.options.runs) >= self.options.max_concurrent:
            return _refuse(
                429,
                f"{plural(self.options.max_concurrent, 'run')} in progress, as many as this server runs at once; retry shortly",
                kind="rate_limit_error",
                headers={"Retry-After": "5"},
            )
        base = self.options.settings
        settings = base.model_copy(
            update={
                "model": served.model,
                "method": served.method,
                "run": lowered(capped(base.run), asked),
            }
        )
        run = ServedRun(
            question,
            settings,
            served.method,
            factory=self.options.factory,
            tags={"via": "serve", "served_model": served.id},
        ).start()
        self.options.runs.add(run)
        started = await self._started(request, run)
        if started is not None:
            return started
        headers = {wire.RUN_ID_HEADER: run.run_id}
        if body.get("stream"):
            options = body.get("stream_options") or {}
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            return StreamingResponse(
                self._stream(run, served, include_usage),
                media_type="text/event-stream",
                headers={**headers, "Cache-Control": "no-cache"},
            )
        return await self._reply(request, run, served, headers)

    async def _started(self, request: Request, run: ServedRun) -> Response | None:
        """None once the run has started; else the response that says why it did not."""
        watch = _Watch(request, run, self.options.quiet_s)
        while True:
            item = await run.next(self.options.quiet_s)
            await watch.check()
            if item is None:
                continue
            if isinstance(item, RunStarted):
                return None
            why = f"{type(item).__name__}: {item}" if isinstance(item, BaseException) else "?"
            return _refuse(500, f"the run could not start ({why})", kind="server_error")

    async def _reply(
        self, request: Request, run: ServedRun, served: ServedModel, headers: dict[str, str]
    ) -> Response:
        watch = _Watch(request, run, self.options.quiet_s)
        events: list[Event] = []
        while True:
            item = await run.next(self.options.quiet_s)
            await watch.check()
            if isinstance(item, Event) and not item.transient:
                events.append(item)
            if isinstance(item, RunFinished):
                break
            if isinstance(item, _End):
                return _refuse(500, "the run ended without finishing", kind="server_error")
        await _verdict(run, events)
        told = ending(outline(events))
        headers = {**headers, wire.STATUS_HEADER: item.status}
        failed = _failure(told)
        if failed is not None:
            return _refuse(502, failed, kind="run_error", headers=headers)
        reply = wire.completion(
            run.run_id,
            served.id,
            _content(told),
            wire.FINISH_REASONS.get(item.status, "stop"),
            item.usage,
        )
        if told.status == "declined":
            reply["choices"][0]["message"]["refusal"] = told.why  # OpenAI's field for it
        reply["conductor"] = {**_facts(told), "rounds": item.rounds}
        return JSONResponse(reply, headers=headers)

    async def _stream(
        self, run: ServedRun, served: ServedModel, include_usage: bool
    ) -> AsyncIterator[str]:
        finished = False
        progress = wire.Progress()
        events: list[Event] = []
        try:
            yield _sse(wire.chunk(run.run_id, served.id, {"role": "assistant", "content": ""}))
            while True:
                item = await run.next(self.options.quiet_s)
                if item is None:
                    yield ": the run goes on\n\n"  # a comment: lets a dead client be noticed
                    continue
                if isinstance(item, _End):
                    yield _sse(wire.error("the run ended without finishing", "server_error"))
                    return
                if isinstance(item, Event) and not item.transient:
                    events.append(item)
                if isinstance(item, RunFinished):
                    finished = True
                    await _verdict(run, events)
                    for part in _closing(run, served, item, ending(outline(events)), include_usage):
                        yield part
                    return
                text = None if isinstance(item, BaseException) else progress.text(item)
                if text:
                    delta = {"reasoning_content": text}
                    yield _sse(wire.chunk(run.run_id, served.id, delta))
        finally:
            if not finished:
                run.cancel()  # the client went away (or the server stops): stop the run

    def _forget_finished(self) -> None:
        self.options.runs -= {run for run in self.options.runs if run.finished.is_set()}

    def stop_all(self, wait: float = 30.0) -> None:
        """Cancel every run in progress and wait for each to end recorded."""
        for run in list(self.options.runs):
            run.cancel()
        for run in list(self.options.runs):
            run.join(wait)


class _Watch:
    """Notices, every `every` seconds however busy the run is, a client that went away
    while its reply was not yet sent, and cancels the run: nobody waits for its answer."""

    def __init__(self, request: Request, run: ServedRun, every: float) -> None:
        self.request, self.run, self.every = request, run, every
        self._next = time.monotonic() + every

    async def check(self) -> None:
        if time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self.every
        if await self.request.is_disconnected():
            self.run.cancel()  # the run ends interrupted, recorded


def _closing(
    run: ServedRun, served: ServedModel, finished: RunFinished, told: Ending, include_usage: bool
) -> list[str]:
    failed = _failure(told)
    if failed is not None:
        return [_sse(wire.error(failed, "run_error")), "data: [DONE]\n\n"]
    reason = wire.FINISH_REASONS.get(finished.status, "stop")
    delta: dict[str, Any] = {"content": _content(told)}
    if told.status == "declined":
        delta["refusal"] = told.why
    parts = [
        _sse(wire.chunk(run.run_id, served.id, delta)),
        _sse(wire.chunk(run.run_id, served.id, {}, finish_reason=reason)),
    ]
    if include_usage:
        parts.append(_sse(wire.chunk(run.run_id, served.id, None, spent=finished.usage)))
    parts.append("data: [DONE]\n\n")
    return parts


async def _verdict(run: ServedRun, events: list[Event]) -> None:
    """The run's verdict, added to `events` if it comes at once (a run is scored right
    after it finishes; learning, which may take long, is never waited for)."""
    item = await run.next(VERDICT_WAIT_S)
    if isinstance(item, RunScored):
        events.append(item)


def _content(told: Ending) -> str:
    """The reply's text: the answer, or the account of why there is none (never blank)."""
    return told.answer if told.answered and told.answer is not None else told.line()


def _facts(told: Ending) -> dict[str, Any]:
    """The run's end for clients that read more than the text."""
    return {
        "run_id": told.run_id,
        "status": told.status,
        "verdict": told.verdict or None,
        "reason": told.why or None,
        "account": told.line(),
    }


def _failure(told: Ending) -> str | None:
    """Why a run's end is no answer to give (a system failure is never a reply): an
    error object whose message every client shows."""
    if told.status in ("error", "interrupted"):
        return f"{told.line()} (run {told.run_id})"
    return None


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _refuse(
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(wire.error(message, kind, code), status_code=status, headers=headers)
