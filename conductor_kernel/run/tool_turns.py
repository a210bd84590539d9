"""A meta turn that made tool calls: read them, act by the one policy, answer each call.

The calls are read (conductor_kernel/carrier/tools.py) into the `ParsedTurn` the text
parser would give, and the meta method's policy (`decide`) acts on it: the same events
as the text protocol. What goes back differs in form: each of the model's own calls
gets its result under its id (an expert's output, why a call was not run, what became
of an answer not taken), and the text beside them is the feedback paragraph. Calls
recovered from the reply's text have no ids: they are answered in the text, as the text
protocol's outputs are. A call that could not be read is recorded (`bad_tool_call`) and
the model is told why; a turn none of whose calls could be read is a nudge.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from conductor_kernel import prompts
from conductor_kernel.carrier.tools import ReadCall, ToolTurn, read_tool_calls
from conductor_kernel.events import Event
from conductor_kernel.interfaces import ToolResult
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.protocol import ParsedTurn
from conductor_kernel.run.context import NextMessage, RunContext, Turn

if TYPE_CHECKING:
    from conductor_kernel.run.meta import Decision

Decide = Callable[..., Generator[Event, None, "Decision | None"]]
RECOVERED = (
    "The turn wrote {count} tool call(s) as text in its reply instead of making them; "
    "they were read from the text."
)


def answer_withheld(
    config: RunConfig, round_no: int, *, handed: bool = False, consulted: bool = False
) -> bool:
    """Whether this round offers no final answer (`consult_first`): until an expert has
    been consulted (`consulted`), and never in the last round or the one told to answer
    now, nor when the model was handed a checked result before round 1 (`handed`:
    run/experience.py), which is the consultation already made. Not round 1 alone: told
    so, Qwen2.5-Coder-1.5B gave its answer again in round 2 without consulting anyone."""
    if not config.consult_first or consulted or handed or round_no >= config.max_rounds:
        return False
    notice_at = config.last_round_notice_at or config.max_rounds - 1
    return not (config.last_round_notice and round_no >= notice_at)


def answer_only(config: RunConfig, round_no: int, *, checked: bool) -> bool:
    """Whether this round of an enforcing carrier (tools, grammar) offers only the answer:
    the last round, and every round after a printed line passed the task's own check
    (`checked`, with `answer_once_checked`). Qwen2.5-Coder-1.5B, told that a line passed,
    went on consulting: once it wrote the right answer beside a call, and the call ran
    while the answer was set aside."""
    return round_no >= config.max_rounds or (config.answer_once_checked and checked)


def act_on_calls(
    run: RunContext, turn: Turn, decide: Decide
) -> Generator[Event, None, str | NextMessage | None]:
    """Act on a turn's tool calls; what to send back, or None when the run is answered."""
    cited = run.handed.answer if run.handed is not None else run.state.cited
    read = read_tool_calls(turn.calls, turn.offered or (), cited=cited)
    if turn.recovered:
        yield run.note(turn, "calls_from_text", RECOVERED.format(count=len(turn.calls)))
    problems = [r for r in read.reads if r.problem is not None]
    nothing_read = _nothing(read.parsed)
    if not nothing_read:
        for r in problems:
            yield run.note(turn, "bad_tool_call", f"{r.call.name}: {r.problem}")
    decision = yield from decide(run, turn, read.parsed, tools=True)
    if decision is None:
        return None
    told = [prompts.TOOL_NOT_RUN.format(problem=f"{r.call.name}: {r.problem}") for r in problems]
    if nothing_read and problems:
        told.insert(0, prompts.TOOL_CALLS_FAILED)
    if turn.recovered:  # no ids to answer under: all of it in the text
        return "\n\n".join([*told, decision.message])
    lead = prompts.TOOL_CALLS_FAILED if nothing_read and problems else ""
    return NextMessage(lead + decision.beside, _results(read, decision))


def _nothing(parsed: ParsedTurn) -> bool:
    return not parsed.calls and not parsed.has_answer


def _results(read: ToolTurn, decision: Decision) -> tuple[ToolResult, ...]:
    """One result for each of the turn's calls, in order."""
    return tuple(_result(r, decision) for r in read.reads)


def _result(r: ReadCall, decision: Decision) -> ToolResult:
    def result(content: str, *, error: bool = False) -> ToolResult:
        return ToolResult(r.call.id, r.call.name, content, is_error=error)

    if r.problem is not None:
        return result(prompts.TOOL_NOT_RUN.format(problem=r.problem), error=True)
    if r.after_answer:
        return result(prompts.TOOL_NOT_RUN.format(problem=prompts.AFTER_ANSWER), error=True)
    if r.answer is not None:
        return result(decision.answer or prompts.ANSWER_NOT_YET)
    if r.expert is not None and id(r.expert) in decision.results:
        return result(decision.results[id(r.expert)])
    return result(prompts.TOOL_NOT_RUN.format(problem="the turn's answer was considered first"))
