"""Replies no provider should send, through the real anthropic and openai SDKs.

A stream that ends in good order before saying how the reply ended, an event that is
not UTF-8 or not of the API's shape, a stop reason that means the turn was cut: none of
them may be taken as a finished turn (a half-written final answer was recorded as the
run's answer), and none may reach the user as a traceback (raw `UnicodeDecodeError`,
`TypeError` and `AttributeError` did). The run ends recorded, with a message that says
what the server did.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_provider_faults import ANSWER, PROVIDERS, solve

from conductor_kernel.events import FinalAnswer, MetaTurnFinished
from equipment.wire_server import Fault, Reply, WireServer

# Streamed in 8-character pieces: a cut after the first few leaves "(4 + 5" or so.
LONG_ANSWER = '>> FINAL ANSWER:\n"""\n(4 + 5 * 6) - 10\n"""'
# Events before the first text piece, and a cut that comes after some text.
PREAMBLE = {"anthropic": 3, "openai": 1}
AFTER_TEXT = 6


def test_the_wire_server_can_end_a_stream_early_in_good_order() -> None:
    assert Fault.ends_early(2).name == "ends_early"
    assert Fault.odd_event(b"data: [1]\n\n").name == "odd_event"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_ends_before_its_stop_reason_is_never_taken_as_the_answer(
    provider: str, tmp_path: Path
) -> None:
    cut = Fault.ends_early(AFTER_TEXT, text=LONG_ANSWER)
    with WireServer([cut, ANSWER]) as server:
        events, transcript = solve(provider, server, tmp_path)
    assert not [e for e in events if isinstance(e, FinalAnswer)]
    finished = transcript.finished
    assert finished is not None and finished.status == "error", finished
    error = next(e for e in transcript.events if e.kind == "error")
    assert "broke part-way" in error.message and "Traceback" not in error.message
    assert len(server.requests) == 1  # text was shown: a retry would repeat it


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_ends_before_any_text_is_retried(provider: str, tmp_path: Path) -> None:
    with WireServer([Fault.ends_early(PREAMBLE[provider]), ANSWER]) as server:
        _, transcript = solve(provider, server, tmp_path)
    finished = transcript.finished
    assert finished is not None and finished.status == "answered"
    assert finished.final_answer == "42" and len(server.requests) == 2


def _anthropic_delta(value: bytes) -> bytes:
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":' + value + b"}}\n\n"
    )


def _openai_chunk(choices: bytes) -> bytes:
    return (
        b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
        b'"choices":' + choices + b"}\n\n"
    )


ODD_EVENTS = {
    "anthropic": {
        "not UTF-8": _anthropic_delta(b'"\xff\xfe"'),
        "text is null": _anthropic_delta(b"null"),
        "text is a number": _anthropic_delta(b"7"),
        "message_delta without a delta": (
            b'event: message_delta\ndata: {"type":"message_delta","delta":null,"usage":null}\n\n'
        ),
    },
    "openai": {
        "not UTF-8": _openai_chunk(b'[{"index":0,"delta":{"content":"\xff"}}]'),
        "content is a number": _openai_chunk(b'[{"index":0,"delta":{"content":7}}]'),
        "choices is null": _openai_chunk(b"null"),
        "a chunk that is a list": b"data: [1, 2]\n\n",
    },
}
ODD = [(p, name) for p in PROVIDERS for name in ODD_EVENTS[p]]


@pytest.mark.parametrize("where", ["before text", "after text"])
@pytest.mark.parametrize(("provider", "odd"), ODD, ids=[f"{p}: {n}" for p, n in ODD])
def test_an_event_of_no_known_shape_ends_the_run_recorded_with_a_clear_error(
    provider: str, odd: str, where: str, tmp_path: Path
) -> None:
    after = PREAMBLE[provider] if where == "before text" else AFTER_TEXT
    fault = Fault.odd_event(ODD_EVENTS[provider][odd], after, text=LONG_ANSWER)
    with WireServer([fault, ANSWER]) as server:
        address = server.url.split("//")[1]
        events, transcript = solve(provider, server, tmp_path)  # fails on any raw error
    assert not [e for e in events if isinstance(e, FinalAnswer)]
    finished = transcript.finished
    assert finished is not None and finished.status == "error"
    error = next(e for e in transcript.events if e.kind == "error")
    assert error.where == "ModelError", error
    assert address in error.message and len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_turn_cut_by_the_context_window_is_never_dispatched(
    provider: str, tmp_path: Path
) -> None:
    # Anthropic's stop reason for a reply cut because the context window is full.
    cut = Reply('>> FINAL ANSWER:\n"""\n(4 + 5', stop_reason="model_context_window_exceeded")
    with WireServer([cut, ANSWER]) as server:
        events, transcript = solve(provider, server, tmp_path)
    first = next(e for e in events if isinstance(e, MetaTurnFinished))
    assert first.truncated
    finished = transcript.finished
    assert finished is not None and finished.final_answer == "42"


def test_conductor_solve_shows_an_odd_reply_as_an_error_not_a_traceback(
    tmp_path: Path,
) -> None:
    fault = Fault.odd_event(ODD_EVENTS["openai"]["not UTF-8"], AFTER_TEXT, text=LONG_ANSWER)
    with WireServer([fault]) as server:
        address = server.url.split("//")[1]
        flags = ["--no-python", "--no-recall", "--no-learn"]
        model = f"openai:gpt-4o@{server.openai_url}"
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "conductor.cli",
                "solve",
                "What is 6*7?",
                *flags,
                "--model",
                model,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
            timeout=120,
        )
    assert child.returncode == 2, child.stderr  # a model error, as for any failing server
    assert "Traceback" not in child.stderr, child.stderr
    assert child.stderr.startswith("error: ") and address in child.stderr, child.stderr
