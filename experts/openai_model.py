"""GPT models, and any OpenAI-compatible server (vLLM, Ollama, llama.cpp), on the `openai` SDK.

Chat Completions is the one API every compatible server speaks, so that is what this
uses. OpenAI caches long prompt prefixes by itself; the cached part is read from
`usage.prompt_tokens_details.cached_tokens`. Streamed calls ask for a final usage chunk
(`stream_options.include_usage`); when a server still sends none, the call's usage is
recorded as unknown and estimated (`conductor_kernel.text.tokens`). A stream the caller stops
(`StreamStopped` from `on_text`) is closed at once, so the server stops generating.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

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
    Usage,
)
from conductor_kernel.reasoning import ReasoningFold, folded
from conductor_kernel.text.tokens import estimated_usage, prompt_text, warn_no_usage
from experts.attempts import StreamSoFar, charged_completion
from experts.local_models import model_id, warn_unpriced
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
from experts.streams import StreamedCalls, attach_closer, stop_reason
from experts.tool_wire import PROBE_PROMPT, PROBE_TOOL, history_arguments, probed

log = logging.getLogger("conductor.experts")

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIModel:
    """A `ChatModel` for the OpenAI Chat Completions API or a server compatible with it.

    `base_url` (default `$OPENAI_BASE_URL`, else OpenAI's) picks the server, e.g.
    `http://localhost:8000/v1` (vLLM), `http://localhost:11434/v1` (Ollama),
    `http://localhost:8080/v1` (llama.cpp). `api_key` defaults to `$OPENAI_API_KEY` and
    is required only for OpenAI's own endpoint. The reply limit is sent as
    `max_completion_tokens` to OpenAI (its reasoning models refuse `max_tokens`) and as
    `max_tokens` elsewhere, the name compatible servers know; `max_tokens_param`
    overrides that. The other arguments are as for `AnthropicModel`.
    """

    provider = "openai"

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
        max_tokens_param: str | None = None,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.name = name or f"openai:{model_id(model)}"
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        official = self.base_url == DEFAULT_BASE_URL
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            if official:
                raise ModelError(
                    f"no OpenAI API key: set {KEY_ENV} (https://platform.openai.com/api-keys) "
                    f"to use {model!r}, or set {BASE_URL_ENV} to an OpenAI-compatible server"
                )
            key = "unused"  # vLLM, Ollama and llama.cpp accept any key by default
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff or Backoff()
        self.breaker = Breaker()
        self.price: PriceLookup = (prices or PriceTable.load()).lookup(model)
        if not self.price.known:
            warn_unpriced(model, self.base_url)
        self._client = openai.OpenAI(
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
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        # `cache` needs nothing here: OpenAI caches long shared prefixes on its own.
        params = self.request_params(
            messages, system=system, max_tokens=max_tokens, tools=tools, grammar=grammar
        )
        if temperature is not None:  # else the server's default
            params["temperature"] = temperature

        prompt = prompt_text(system, messages)
        return charged_completion(
            self, params, prompt, on_text, lambda exc: failure_from_sdk(exc, openai)
        )

    def request_params(
        self,
        messages: list[Message],
        *,
        system: str | None,
        max_tokens: int | None,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for one call."""
        if not messages:
            raise ValueError("a model call needs at least one message")
        wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for m in messages:
            wire += _wire_messages(m)
        params: dict[str, Any] = {"model": self.model, "messages": wire}
        if max_tokens:
            params[self.max_tokens_param] = max_tokens
        if tools:
            params["tools"] = [_wire_tool(t) for t in tools]
        if grammar:
            params["extra_body"] = {"grammar": grammar}  # llama-server's field
        return params

    def grammar_support(self) -> tuple[bool, str]:
        """Whether a reply can be held to a GBNF grammar (`GrammarSupport`): not by
        OpenAI's API; llama-server's `grammar` field elsewhere (a server without it
        may ignore the field, or refuse the request)."""
        if self.base_url == DEFAULT_BASE_URL:
            return False, "OpenAI's API takes no grammar"
        return True, "sent as llama-server's grammar field"

    def tool_support(self) -> tuple[bool, str]:
        """Whether this endpoint takes tool definitions (`ToolSupport`): OpenAI's own
        does; any other server is asked once (experts/tool_wire.py)."""
        if self.base_url == DEFAULT_BASE_URL:
            return True, "OpenAI's API takes tools"

        probe = self.request_params(
            [Message("user", PROBE_PROMPT)], system=None, max_tokens=1, tools=[PROBE_TOOL]
        )

        def ask() -> object:
            return self._client.chat.completions.create(**probe)

        return probed((self.base_url, self.model), ask, lambda e: failure_from_sdk(e, openai))

    def _create(self, params: dict[str, Any], prompt: str) -> Completion:
        reply = self._client.chat.completions.create(**params)
        return self._from_reply(reply, prompt)

    def _from_reply(self, reply: Any, prompt: str) -> Completion:
        if not isinstance(reply, ChatCompletion) or not reply.choices:
            raise MalformedReply(f"it began {str(reply)[:80]!r}")
        with reply_shape("a reply"):
            choice = reply.choices[0]
            text = folded(_reasoning_of(choice.message), reply_text(choice.message.content or ""))
            calls = [
                ToolCall(str(fn.name or ""), reply_text(fn.arguments or ""), str(tc.id or ""))
                for tc in choice.message.tool_calls or []
                if (fn := getattr(tc, "function", None)) is not None
            ]
            said = text + "".join(c.arguments for c in calls)
            return Completion(
                text,
                self._usage(reply.usage, prompt, said),
                model_id(str(reply.model or self.model)),
                str(choice.finish_reason or ""),
                tool_calls=calls,
            )

    def _stream(
        self, params: dict[str, Any], on_text: TextCallback, prompt: str, so_far: StreamSoFar
    ) -> Completion:
        pieces = so_far.pieces
        usage_seen: Any = None
        model, finish, chunks = "", "", 0
        fold = ReasoningFold()  # reasoning sent apart from the content, kept as <think>
        calls = StreamedCalls()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
            if "json" in raw.headers.get("content-type", ""):
                # Some gateways answer a streamed request with one plain JSON reply.
                body = raw.http_response.read()
                with reply_shape("a reply"):
                    reply = ChatCompletion.model_validate(json.loads(body))
                completion = self._from_reply(reply, prompt)
                if completion.text:
                    _deliver(on_text, completion.text)
                return completion
            stream = raw.parse()
            detach = attach_closer(on_text, raw.http_response)
            try:
                with stream:  # leaving it closes the connection: the server stops generating
                    for chunk in reading(stream):
                        chunks += 1
                        so_far.events = chunks
                        text = None
                        with reply_shape("a chunk"):
                            model = str(chunk.model or model)
                            if chunk.usage is not None:
                                usage_seen = chunk.usage
                                if usage_seen.prompt_tokens or usage_seen.completion_tokens:
                                    so_far.reported = _usage(usage_seen)
                            for choice in chunk.choices[:1]:
                                finish = str(choice.finish_reason or finish)
                                if choice.delta:
                                    thought = fold.reasoning(_reasoning_of(choice.delta))
                                    said = fold.text(reply_text(choice.delta.content or ""))
                                    text = thought + said or None
                                    for part in choice.delta.tool_calls or []:
                                        calls.add_openai(part)
                        if text is not None:
                            pieces.append(text)
                            on_text(text)
                    if end := fold.close():
                        pieces.append(end)
                        on_text(end)
            finally:
                detach()
        except StreamStopped as stop:
            return self._stopped(pieces, prompt, model, stop.reason)
        except transport_errors(openai.APIError) as exc:
            closed_by_us = stop_reason(on_text)
            if closed_by_us is not None:  # the run closed the connection under the read
                return self._stopped(pieces, prompt, model, closed_by_us)
            if pieces:
                raise StreamBroken(f"after {sum(map(len, pieces))} characters: {exc}") from exc
            raise
        closed_by_us = stop_reason(on_text)
        if closed_by_us is not None and not finish:  # ended early: closed under the read
            return self._stopped(pieces, prompt, model, closed_by_us)
        if chunks == 0:
            raise MalformedReply("it held no completion chunks")
        require_ending(finish, pieces, "finish reason")
        text = "".join(pieces)
        made = calls.calls()
        with reply_shape("its usage"):
            usage = self._usage(usage_seen, prompt, text + "".join(c.arguments for c in made))
        return Completion(text, usage, model_id(model or self.model), finish, tool_calls=made)

    def _stopped(self, pieces: list[str], prompt: str, model: str, reason: str) -> Completion:
        """What a stream stopped part-way returned; its usage never came: estimated."""
        text = "".join(pieces)
        usage = estimated_usage(prompt, text, wait=False)
        return Completion(text, usage, model_id(model or self.model), STOPPED_PREFIX + reason)

    def _usage(self, usage: Any, prompt: str, text: str) -> Usage:
        if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
            warn_no_usage(self.base_url)
            return estimated_usage(prompt, text)
        return _usage(usage)

    def _explain(self, failure: Failure, attempts: int) -> str:
        return explain_failure(
            failure,
            attempts,
            url=self.base_url,
            model=self.model,
            key_env=KEY_ENV,
            timeout_s=self.timeout,
        )


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    """One message in Chat Completions' form: a user message after tool calls is their
    results (`tool` messages, one a call) and then its text; an assistant message that
    made calls carries them."""
    if message.tool_results:
        wire: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
            for r in message.tool_results
        ]
        if message.content:
            wire.append({"role": message.role, "content": message.content})
        return wire
    if message.tool_calls:
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": history_arguments(c.arguments)},
            }
            for c in message.tool_calls
        ]
        return [{"role": "assistant", "content": message.content or None, "tool_calls": calls}]
    return [message.to_dict()]


def _deliver(on_text: TextCallback, text: str) -> None:
    """Hand a whole reply to `on_text`; a stop asked for then changes nothing."""
    try:
        on_text(text)
    except StreamStopped:
        pass


def _reasoning_of(message: Any) -> str:
    """Reasoning a server sent beside the content (`reasoning_content`: llama.cpp,
    DeepSeek, vLLM; `reasoning`: newer vLLM, Ollama, OpenRouter), or ""."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return reply_text(value)
    return ""


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=int(usage.prompt_tokens or 0),
        output_tokens=int(usage.completion_tokens or 0),
        cache_read_tokens=int(cached),
        calls=1,
    )
