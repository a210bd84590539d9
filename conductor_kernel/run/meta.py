"""Meta-prompting as a method: the model conducts fresh-eyes experts, then answers.

Each turn of the one conversation either calls experts (run in worker threads,
concurrently when allowed; Expert Python's code in the sandbox), gives the final answer,
or neither (the model is nudged). The experts' outputs go back quoted in the next user
message with a feedback paragraph. With `python=False` Expert Python is not offered and
no code runs ("meta-prompting without Python" in the paper's Table 1).

The protocol has three carriers (conductor_kernel/carrier): the text of the paper, the
same text held to its forms by a grammar, or tool calls, whose turns are read into the
same `ParsedTurn` and acted on by the same policy (`decide`), so all give the same
events; only what is said back differs in form (conductor_kernel/run/tool_turns.py).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial

from conductor_kernel import prompts
from conductor_kernel.carrier import compact_prompt
from conductor_kernel.carrier.choice import CARRIERS
from conductor_kernel.carrier.grammar import grammar_for_round
from conductor_kernel.carrier.tools import offered_tools
from conductor_kernel.events import Event, SandboxExec
from conductor_kernel.interfaces import ToolSpec
from conductor_kernel.protocol import ExpertCall, ParsedTurn, parse_turn
from conductor_kernel.run.context import NextMessage, RunContext, Turn
from conductor_kernel.run.conversation import META_REPLIES, OFF_PROTOCOL_TURNS, Replies, converse
from conductor_kernel.run.experience import checked_exchange, shown_answer
from conductor_kernel.run.expert_call import call_expert
from conductor_kernel.run.expert_context import ExpertContext, ExpertOutcome
from conductor_kernel.run.printed_check import passing_line
from conductor_kernel.run.threads import run_concurrently
from conductor_kernel.run.tool_turns import act_on_calls, answer_only, answer_withheld
from conductor_kernel.turn_diagnosis import nudge_with_reasons

META = "meta"
META_NO_PYTHON = "meta-no-python"
META_TOOL_REPLIES = Replies(nudge=prompts.NUDGE_TOOLS, truncated=prompts.TRUNCATED)
READ_FROM_TEXT = (
    "The turn wrote its calls or answer in the text protocol, not as tool calls; they "
    "were read from the text."
)


class MetaPrompting:
    """The conductor loop of the meta-prompting paper, with or without Expert Python."""

    system_prompt = prompts.META_SYSTEM
    carriers = CARRIERS

    def __init__(self, *, python: bool = True) -> None:
        self.python = python

    @property
    def name(self) -> str:
        return META if self.python else META_NO_PYTHON

    def system_prompt_for(self, carrier: str) -> str:
        return prompts.META_TOOLS_SYSTEM if carrier == "tools" else prompts.META_SYSTEM

    def solve(self, run: RunContext) -> Generator[Event, None, str]:
        cfg = run.config
        tools = run.carrier == "tools"
        # A program checked on this question, handed over as a call and its result
        # (tools carrier, Python on); the text carriers have its line in the recall.
        handed = run.handed = checked_exchange(run.checked) if tools and self.python else None

        def withheld(round_no: int) -> bool:
            consulted = run.state.expert_calls > 0
            return answer_withheld(cfg, round_no, handed=handed is not None, consulted=consulted)

        if run.carrier in ("tools", "grammar"):  # a compact prompt that small models follow
            first = compact_prompt.compact_first_message(
                run.question,
                tools=tools,
                python=self.python,
                max_rounds=cfg.max_rounds,
                recall=run.recall,
                consult_first=withheld(1),
                handed=handed is not None,
            )
        else:
            first = prompts.meta_first_message(
                run.question, python=self.python, max_rounds=cfg.max_rounds, recall=run.recall
            )

        def act(turn: Turn) -> Generator[Event, None, str | NextMessage | None]:
            return self._act(run, turn)

        def tools_for(round_no: int) -> tuple[ToolSpec, ...]:
            cite = handed is not None or run.state.cited is not None
            consult = not answer_only(cfg, round_no, checked=run.state.cited is not None)
            return offered_tools(
                python=self.python, answer=not withheld(round_no), cite=cite, consult=consult
            )

        def grammar_for(round_no: int) -> str:
            only = answer_only(cfg, round_no, checked=run.state.cited is not None)
            return grammar_for_round(answer=not withheld(round_no), calls=not only)

        return (
            yield from converse(
                run,
                first,
                act=act,
                replies=META_TOOL_REPLIES if tools else META_REPLIES,
                off_protocol_stop=OFF_PROTOCOL_TURNS,
                tools_for=tools_for if tools else None,
                grammar_for=grammar_for if run.carrier == "grammar" else None,
                handed=handed,
            )
        )

    def _act(self, run: RunContext, turn: Turn) -> Generator[Event, None, str | NextMessage | None]:
        if turn.calls:  # tool calls: made, or written as JSON in the text
            return (yield from act_on_calls(run, turn, decide))
        parsed = parse_turn(turn.text)
        tools = turn.offered is not None
        if tools and (parsed.calls or parsed.has_answer):
            yield run.note(turn, "read_from_text", READ_FROM_TEXT)
        decision = yield from decide(run, turn, parsed, tools=tools)
        return None if decision is None else decision.message


@dataclass
class Decision:
    """What a turn came to, when it did not end the run: the next message as the text
    carrier sends it, what it is as tool results (`results`: each expert call's output by
    the call's identity; `answer`: what a final answer not taken came to) and the text
    that goes beside tool results (`beside`)."""

    message: str
    beside: str
    results: dict[int, str] = field(default_factory=dict)
    answer: str | None = None


def decide(
    run: RunContext, turn: Turn, parsed: ParsedTurn, *, tools: bool
) -> Generator[Event, None, Decision | None]:
    """The one policy for a read turn, whichever carrier it came by: answer, check first,
    consult first, run the calls, or nudge. None: the run is answered."""
    enforced = run.carrier in ("tools", "grammar")
    only = enforced and answer_only(run.config, turn.round, checked=run.state.cited is not None)
    if only and parsed.calls:  # written as text past what the round offered: not run
        yield run.note(turn, "calls_not_offered", prompts.CALLS_NOT_OFFERED)
        parsed = ParsedTurn(final_answer=parsed.final_answer, answer_closed=parsed.answer_closed)
    if parsed.has_answer and (not parsed.calls or run.config.calls_and_answer == "answer"):
        handed = run.handed is not None
        consulted = run.state.expert_calls > 0
        if enforced and answer_withheld(run.config, turn.round, handed=handed, consulted=consulted):
            if run.config.ready_call:
                return (yield from _ready_call(run, turn, tools=tools))
            ask = compact_prompt.consult_first(run.question, tools=tools, python=run.config.python)
            yield run.note(turn, "answer_before_consult", ask)
            return Decision(ask, ask, answer=prompts.ANSWER_NOT_YET)
        if _check_first(run, turn):
            run.state.check_asked = True
            template = prompts.CHECK_FIRST_TOOLS if tools else prompts.CHECK_FIRST
            ask = template.format(
                question=run.question.strip(), answer=(parsed.final_answer or "").strip()
            )
            yield run.note(turn, "answer_before_check", ask)
            return Decision(ask, ask, answer=prompts.ANSWER_NOT_YET)
        answer = parsed.final_answer or ""
        why = run.answer_rejection(answer)
        if why is not None and answer.strip() not in run.state.rejected_answers:
            run.state.rejected_answers.add(answer.strip())
            if turn.round < run.config.max_rounds:
                told = prompts.ANSWER_FAILS_CHECK.format(answer=answer.strip()[:300], why=why)
                printed = printed_that_passes(run)
                if run.handed is not None:
                    told += prompts.EXPERIENCE_REMINDER.format(
                        answer=shown_answer(run.handed.answer)
                    )
                elif printed is not None:
                    run.state.cited = printed
                    template = prompts.PRINTED_PASSES_TOOLS if tools else prompts.PRINTED_PASSES
                    told += template.format(answer=shown_answer(printed))
                else:
                    told += prompts.ANSWER_SEARCH_AGAIN
                yield run.note(turn, "answer_fails_check", told)
                return Decision(told, told, answer=prompts.ANSWER_NOT_YET)
            # No round is left to tell the model in: taken, and the record says so.
            yield run.note(turn, "answer_fails_check", prompts.ANSWER_FAILS_LAST.format(why=why))
        yield run.answer(turn, answer)
        return None
    if parsed.calls:
        if parsed.has_answer:
            yield run.note(
                turn,
                "calls_and_answer",
                "The turn called experts and answered; the calls ran and the answer was set aside.",
            )
        empty = prompts.EMPTY_INSTRUCTION_TOOLS if tools else prompts.EMPTY_INSTRUCTION
        body, results = yield from _dispatch(run, parsed, turn, empty, tools=tools)
        aside = prompts.ANSWER_SET_ASIDE if parsed.has_answer else None
        feedback = _feedback(run, tools=tools)
        return Decision(body + "\n\n" + feedback, feedback, results, aside)
    if only:
        nudge = _answer_now(run, tools=tools)
    else:
        nudge = prompts.NUDGE_TOOLS if tools else nudge_with_reasons(prompts.NUDGE, turn.text)
    yield run.note(turn, "no_call_or_answer", nudge)
    return Decision(nudge, nudge)


def _feedback(run: RunContext, *, tools: bool) -> str:
    """What follows the experts' outputs: whether the next round offers only the answer."""
    enforced = run.carrier in ("tools", "grammar")
    if enforced and run.config.answer_once_checked and run.state.cited is not None:
        return prompts.ANSWER_NEXT_TOOLS if tools else prompts.ANSWER_NEXT
    return prompts.FEEDBACK


def _ready_call(run: RunContext, turn: Turn, *, tools: bool) -> Generator[Event, None, Decision]:
    """Consult first, enforced: the model answered where the answer is withheld, so the
    call its first message showed is made for it, and it reads the reply next round.
    llama-server does not enforce `tool_choice`; told to consult, with that call ready
    to send, Qwen2.5-Coder-1.5B answered again in every later round of 5 of 9 word
    sorting runs."""
    name, instruction = compact_prompt.example_call(run.question, python=run.config.python)
    yield run.note(turn, "ready_call_made", prompts.READY_CALL_NOTE.format(name=name))
    ready = ParsedTurn(calls=[ExpertCall(name, instruction)])
    empty = prompts.EMPTY_INSTRUCTION_TOOLS if tools else prompts.EMPTY_INSTRUCTION
    body, _results = yield from _dispatch(run, ready, turn, empty, tools=tools)
    said = prompts.READY_CALL_MADE.format(name=name) + "\n\n" + body
    feedback = _feedback(run, tools=tools)
    return Decision(
        said + "\n\n" + feedback, said + "\n\n" + feedback, answer=prompts.ANSWER_NOT_YET
    )


def _answer_now(run: RunContext, *, tools: bool) -> str:
    """What a round that offers only the answer is told when its turn gave none."""
    cited = run.state.cited
    if cited is None:
        return prompts.ANSWER_NOW_TOOLS if tools else prompts.ANSWER_NOW
    template = prompts.ANSWER_NOW_CHECKED_TOOLS if tools else prompts.ANSWER_NOW_CHECKED
    return template.format(line=shown_answer(cited))


def _check_first(run: RunContext, turn: Turn) -> bool:
    """Whether an answer is sent back for a check (`check_before_answer`): only once a
    run, only when no expert was consulted, and never in the last round."""
    state = run.state
    return (
        run.config.check_before_answer
        and not state.check_asked
        and state.expert_calls == 0
        and turn.round < run.config.max_rounds
    )


def _dispatch(
    run: RunContext, parsed: ParsedTurn, turn: Turn, empty_message: str, *, tools: bool
) -> Generator[Event, None, tuple[str, dict[int, str]]]:
    """Run the turn's expert calls (concurrently when allowed): their outputs quoted, and
    what each call came to, by the call's identity."""
    empties = [c for c in parsed.calls if c.is_empty]
    for call in empties:
        yield run.note(turn, "empty_instruction", empty_message.format(name=call.name))
    calls = parsed.dispatchable
    state = run.state

    def work(emit: Callable[[Event], None]) -> list[ExpertOutcome]:
        # Metered: each expert call's usage goes on the ledger the moment it returns.
        expert_model = state.ledger.metered(run.expert_model, "expert")

        def seen(event: Event) -> None:
            if isinstance(event, SandboxExec) and event.result.ok:
                state.printed.append(event.result.stdout)  # for the answer's check
            emit(event)

        ctx = ExpertContext(
            expert_model,
            run.sandbox,
            run.config,
            seen,
            run.run_id,
            guard=run.guard,
            check=run.answer_verdict,
        )
        jobs = [
            partial(call_expert, c, ctx, parent_id=turn.id, round=turn.round, index=i)
            for i, c in enumerate(calls)
        ]
        if len(jobs) > 1 and run.config.parallel_experts:
            return run_concurrently(jobs, limit=8)
        return [j() for j in jobs]

    outcomes: list[ExpertOutcome] = []
    if calls:
        outcomes = yield from run.in_worker(work)
    blocks: list[str] = []
    results: dict[int, str] = {}
    for call, outcome in zip(calls, outcomes, strict=True):
        state.expert_calls += 1
        state.sandbox_runs += outcome.sandbox_runs
        output = outcome.output
        if outcome.passed is not None:
            # Said where the model reads the output, and offered as an answer to cite: a
            # weak model passes on its own guess beside a program that printed the answer.
            run.state.cited = outcome.passed
            said = prompts.PROGRAM_PASSES_CHECK_TOOLS if tools else prompts.PROGRAM_PASSES_CHECK
            output += "\n\n" + said.format(line=shown_answer(outcome.passed))
        blocks.append(prompts.EXPERT_OUTPUT.format(name=outcome.name, output=output))
        results[id(call)] = output
    empty: list[str] = []
    for call in empties:
        empty.append(empty_message.format(name=call.name))
        results[id(call)] = empty[-1]
    return "\n\n".join(blocks + empty), results


def printed_that_passes(run: RunContext) -> str | None:
    """A line a program of this run printed that the task's own check accepts (the
    latest first), for a model whose answer the check rejected: a weak model passes on
    its own guess beside a program that printed the right one. None when no line
    passes, or when nothing can check the question."""
    for stdout in reversed(run.state.printed):
        line = passing_line(stdout, run.answer_verdict)
        if line is not None:
            return line
    return None
