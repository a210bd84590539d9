"""The typed event stream every consumer reads: printer, transcript writer, TUI, batch.

Each event has a unique `id`, a `parent_id` that nests it (an expert call under the meta
turn that asked for it, a sandbox run under its expert), the `run_id`, and a wall-clock
timestamp `ts`. `to_dict`/`from_dict` give the versioned JSON-lines form; an unknown
kind from a newer writer is read as `UnknownEvent` rather than rejected.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from conductor_kernel.interfaces import ExecResult, Usage

FORMAT_VERSION = 1

_REGISTRY: dict[str, type[Event]] = {}


def new_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass(kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    # Streaming deltas are shown live but not written to transcripts.
    transient: ClassVar[bool] = False

    id: str = field(default_factory=new_id)
    parent_id: str | None = None
    run_id: str = ""
    ts: float = field(default_factory=time.time)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            _REGISTRY[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"v": FORMAT_VERSION, "kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Usage | ExecResult):
                value = value.to_dict()
            data[f.name] = value
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Event:
        cls = _REGISTRY.get(str(data.get("kind")), UnknownEvent)
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.type in ("Usage", Usage) and isinstance(value, dict):
                value = Usage.from_dict(value)
            elif f.type in ("ExecResult", ExecResult) and isinstance(value, dict):
                value = ExecResult.from_dict(value)
            kwargs[f.name] = value
        event = cls(**kwargs)
        if isinstance(event, UnknownEvent):
            event.raw = data
        return event


@dataclass(kw_only=True)
class UnknownEvent(Event):
    kind: ClassVar[str] = "unknown"
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    question: str = ""
    task: str = ""
    target: str | None = None
    # How the run asked its model (conductor/methods): meta, meta-no-python, standard,
    # zero-shot-cot, expert-static, expert-dynamic, multipersona. Empty in transcripts
    # written before methods were recorded: those runs are meta-prompting.
    method: str = ""
    model: str = ""
    expert_model: str = ""
    sandbox: str = ""
    system_prompt: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, Any] = field(default_factory=dict)
    # How the meta model's calls and answer were carried: `text`, `tools` or `grammar`
    # (conductor_kernel/carrier), and why (`auto: ...`). Empty in older transcripts: text.
    protocol: str = ""
    protocol_reason: str = ""

    @property
    def carrier(self) -> str:
        """The run's carrier; a transcript from before carriers were recorded is text."""
        return self.protocol or "text"

    @property
    def method_name(self) -> str:
        """The run's method; a transcript from before methods were recorded is
        meta-prompting, without Python when its sandbox was off."""
        return self.method or ("meta-no-python" if self.sandbox == "off" else "meta")


@dataclass(kw_only=True)
class Recall(Event):
    """Notes from the notebook put into the first meta turn, and why."""

    kind: ClassVar[str] = "recall"
    task_type: str | None = None
    notes: list[dict[str, Any]] = field(default_factory=list)  # id, key, kind, score, rank
    rendered: str = ""
    tokens: int = 0
    # Programs among the shown notes whose answer to this very question passed the
    # task's own check in a fresh sandbox (note, code, answer, check): what the meta
    # model is handed as a result it can cite (conductor_kernel/run/experience.py).
    checked: list[dict[str, Any]] = field(default_factory=list)


@dataclass(kw_only=True)
class MetaTurnStarted(Event):
    kind: ClassVar[str] = "meta_turn_started"
    round: int = 0
    user_message: str = ""
    # The system prompt this turn was sent with, when it is not the run's own
    # (RunStarted.system_prompt); empty: the run's.
    system_prompt: str = ""
    # The model saw only this turn's message, none of the run's earlier turns (a
    # method's second conversation, e.g. answering as the expert it described first).
    new_conversation: bool = False
    # Sent before `user_message`, with the tools carrier: a result for each tool call of
    # the turn before (call_id, name, content, is_error); with `handed_calls`, the
    # results of those calls, sent after it.
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    # Calls the conductor made for the model after `user_message` (id, name, arguments):
    # a program the notebook checked on the question (conductor_kernel/run/experience.py).
    handed_calls: list[dict[str, str]] = field(default_factory=list)


@dataclass(kw_only=True)
class TextDelta(Event):
    """A piece of streamed model text; parent is the meta turn or expert call."""

    kind: ClassVar[str] = "text_delta"
    transient: ClassVar[bool] = True
    text: str = ""


@dataclass(kw_only=True)
class MetaTurnFinished(Event):
    kind: ClassVar[str] = "meta_turn_finished"
    round: int = 0
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    duration_s: float = 0.0
    # Why the model stopped: the API's own words (end_turn, stop, max_tokens, length),
    # or `stopped:<reason>` when conductor closed the stream (a cancel, a limit).
    stop_reason: str = ""
    truncated: bool = False  # cut at the output-token limit; its calls were not run
    # The carrier: `tools` or `grammar` (empty: the text protocol); the tools the turn was
    # offered, and its calls as the model wrote them (id, name, arguments, and `source`:
    # `native`, or `text` for a call recovered from the reply's text).
    carrier: str = ""
    offered_tools: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, str]] = field(default_factory=list)

    @property
    def shown_text(self) -> str:
        """The turn as a reader is shown it: its text, then each call it made as a call
        (one read from the text is in the text already)."""
        made = [c for c in self.tool_calls if c.get("source") != "text"]
        lines = [f"→ {c.get('name', '')} {c.get('arguments', '')}" for c in made]
        return "\n\n".join(part for part in (self.text, "\n".join(lines)) if part)


