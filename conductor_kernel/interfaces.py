"""The project's interfaces and the plain values that cross them, in one place.

Every pluggable part (a chat model, a sandbox, an event sink, the task scorers) is a
`typing.Protocol` here; implementations live in `experts/`, `sandbox/`, `transcripts/`
and the application, and never import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from conductor_kernel.events import Event
    from conductor_kernel.run.context import RunContext

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to a model: its name, what it is for, its arguments' JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call a model made to a tool, as it wrote it: `arguments` is the JSON text
    of the arguments (it may be malformed, or cut off); `id` is the provider's, under
    which the result goes back (empty for a call read from the reply's text)."""

    name: str
    arguments: str
    id: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ToolResult:
    """What a tool call came to, sent back to the model under the call's id."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    """One chat message as the model sees it.

    An assistant message may carry the tool calls it made; the user message after it
    then carries one result for each (`tool_results`, sent before its text). A
    provider renders both in its own form.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class Usage:
    """Tokens and money for one model call (or a sum of calls).

    `input_tokens` counts every prompt token, cached or not; `cache_read_tokens` is the
    part of it served from the provider's prompt cache, `cache_write_tokens` the part
    written to it.

    `estimated_calls` counts calls whose server did not report (all of) their usage (a
    server that sends none while streaming, a stream stopped part-way): what is unknown
    is NOT in the token fields (never a made-up 0 passed off as measured) but estimated
    by a tokenizer into `estimated_tokens`, which the run's limits count too;
    `estimated_output_tokens` is the part of that estimate that was the reply's, so the
    estimate is priced (input and output cost differently).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    estimated_calls: int = 0
    estimated_tokens: int = 0
    estimated_output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            calls=self.calls + other.calls,
            estimated_calls=self.estimated_calls + other.estimated_calls,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
            estimated_output_tokens=self.estimated_output_tokens + other.estimated_output_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def known(self) -> bool:
        """Every call's usage was reported by its server."""
        return self.estimated_calls == 0

    @property
    def estimated_input_tokens(self) -> int:
        """The prompt's part of `estimated_tokens`."""
        return max(0, self.estimated_tokens - self.estimated_output_tokens)

    @property
    def tokens_for_limits(self) -> int:
        """Reported tokens plus the estimate for what was not reported."""
        return self.total_tokens + self.estimated_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        if not data:
            return cls()
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass
class Completion:
    """What a chat model returned for one request."""

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = ""
    retries: int = 0
    # The tool calls the reply made, when tools were offered (in the order written).
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        """The reply ended before the model finished it (an output limit, a full context
        window, a content filter, a paused turn, a refusal): it may end mid-call."""
        return self.stop_reason in CUT_STOP_REASONS

    @property
    def stopped(self) -> bool:
        """The stream was stopped on our side (cancel, a limit) before it ended."""
        return self.stop_reason.startswith(STOPPED_PREFIX)


STOPPED_PREFIX = "stopped:"
# Stop reasons of a reply that ended before the model finished it, and what cut it
# (Anthropic's and OpenAI's names). Such a reply may end mid-call or mid-answer.
CUT_STOP_REASONS: dict[str, str] = {
    "max_tokens": "the output limit ({limit} tokens)",
    "length": "the output limit ({limit} tokens)",
    "model_context_window_exceeded": "the model's context window",
    "content_filter": "the provider's content filter",
    "pause_turn": "the provider pausing the turn",
    "refusal": "the provider's refusal classifier",
}


def cut_cause(stop_reason: str, limit: int | None) -> str:
    """What cut a reply short, in words for the model and the transcript."""
    cause = CUT_STOP_REASONS.get(stop_reason, "the provider ({reason})")
    return cause.format(limit=limit if limit is not None else "?", reason=stop_reason)


