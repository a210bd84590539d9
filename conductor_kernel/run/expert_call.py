"""Calling one expert with fresh eyes, and Expert Python with the sandbox.

An expert sees a persona line naming it and the instruction: nothing of the question,
the meta history or other experts. The exact prompt it saw goes into the event, since
the original harness kept only the meta model's view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from conductor_kernel import prompts
from conductor_kernel.errors import ModelUnreachable
from conductor_kernel.events import (
    ExpertCallFinished,
    ExpertCallStarted,
    Observation,
    TextDelta,
)
from conductor_kernel.interfaces import (
    Completion,
    ExecResult,
    Message,
    ModelError,
    Usage,
)
from conductor_kernel.limits.streaming import StreamWatch
from conductor_kernel.protocol import ExpertCall, extract_code
from conductor_kernel.run.expert_context import ExpertContext, ExpertOutcome, ExpertReply
from conductor_kernel.run.printed_check import held_to_check, passed_by
from conductor_kernel.run.program_run import (
    describe_run,
    run_program,
    run_reply,
    run_status,
    shown_reply,
)
from conductor_kernel.text.display import visible


def call_expert(
    call: ExpertCall, ctx: ExpertContext, *, parent_id: str, round: int, index: int
) -> ExpertOutcome:
    python = call.is_python and ctx.config.python
    system = (
        prompts.PYTHON_SYSTEM.format(timeout=ctx.config.python_timeout_s)
        if python
        else prompts.EXPERT_SYSTEM.format(name=call.name)
    )
    started = ExpertCallStarted(
        parent_id=parent_id,
        run_id=ctx.run_id,
        round=round,
        index=index,
        name=call.name,
        instruction=call.instruction,
        system_prompt=system,
        prompt=call.instruction,
        is_python=python,
    )
    ctx.emit(started)
    t0 = time.monotonic()

    retries = ctx.config.python_check_retries if python else 0
    given_code = extract_code(call.instruction) if python else None
    prompt, before = call.instruction, ""  # `before`: what the meta model reads of it
    if given_code is not None:
        # The meta model wrote the code itself: run it as given, no model call, unless
        # it fails where the task's check applies; then Expert Python writes it again.
        ran = run_program(ctx, given_code, started.id, source="instruction")
        output = describe_run(ran, ctx.config)
        why_again = _why_again(ran, given_code, call, ctx) if retries else None
        if why_again is None:
            _finish(ctx, started, text="", output=output, usage=Usage(), t0=t0, model="")
            return ExpertOutcome(
                call.name, output, sandbox_runs=1, passed=passed_by(ran, ctx.check)
            )
        prompt, before = why_again
        _tell(ctx, prompt, started.id)
        retries -= 1
    try:
        completion = _ask(ctx, system, [Message("user", prompt)], started.id)
    except ModelUnreachable:
        raise  # the server is down: a system failure, not this expert's
    except ModelError as exc:
        return _failed(ctx, started, call, exc, t0)
    reply = ExpertReply(completion, completion.text, completion.usage, runs=int(bool(before)))
    reply.output = shown_reply(completion, ctx.config)
    if not completion.stopped and python:  # stopped: cancelled or at a limit, run nothing
        run_reply(ctx, call, reply, started.id)
    if before:
        reply.output = f"{before}\n\n{reply.output}"
    _again_while_it_fails(ctx, call, system, reply, started.id, retries)
    last = reply.completion
    _finish(
        ctx,
        started,
        text=reply.text,
        output=reply.output,
        usage=reply.usage,
        t0=t0,
        model=last.model,
        stop_reason=last.stop_reason,
        truncated=last.truncated,
    )
    return ExpertOutcome(
        call.name,
        reply.output,
        reply.usage,
        sandbox_runs=reply.runs,
        passed=passed_by(reply.result, ctx.check),
    )


def _tell(
    ctx: ExpertContext, told: str, parent_id: str, reason: str = "program_fails_check"
) -> None:
    """Record what was said of a program sent back (to its expert, or of its return)."""
    ctx.emit(Observation(parent_id=parent_id, run_id=ctx.run_id, reason=reason, message=told))


def _again_while_it_fails(
    ctx: ExpertContext,
    call: ExpertCall,
    system: str,
    reply: ExpertReply,
    parent_id: str,
    retries: int,
) -> None:
    """While the latest program fails where the task's own check applies, ask a fresh
    Expert Python for a corrected one, up to `retries` times; the meta model is shown
    the last attempt. Fresh, not the same conversation continued, and sampled: told in
    its own conversation, Qwen2.5-Coder-1.5B sent the same program back word for word;
    as a new request at temperature 0 it fixed a TypeError in a probe but mostly still
    sent the same program back (docs/methods.md)."""
    for _ in range(retries):
        why_again = _why_again(reply.result, reply.code, call, ctx)
        if why_again is None:
            return
        prompt, earlier = why_again
        _tell(ctx, prompt, parent_id)
        try:
            completion = _ask(
                ctx,
                system,
                [Message("user", prompt)],
                parent_id,
                temperature=ctx.config.python_retry_temperature,
            )
        except ModelUnreachable:
            raise  # the server is down: a system failure, not this expert's
        except ModelError:
            return  # the program before stands
        reply.completion = completion
        reply.text = f"{reply.text}\n\n{completion.text}"
        reply.usage = reply.usage + completion.usage
        if _same_program(extract_code(completion.text), reply.code):
            # Nothing new to run: say so rather than run it again (a small model at
            # temperature 0 sent the same program back even to a fresh request).
            _tell(ctx, prompts.PROGRAM_SAME_AGAIN, parent_id, reason="same_program")
            reply.output = f"{reply.output}\n\n{prompts.PROGRAM_SAME_AGAIN}"
            return
        reply.output = shown_reply(completion, ctx.config)
        reply.result = None
        if not completion.stopped:
            run_reply(ctx, call, reply, parent_id)
        reply.output = f"{earlier}\n\n{reply.output}"


def _same_program(code: str | None, earlier: str) -> bool:
    """Whether a reply's program is the one before, layout aside."""
    return code is not None and code.split() == earlier.split()