@dataclass(kw_only=True)
class ExpertCallStarted(Event):
    kind: ClassVar[str] = "expert_call_started"
    round: int = 0
    index: int = 0  # position among the calls of its turn
    name: str = ""
    instruction: str = ""
    # The exact conversation the expert saw (fresh eyes: persona + instruction only).
    system_prompt: str = ""
    prompt: str = ""
    is_python: bool = False


@dataclass(kw_only=True)
class ExpertCallFinished(Event):
    kind: ClassVar[str] = "expert_call_finished"
    name: str = ""
    text: str = ""  # the expert's own reply
    output: str = ""  # what the meta model is shown (reply plus code output, capped)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    duration_s: float = 0.0
    error: str | None = None
    # The error was the model server's (5xx, timeouts after retries...), not a request
    # it rejected: a system failure of the run (conductor_kernel/run/loop.py).
    server_failed: bool = False
    stop_reason: str = ""  # as on MetaTurnFinished
    truncated: bool = False  # cut at the output-token limit (the meta model is told)


@dataclass(kw_only=True)
class SandboxExec(Event):
    kind: ClassVar[str] = "sandbox_exec"
    code: str = ""
    result: ExecResult = field(default_factory=ExecResult)
    source: str = ""  # "expert" (code the expert wrote) or "instruction" (given by meta)


@dataclass(kw_only=True)
class Observation(Event):
    """Something the model caused and is told about: a nudge, a bad format, an error."""

    kind: ClassVar[str] = "observation"
    reason: str = ""  # no_call_or_answer | empty_instruction | no_code | calls_and_answer ...
    message: str = ""


@dataclass(kw_only=True)
class FinalAnswer(Event):
    kind: ClassVar[str] = "final_answer"
    round: int = 0
    answer: str = ""


@dataclass(kw_only=True)
class LimitHit(Event):
    kind: ClassVar[str] = "limit_hit"
    limit: str = ""  # rounds | tokens | cost | wall_time
    value: float = 0
    maximum: float = 0


@dataclass(kw_only=True)
class ErrorEvent(Event):
    """A system failure; the run stops and the message says what to do."""

    kind: ClassVar[str] = "error"
    message: str = ""
    where: str = ""


@dataclass(kw_only=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    status: str = ""  # answered | no_answer | declined | limit | error | interrupted
    final_answer: str | None = None
    rounds: int = 0
    usage: Usage = field(default_factory=Usage)
    meta_usage: Usage = field(default_factory=Usage)
    expert_calls: int = 0
    sandbox_runs: int = 0
    duration_s: float = 0.0
    score: dict[str, Any] | None = None


@dataclass(kw_only=True)
class NotesWritten(Event):
    """Notes distilled from a finished run into the notebook."""

    kind: ClassVar[str] = "notes_written"
    notebook: str = ""
    task_type: str | None = None
    verification: str = ""
    note_ids: list[str] = field(default_factory=list)
    skipped: int = 0
    merged: int = 0
    outcome: str = ""  # correct | wrong | verified | unverified | unanswered
    reflection: str = ""  # what the reflection call did: ok / skipped / failed, and why
    feedback: dict[str, str] = field(default_factory=dict)  # recalled note id -> effect
    induced: bool = False  # the task type's experience was re-induced after this run
    # The run's tools, note id -> [passes, tests] after this learning's tests of them.
    tools: dict[str, list[int]] = field(default_factory=dict)
    tool_testing: str = ""  # what testing them did: tested / skipped / stopped, and why
    # The model calls learning made (after the run finished, so not in its RunFinished).
    usage: Usage = field(default_factory=Usage)
    # What learning's model calls were allowed for this run ({"calls", "tokens"}: by
    # default the run's own); empty: unbounded, or no model to call.
    budget: dict[str, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class RunScored(Event):
    """Whether a finished run's answer is right, by the task's scorer: recorded after
    `RunFinished` when the run ends (or when it is imported), so every reader of the run
    (listings, audit, diff, TUI, HTML) shows the same verdict. `correct` is None when
    the run could not be scored (no target, no answer to judge, a system failure)."""

    kind: ClassVar[str] = "run_scored"
    correct: bool | None = None
    scorer: str = ""  # the scorer's name (conductor/scoring: game24, exact, ...)
    detail: str = ""  # why, in a few words
    paper_correct: bool | None = None  # the published rule on the same answer, if applied
    scored_at: str = ""  # run end | import | batch


def event_kinds() -> dict[str, type[Event]]:
    return dict(_REGISTRY)