class StreamStopped(Exception):
    """Raised by an `on_text` callback to end a streaming call early (a cancel, a limit).

    A provider that streams catches it, closes the stream (so the server stops
    generating) and returns the text so far with `stop_reason` `stopped:<reason>` and
    what it knows of the usage; a model that does not stream lets it propagate.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


TextCallback = Callable[[str], None]
CallRole = Literal["meta", "expert"]


@runtime_checkable
class ChatModel(Protocol):
    """A language model behind a chat interface.

    `complete` is blocking and thread-safe: the conductor calls several experts at
    once from worker threads. `on_text` receives streamed text as it arrives (a
    model that cannot stream calls it once with the whole text). `cache` asks the
    provider to cache the prompt prefix when it can (the meta history only grows).
    `role` tells replaying and scripted models which conversation is asking.
    `tools`, when given, are offered to the model; the calls it makes come back in
    `Completion.tool_calls`, beside its text. The kernel offers tools only to a model
    that says it takes them (`ToolSupport`), and a `grammar` (GBNF the reply must
    follow) only to one that says it can (`GrammarSupport`); any other may ignore them.
    """

    @property
    def name(self) -> str:
        """Read-only here, so a wrapper may forward it (`MeteredModel`)."""
        ...

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
    ) -> Completion: ...


@runtime_checkable
class GrammarSupport(Protocol):
    """A model whose server can hold a reply to a GBNF grammar (llama-server's
    `grammar` field): `grammar_support()` says whether, and why, in a few words."""

    def grammar_support(self) -> tuple[bool, str]: ...


@runtime_checkable
class ToolSupport(Protocol):
    """A model that can say whether its endpoint takes tool definitions.

    `tool_support()` returns (yes or no, why, in a few words); it may ask the server
    once (a provider caches the answer per endpoint). A model without it is given the
    text protocol when the carrier is `auto`.
    """

    def tool_support(self) -> tuple[bool, str]: ...


class ModelError(UserFacingError):
    """A model call failed for a reason the user must fix or retry (system failure)."""

    # The provider's failure kind when known (experts/failures.py: "server", "timeout",
    # "rejected", ...). A request the provider rejected (4xx) is about what was asked,
    # so for an expert it is the meta model's doing; every other kind is the server's.
    failure_kind: str = ""

    @property
    def server_failed(self) -> bool:
        return self.failure_kind != "rejected"


@dataclass
class ExecResult:
    """The outcome of running one piece of code in a sandbox: data, never an exception.

    A failure of the user's code (non-zero exit, timeout, OOM, output flood) is told by
    the fields; `infra_error` is set only when the sandbox itself failed (no daemon,
    image missing), so the two are never confused.
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    duration_s: float = 0.0
    backend: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    output_limit_hit: bool = False
    infra_error: str | None = None
    # The sandbox broke its own protocol because of what the code did (a malformed or
    # oversized reply, a runner that died): an observation about the code, not a
    # failure of the machine; the sandbox was replaced.
    sandbox_error: str | None = None
    # The host killed the cell before it finished (the run was cancelled, or the
    # sandbox closed under it): neither the code's failure nor the machine's.
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.oom_killed
            and self.infra_error is None
            and self.sandbox_error is None
            and not self.cancelled
        )

    @property
    def limits_hit(self) -> list[str]:
        hits = []
        if self.timed_out:
            hits.append("timeout")
        if self.oom_killed:
            hits.append("memory")
        if self.output_limit_hit or self.stdout_truncated or self.stderr_truncated:
            hits.append("output")
        return hits

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["limits_hit"] = self.limits_hit
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecResult:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@runtime_checkable
class Sandbox(Protocol):
    """Somewhere to run untrusted Python.

    `run` never raises for anything the code does; it returns an `ExecResult`.
    One `Sandbox` object serves one conductor run; `close` releases what it holds,
    killing a cell still running rather than waiting for it. A backend may also offer
    `interrupt()`: kill the running cell now (its `run` returns with `cancelled`) and
    stay usable; the run's cancel calls it (conductor_kernel/run/expert_call.py).
    """

    @property
    def name(self) -> str: ...

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult: ...

    def close(self) -> None: ...


class SandboxUnavailable(UserFacingError):
    """No sandbox backend can run code here; the message says how to get one."""


@runtime_checkable
class EventSink(Protocol):
    """Anything that consumes the event stream (transcript writer, printer, TUI)."""

    def handle(self, event: Event) -> None: ...