def _why_again(
    result: ExecResult | None, code: str, call: ExpertCall, ctx: ExpertContext
) -> tuple[str, str] | None:
    """Why a program goes back to Expert Python, where the task's own check applies: the
    request for a corrected one, and the line the meta model reads before the next
    attempt. None when a printed line passes, when the check decides no line, or when
    the sandbox, not the program, failed."""
    if result is None or ctx.check is None:
        return None
    if result.cancelled or result.infra_error or result.sandbox_error:
        return None
    held = held_to_check(result.stdout, ctx.check)
    if held is not None and held[1].accepted:
        return None
    if not result.ok:  # it raised, timed out, was killed: nothing it printed is an answer
        status = run_status(result, ctx.config)
        stderr = visible(result.stderr.strip()[-PROGRAM_ERROR_TAIL:]) or "(nothing)"
        fault = prompts.PROGRAM_FAILED.format(status=status, stderr=stderr)
        before = prompts.PROGRAM_FAILED_BEFORE.format(status=status)
    elif held is not None:
        line, why = held[0][:300], held[1].why
        fault = prompts.PROGRAM_FAILS_CHECK.format(line=line, why=why)
        before = prompts.PROGRAM_TRIED_AGAIN.format(line=line, why=why)
    else:
        return None
    again = prompts.PROGRAM_AGAIN.format(instruction=call.instruction, code=code, fault=fault)
    return again, before


# Characters of a failed program's error output the expert is shown again (the end of a
# traceback says what broke).
PROGRAM_ERROR_TAIL = 1500


def _ask(
    ctx: ExpertContext,
    system: str,
    history: list[Message],
    parent_id: str,
    *,
    temperature: float | None = None,
) -> Completion:
    """One reply of the expert to its conversation, streamed and held to the run's
    limits; at the model's own temperature unless one is given."""

    def on_text(chunk: str) -> None:
        ctx.emit(TextDelta(parent_id=parent_id, run_id=ctx.run_id, text=chunk))

    watch: Callable[[str], None] = on_text
    if ctx.guard is not None:
        guarded = StreamWatch(
            ctx.guard,
            ctx.emit,
            run_id=ctx.run_id,
            parent_id=parent_id,
            model=ctx.model,
            prompt=lambda: system + "\n" + "\n".join(m.content for m in history),
        )
        guarded.check_before()
        watch = guarded
    ask = partial(
        ctx.model.complete,
        history,
        system=system,
        on_text=watch,
        role="expert",
        max_tokens=ctx.config.expert_max_tokens,
    )
    # Passed on only when given: a model that takes no temperature need not know the word.
    return ask() if temperature is None else ask(temperature=temperature)


def _failed(
    ctx: ExpertContext,
    started: ExpertCallStarted,
    call: ExpertCall,
    exc: ModelError,
    t0: float,
) -> ExpertOutcome:
    """One failing expert is an observation for the meta model; the run goes on and the
    usage of its siblings is kept."""
    output = prompts.EXPERT_FAILED.format(error=exc)
    ctx.emit(
        Observation(parent_id=started.id, run_id=ctx.run_id, reason="expert_failed", message=output)
    )
    _finish(
        ctx,
        started,
        text="",
        output=output,
        usage=Usage(),
        t0=t0,
        model="",
        error=str(exc),
        server_failed=exc.server_failed,
    )
    return ExpertOutcome(call.name, output, Usage())


def _finish(
    ctx: ExpertContext,
    started: ExpertCallStarted,
    *,
    text: str,
    output: str,
    usage: Usage,
    t0: float,
    model: str,
    stop_reason: str = "",
    truncated: bool = False,
    error: str | None = None,
    server_failed: bool = False,
) -> None:
    ctx.emit(
        ExpertCallFinished(
            parent_id=started.id,
            run_id=ctx.run_id,
            name=started.name,
            text=text,
            output=output,
            usage=usage,
            model=model,
            duration_s=time.monotonic() - t0,
            stop_reason=stop_reason,
            truncated=truncated,
            error=error,
            server_failed=server_failed,
        )
    )
