"""What both providers share about tool calls: the probe of an endpoint, and arguments.

`auto` gives a run the tools carrier where its endpoint takes tool definitions. The
official APIs do; any other server (llama-server, vLLM, Ollama, a LiteLLM proxy) is
asked once, with a request that offers one tool and allows one output token, and the
answer is remembered for the process, per endpoint and model. A server that refuses the
request (a 4xx, or an error that names tools: llama-server without `--jinja` answers
500 "tools param requires --jinja flag") speaks text; one that cannot be asked now (down,
timing out) speaks text for this run and is asked again next time. The probe's one
token is not charged to a run: it belongs to no run.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from conductor_kernel.interfaces import ToolSpec
from experts.failures import Failure

log = logging.getLogger("conductor.experts")

PROBE_TOOL = ToolSpec(
    "probe",
    "Checks that tool definitions are accepted.",
    {"type": "object", "properties": {}, "required": []},
)
PROBE_PROMPT = "Reply OK."

_known: dict[tuple[str, str], tuple[bool, str]] = {}
_lock = threading.Lock()


def probed(
    key: tuple[str, str],
    ask: Callable[[], object],
    classify: Callable[[BaseException], Failure | None],
) -> tuple[bool, str]:
    """Whether the endpoint `key` (base URL, model) takes tools: remembered, else asked
    by `ask()` (which raises what the SDK raises when the server refuses)."""
    with _lock:  # one probe per endpoint, however many runs start at once
        if key in _known:
            return _known[key]
        try:
            ask()
        except Exception as exc:
            failure = classify(exc)
            detail = (failure.detail if failure is not None else "") or str(exc)
            status = f"HTTP {failure.status}" if failure and failure.status else "an error"
            said = f"{status}: {detail[:120]}"
            if failure is not None and _refuses_tools(failure):
                _known[key] = (False, f"the server refused tool definitions ({said})")
                return _known[key]
            log.warning("could not ask %s whether it takes tools (%s); using text", key[0], said)
            return False, f"the tool probe failed ({said}); text for this run"
        _known[key] = (True, "the server took tool definitions")
        return _known[key]


def _refuses_tools(failure: Failure) -> bool:
    if failure.kind == "rejected":
        return True
    words = failure.detail.lower()
    return failure.kind == "server" and ("tool" in words or "jinja" in words)


def forget_probes() -> None:
    """Forget every endpoint's answer (tests; a server restarted with other flags)."""
    with _lock:
        _known.clear()


def object_arguments(arguments: str) -> dict[str, Any] | None:
    """A call's arguments as a JSON object, or None when they are not one."""
    try:
        value = json.loads(arguments or "{}", strict=False)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def history_arguments(arguments: str) -> str:
    """A past call's arguments as they go back in the history: as written when they
    are a JSON object, else `{}` (servers that render the history with a chat template
    refuse arguments that are not; the call's result says what was wrong)."""
    return arguments if object_arguments(arguments) is not None else "{}"