@runtime_checkable
class Method(Protocol):
    """How one run asks its model: meta-prompting, or one of the paper's baselines.

    `Conductor` (conductor_kernel/run/loop.py) starts and ends every run the same way and
    hands the run to its method's `solve`, a generator of the run's events that returns
    its status (answered, no_answer, declined, limit). Every model call the method makes
    goes through `RunContext.ask`, which checks the run's cancel flag and limits before
    the call, streams it under the run's guard and records it as a meta turn; the
    final answer goes through `RunContext.answer`. So every method emits the same typed
    events and is recorded, audited and scored the same way.
    """

    @property
    def name(self) -> str:
        """Recorded in `RunStarted.method` (meta, meta-no-python, standard, ...)."""
        ...

    @property
    def python(self) -> bool:
        """Whether the method runs code (it then needs the run's sandbox)."""
        ...

    @property
    def system_prompt(self) -> str:
        """The run's system prompt, recorded in `RunStarted.system_prompt`."""
        ...

    def solve(self, run: RunContext) -> Generator[Event, None, str]: ...


@runtime_checkable
class CarrierAware(Protocol):
    """A method whose protocol can be carried as text or as tool calls
    (conductor_kernel/carrier): it names the carriers it has, and the system prompt of
    each. A method without them speaks text."""

    carriers: tuple[str, ...]

    def system_prompt_for(self, carrier: str) -> str: ...


# -- the task scorers, as the notebook asks for them ------------------------------------
# The scorers (Game of 24's arithmetic, the chess rules, a sonnet's form, `sat()` run in
# the sandbox) belong to the application; the notebook judges a run the way `conductor
# score` does through the `TaskScoring` it is given (conductor/session/notebook_hooks.py builds
# the built-in one). No import runs upward.


@dataclass(frozen=True)
class TaskJudge:
    """A task's spec and scorer, and how to find the input part of a question."""

    name: str
    scorer: str
    description: str
    needs_target: bool

    def task_input(self, question: str) -> str:
        """The question less the task's description, as a task file holds it."""
        head = self.description.strip()
        if head and question.startswith(head):
            return question[len(head) :].strip()
        return question


@dataclass(frozen=True)
class RecognisedTask:
    """A question asked without a task that is surely an instance of one: the task's
    judge, the input its scorer reads, and the known answer the question fixes, if any."""

    judge: TaskJudge
    task_input: str
    target: str | None


@dataclass(frozen=True)
class CheckVerdict:
    """What the task's own check, run before the answer is taken, says of one answer:
    accepted, or rejected and why (conductor/scoring/answer_check.py)."""

    accepted: bool
    why: str = ""


class AnswerCheck(Protocol):
    """The task's own check of answers to a question, one that needs no known answer."""

    def applies(self, question: str, task: str) -> bool:
        """Whether the check decides answers to this question at all."""
        ...

    def __call__(self, question: str, task: str, answer: str) -> CheckVerdict | None:
        """The verdict on one answer; None when it cannot decide this one (an empty
        answer, one its scorer cannot read): "cannot tell" is never "accepted"."""
        ...


class TaskScoring(Protocol):
    """What the notebook asks of the task scorers."""

    def judge_for(self, task: str) -> TaskJudge | None:
        """The judge of a task name (built-in or a scorer's name), None when unknown."""
        ...

    def verdict(
        self,
        judge: TaskJudge,
        question: str,
        answer: str,
        target: str | None,
        sandbox: Sandbox | None,
    ) -> bool | None:
        """The scorer's decision, or None when it cannot decide here."""
        ...

    def task_descriptions(self) -> tuple[str, ...]:
        """The built-in tasks' descriptions (a batch asks `description + input`)."""
        ...

    def claimed_number(self, answer: str, question: str) -> Fraction | None:
        """The number an answer commits to, as the numeric scorer reads it."""
        ...

    def recognise(self, question: str) -> RecognisedTask | None:
        """The task a question asked without one surely is (interactive runs), or None."""
        ...
