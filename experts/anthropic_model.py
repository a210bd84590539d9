"""Claude through the Anthropic Messages API, on the official `anthropic` SDK.

The SDK's own retries are off; `experts.retry` retries instead (counted, `retry-after`
honoured, backoff shared between threads). With `cache=True` the system prompt and the
last user message carry `cache_control: ephemeral` breakpoints, so each meta turn reads
the growing history from the prompt cache and writes only what is new.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import anthropic

from conductor_kernel.interfaces import (
    STOPPED_PREFIX,
    CallRole,
    Completion,
    Message,
    ModelError,
    StreamStopped,
    TextCallback,
    ToolCall,
    ToolSpec,
)
from conductor_kernel.reasoning import ReasoningFold, folded
from conductor_kernel.text.tokens import estimated_usage, prompt_text, warn_no_usage
from experts.anthropic_wire import content_blocks, picked, reported_at_start, usage_of, wire_tool
from experts.attempts import StreamSoFar, charged_completion
from experts.local_models import warn_unpriced
from experts.pricing import PriceLookup, PriceTable
from experts.retry import (
    Backoff,
    Breaker,
    Failure,
    MalformedReply,
    StreamBroken,
    explain_failure,
    failure_from_sdk,
    reading,
    reply_shape,
    reply_text,
    require_ending,
    transport_errors,
)
from experts.streams import StreamedCalls, attach_closer
from experts.streams import stop_reason as stopped_by_run
from experts.tool_wire import PROBE_PROMPT, PROBE_TOOL, probed

log = logging.getLogger("conductor.experts")

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_BASE_URL = "https://api.anthropic.com"
EPHEMERAL = {"type": "ephemeral"}


class AnthropicModel:
    """A `ChatModel` for Claude models (or any server speaking the Messages API).

    `api_key` defaults to `$ANTHROPIC_API_KEY` and `base_url` to `$ANTHROPIC_BASE_URL`
    (else Anthropic's own). A key is required only for Anthropic's own endpoint.
    `timeout` bounds each attempt (seconds without a byte from the server);
    `max_retries` counts retries after the first attempt; pass one `backoff` to all
    models of a batch so they back off together. `prices` is a `PriceTable` (default:
    the built-in table with the user's `prices.toml` on top). `default_max_tokens` is
    sent when a call gives none (the API requires a limit).
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: Backoff | None = None,
        prices: PriceTable | None = None,
        default_max_tokens: int = 4096,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.name = name or f"anthropic:{model}"
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            if self.base_url == DEFAULT_BASE_URL:
                raise ModelError(
                    f"no Anthropic API key: set {KEY_ENV} (https://console.anthropic.com/) "
                    f"to use {model!r}, or choose another model"
                )
            key = "unused"  # a local server may not check keys; the SDK needs one anyway
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff or Backoff()
        self.breaker = Breaker()
        self.default_max_tokens = default_max_tokens
        self.price: PriceLookup = (prices or PriceTable.load()).lookup(model)
        if not self.price.known:
            warn_unpriced(model, self.base_url)
        self._client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,  # never given: this model is no `GrammarSupport`
        temperature: float | None = None,  # not sent: the Messages API takes none now
    ) -> Completion:
        params = self.request_params(
            messages, system=system, cache=cache, max_tokens=max_tokens, tools=tools
        )

        prompt = prompt_text(system, messages)
        return charged_completion(
            self, params, prompt, on_text, lambda exc: failure_from_sdk(exc, anthropic)
        )

    def request_params(
        self,
        messages: list[Message],
        *,
        system: str | None,
        cache: bool,
        max_tokens: int | None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for one call."""
        if not messages:
            raise ValueError("a model call needs at least one message")
        wire: list[dict[str, Any]] = [
            {"role": m.role, "content": content_blocks(m)} for m in messages
        ]
        if cache:
            last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
            if last_user is not None:  # the breakpoint on its last block: all of it cached
                wire[last_user]["content"][-1]["cache_control"] = EPHEMERAL
        params: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": max_tokens or self.default_max_tokens,
        }
        if tools:
            params["tools"] = [wire_tool(t) for t in tools]
        if system:
            params["system"] = (
                [{"type": "text", "text": system, "cache_control": EPHEMERAL}] if cache else system
            )
        return params

    def tool_support(self) -> tuple[bool, str]:
        """Whether this endpoint takes tool definitions (`ToolSupport`): Anthropic's own
        does; any other server is asked once (experts/tool_wire.py)."""
        if self.base_url == DEFAULT_BASE_URL:
            return True, "Anthropic's API takes tools"

        probe = self.request_params(
            [Message("user", PROBE_PROMPT)],
            system=None,
            cache=False,
            max_tokens=1,
            tools=[PROBE_TOOL],
        )

        def ask() -> object:
            return self._client.messages.create(**probe)

        return probed((self.base_url, self.model), ask, lambda e: failure_from_sdk(e, anthropic))

    def _create(self, params: dict[str, Any], prompt: str) -> Completion:
        return self._from_reply(self._client.messages.create(**params), prompt)

    def _from_reply(self, reply: Any, prompt: str) -> Completion:
        if not isinstance(reply, anthropic.types.Message):
            raise MalformedReply(f"it began {str(reply)[:80]!r}")
        with reply_shape("a reply"):
            thought = "".join(reply_text(b.thinking) for b in reply.content if b.type == "thinking")
            text = folded(
                thought, "".join(reply_text(b.text) for b in reply.content if b.type == "text")
            )
            calls = [
                ToolCall(str(b.name), json.dumps(b.input, ensure_ascii=False), str(b.id))
                for b in reply.content
                if b.type == "tool_use"
            ]
            u = reply.usage
            if u is None or not (u.input_tokens or u.output_tokens):
                warn_no_usage(self.base_url)
                usage = estimated_usage(prompt, text + "".join(c.arguments for c in calls))
            else:
                usage = usage_of(
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_input_tokens,
                    u.cache_creation_input_tokens,
                )
            stop = str(reply.stop_reason or "")
            return Completion(text, usage, str(reply.model), stop, tool_calls=calls)

    def _stream(
        self, params: dict[str, Any], on_text: TextCallback, prompt: str, so_far: StreamSoFar
    ) -> Completion:
        pieces = so_far.pieces
        start: Any = None
        delta_usage: Any = None
        stop_reason = model = ""
        fold = ReasoningFold()  # thinking blocks, kept in the text as <think>
        calls = StreamedCalls()
        try:
            raw = self._client.messages.with_raw_response.create(**params, stream=True)
            if "json" in raw.headers.get("content-type", ""):
                # Some gateways answer a streamed request with one plain JSON reply.
                body = raw.http_response.read()
                with reply_shape("a reply"):
                    reply = anthropic.types.Message.model_validate(json.loads(body))
                completion = self._from_reply(reply, prompt)
                if completion.text:
                    try:
                        on_text(completion.text)
                    except StreamStopped:
                        pass
                return completion
            detach = attach_closer(on_text, raw.http_response)
            try:
                with raw.parse() as events:  # leaving it closes the connection
                    for event in reading(events):
                        so_far.events += 1
                        text = None
                        with reply_shape("an event"):
                            if event.type == "message_start":
                                start, model = event.message, str(event.message.model)
                                so_far.reported = reported_at_start(start)
                            elif (
                                event.type == "content_block_delta"
                                and event.delta.type == "text_delta"
                            ):
                                text = fold.text(reply_text(event.delta.text))
                            elif (
                                event.type == "content_block_delta"
                                and event.delta.type == "thinking_delta"
                            ):
                                text = fold.reasoning(reply_text(event.delta.thinking))
                            elif (
                                event.type == "content_block_start"
                                and event.content_block.type == "tool_use"
                            ):
                                block = event.content_block
                                calls.start(event.index, str(block.id), str(block.name))
                            elif (
                                event.type == "content_block_delta"
                                and event.delta.type == "input_json_delta"
                            ):
                                calls.arguments(event.index, reply_text(event.delta.partial_json))
                            elif event.type == "message_delta":
                                delta_usage = event.usage
                                stop_reason = str(event.delta.stop_reason or stop_reason)
                        if text is not None:
                            pieces.append(text)
                            on_text(text)
                    if end := fold.close():
                        pieces.append(end)
                        on_text(end)
            finally:
                detach()
        except StreamStopped as stop:
            return self._stopped(pieces, prompt, start, stop.reason)
        except transport_errors(anthropic.APIError) as exc:
            closed_by_us = stopped_by_run(on_text)
            if closed_by_us is not None:  # the run closed the connection under the read
                return self._stopped(pieces, prompt, start, closed_by_us)
            if pieces:
                raise StreamBroken(f"after {sum(map(len, pieces))} characters: {exc}") from exc
            raise
        closed_by_us = stopped_by_run(on_text)
        if closed_by_us is not None and not stop_reason:  # ended early: closed under the read
            return self._stopped(pieces, prompt, start, closed_by_us)
        if start is None:
            raise MalformedReply("it held no message_start event")
        require_ending(stop_reason, pieces, "stop reason")
        first, last = start.usage, delta_usage
        with reply_shape("its usage"):
            counts = [
                picked(last, first, name)
                for name in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
            ]
        text = "".join(pieces)
        made = [c if c.arguments else replace(c, arguments="{}") for c in calls.calls()]
        if not (counts[0] or counts[1]):
            warn_no_usage(self.base_url)
            said = text + "".join(c.arguments for c in made)
            usage = estimated_usage(prompt, said)
            return Completion(text, usage, model, stop_reason, tool_calls=made)
        return Completion(text, usage_of(*counts), model, stop_reason, tool_calls=made)

    def _stopped(self, pieces: list[str], prompt: str, start: Any, reason: str) -> Completion:
        """What a stream stopped part-way returned: the prompt's tokens if the server
        sent them at the start, the rest estimated."""
        text = "".join(pieces)
        known = getattr(getattr(start, "usage", None), "input_tokens", None)
        usage = estimated_usage(prompt, text, input_tokens=known or None, wait=False)
        model = start.model if start is not None else self.model
        return Completion(text, usage, model, STOPPED_PREFIX + reason)

    def _explain(self, failure: Failure, attempts: int) -> str:
        return explain_failure(
            failure,
            attempts,
            url=self.base_url,
            model=self.model,
            key_env=KEY_ENV,
            timeout_s=self.timeout,
        )
